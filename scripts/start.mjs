// `npm start`: the API and the console together on the embedded defaults (no external server needed).
// Builds the console once when it has no build yet; checks (and, as root, installs) the desktop Debian
// packages live machines need. Env: PORT (API, 8080), WEB_PORT (console, 3000), DESKTOP_DEPS
// (install | check | skip).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const bin = (n) => path.join(root, "node_modules/.bin", n);
const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", TURBO_TELEMETRY_DISABLED: "1" };
const apiPort = env.PORT ?? "8080";
const webPort = env.WEB_PORT ?? "3000";

if (process.env.SKIP_WEB !== "1" && !fs.existsSync(path.join(root, "apps/web/.next/BUILD_ID"))) {
  console.log("Building the console once (apps/web)...");
  const r = spawnSync(bin("next"), ["build"], { cwd: path.join(root, "apps/web"), env, stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

// Live machines are real Linux desktops on this host (Xvfb, openbox, Chromium, xdotool...): check their
// Debian packages, and install the missing ones the way `npm run test:all` does (scripts/install-desktop-deps.sh)
// when this runs as root or with password-less sudo. DESKTOP_DEPS=check only reports, =skip does nothing;
// MACHINE_PROVIDER=none needs none of them. GET /v1/machines/health reports what is still missing.
function desktopPackages() {
  const mode = env.DESKTOP_DEPS ?? "install";
  if (process.platform !== "linux" || env.MACHINE_PROVIDER === "none" || mode === "skip") return;
  const script = path.join(root, "scripts/install-desktop-deps.sh");
  const check = spawnSync("bash", [script, "--check"], { encoding: "utf8" });
  const said = `${check.stdout ?? ""}${check.stderr ?? ""}`.trim();
  if (check.status === 0) {
    console.log(`Desktop packages: ${said.replace(/^desktop deps: /, "")} (live machines can start).`);
    return;
  }
  const missing = said.replace(/^desktop deps: missing: /, "");
  const isRoot = process.getuid?.() === 0;
  const sudo = !isRoot && spawnSync("sudo", ["-n", "true"], { stdio: "ignore" }).status === 0;
  if (mode === "install" && (isRoot || sudo)) {
    console.log(`Desktop packages missing: ${missing}. Installing them (scripts/install-desktop-deps.sh)...`);
    const r = spawnSync("bash", [script], { stdio: "inherit", env });
    if (r.status === 0) {
      console.log(`Desktop packages: installed ${missing}.`);
      return;
    }
    console.warn(`Desktop packages: the install failed (exit ${r.status}).`);
  }
  console.warn(
    `Desktop packages missing: ${missing}. Live machines (POST /v1/machines with a live key) will end in status ` +
      `"error" naming them until they are installed: run \`sudo bash scripts/install-desktop-deps.sh\` ` +
      "(Debian/Ubuntu), or set MACHINE_PROVIDER=none. Test keys' mock machines work without them.",
  );
}
desktopPackages();

const children = [];
const start = (name, cmd, args, opts) => {
  const c = spawn(cmd, args, { stdio: "inherit", env, ...opts });
  c.on("exit", (code) => {
    console.log(`${name} exited (${code}); stopping`);
    for (const o of children) if (o !== c) o.kill("SIGTERM");
    process.exitCode = code ?? 1;
  });
  children.push(c);
};

// node --import tsx, not the tsx CLI: the CLI relays SIGTERM and SIGKILLs the API when it has not
// acknowledged the signal within ~60 ms (a busy event loop on a loaded host), which skips the graceful
// shutdown that stops the desktops and flushes usage
start("api", process.execPath, ["--import", "tsx", path.join(root, "apps/api/src/main.ts")], {
  cwd: root,
  env: { ...env, PORT: apiPort },
});
if (process.env.SKIP_WEB !== "1") {
  start("console", bin("next"), ["start", "-p", webPort, "-H", env.HOST ?? "127.0.0.1"], {
    cwd: path.join(root, "apps/web"),
    env: { ...env, API_URL: `http://127.0.0.1:${apiPort}` },
  });
  console.log(`Console on http://${env.HOST ?? "127.0.0.1"}:${webPort}`);
}
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    for (const c of children) c.kill(sig);
  });
}
