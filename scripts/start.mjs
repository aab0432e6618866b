// `npm start`: the API and the console together on the embedded defaults (no external server needed).
// Builds the console once when it has no build yet. Env: PORT (API, 8080), WEB_PORT (console, 3000).
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

start("api", bin("tsx"), [path.join(root, "apps/api/src/main.ts")], { cwd: root, env: { ...env, PORT: apiPort } });
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
