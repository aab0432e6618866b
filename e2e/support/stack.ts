// The stack the end-to-end tests drive, run with tsx as its own process: a fresh PostgreSQL database
// (cloned from the migrated template), the API (`tsx apps/api/src/main.ts`) and the console (`next start`,
// built first when apps/web has no build or sources newer than it). Prints `READY {json}` once both answer;
// on SIGTERM/SIGINT it stops both and drops the database.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createTestDatabase, prepareTemplate } from "@cua/db/testing";

const root = path.resolve(import.meta.dirname, "../..");
const bin = (n: string) => path.join(root, "node_modules/.bin", n);
const webDir = path.join(root, "apps/web");
const apiPort = Number(process.env.E2E_API_PORT);
const webPort = Number(process.env.E2E_WEB_PORT);
if (!apiPort || !webPort) throw new Error("E2E_API_PORT and E2E_WEB_PORT must be set");

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "node_modules" || e.name === ".next" || e.name.startsWith(".")) continue;
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

function ensureWebBuild() {
  const buildId = path.join(webDir, ".next/BUILD_ID");
  const builtAt = fs.existsSync(buildId) ? fs.statSync(buildId).mtimeMs : 0;
  const sources = Math.max(newestMtime(webDir), newestMtime(path.join(root, "packages/ui/src")));
  if (builtAt > sources) return;
  process.stderr.write("[e2e] building the console (apps/web)...\n");
  const r = spawnSync(bin("next"), ["build"], {
    cwd: webDir,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
  });
  if (r.status !== 0) throw new Error("next build failed");
}

async function waitFor(url: string, child: ChildProcess, name: string, log: () => string) {
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}):\n${log()}`);
    try {
      const r = await fetch(url);
      if (r.status < 500) return;
    } catch {}
    if (Date.now() - started > 120_000) throw new Error(`${name} did not answer at ${url}:\n${log()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const children: ChildProcess[] = [];
function start(name: string, cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }) {
  let out = "";
  const c = spawn(cmd, args, { ...opts, stdio: ["ignore", "pipe", "pipe"], detached: false });
  c.stdout!.on("data", (d) => {
    out += d;
    if (process.env.E2E_VERBOSE) process.stderr.write(`[${name}] ${d}`);
  });
  c.stderr!.on("data", (d) => {
    out += d;
    process.stderr.write(`[${name}] ${d}`);
  });
  children.push(c);
  return { child: c, log: () => out.slice(-4000) };
}

await prepareTemplate();
const db = await createTestDatabase();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cua-e2e-"));
// machine homes live under DATA_DIR/machines and belong to per-machine users: they must be able to traverse it
fs.chmodSync(dataDir, 0o711);
let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : null)));
  await db.drop().catch(() => {});
  fs.rmSync(dataDir, { recursive: true, force: true });
  process.exit(code);
};
process.on("SIGTERM", () => void stop(0));
process.on("SIGINT", () => void stop(0));

try {
  ensureWebBuild();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const webUrl = `http://127.0.0.1:${webPort}`;
  const api = start("api", bin("tsx"), [path.join(root, "apps/api/src/main.ts")], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      PORT: String(apiPort),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      SECRETS_KEY: "5e".repeat(32),
      DATA_DIR: dataDir,
    },
  });
  const web = start("web", bin("next"), ["start", "-p", String(webPort), "-H", "127.0.0.1"], {
    cwd: webDir,
    env: { ...process.env, API_URL: apiUrl, NEXT_TELEMETRY_DISABLED: "1" },
  });
  await waitFor(`${apiUrl}/v1/health`, api.child, "api", api.log);
  await waitFor(`${webUrl}/sign-in`, web.child, "web", web.log);
  process.stdout.write(`READY ${JSON.stringify({ api: apiUrl, web: webUrl, database: db.name })}\n`);
  for (const c of children) {
    c.once("exit", (code) => {
      if (stopping) return;
      process.stderr.write(`[e2e] a server exited (${code})\n`);
      void stop(1);
    });
  }
} catch (e) {
  process.stderr.write(`[e2e] ${e instanceof Error ? e.message : String(e)}\n`);
  await stop(1);
}
