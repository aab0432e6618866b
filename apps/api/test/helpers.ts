// Black-box test harness: the real server on a fresh PostgreSQL database, driven with fetch.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAccount, type Tier } from "@cua/core/accounts/create-account";
import { createTestDatabase, TEST_PG_ADMIN_URL, type TestDatabase } from "@cua/db/testing";
import { type App, createApp } from "../src/app.ts";
import { loadEnv } from "../src/env.ts";

export const TEST_SECRETS_KEY = "0f".repeat(32);
export const REPO_ROOT = path.resolve(import.meta.dirname, "../../..");

export interface TestServer {
  url: string;
  app: App;
  db: TestDatabase;
  dataDir: string;
  stop(): Promise<void>;
  account(opts?: { tier?: Tier; credits?: number; unlimited?: boolean }): Promise<{
    account_id: string;
    live_key: string;
    test_key: string;
    console_email: string;
    console_password: string;
  }>;
}

export async function startTestServer(env: Record<string, string> = {}, db?: TestDatabase): Promise<TestServer> {
  // A start that takes minutes fails the file's hook with no clue where it stood: after 30 s this says
  // which phase is pending and what the database sessions are waiting on.
  let phase = "create the test database";
  const t0 = Date.now();
  const watchdog = setInterval(() => void reportSlowStart(phase, t0), 30_000);
  watchdog.unref();
  try {
    const tdb = db ?? (await createTestDatabase());
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cua-test-"));
    phase = "createApp";
    const app = await createApp(
      loadEnv({
        DATABASE_URL: tdb.url,
        PORT: "0",
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
        SECRETS_KEY: TEST_SECRETS_KEY,
        DATA_DIR: dataDir,
        ...env,
      }),
    );
    phase = "listen";
    await app.server.listen({ port: 0, host: "127.0.0.1" });
    return serverHandle(app, tdb, dataDir, !db);
  } finally {
    clearInterval(watchdog);
  }
}

async function reportSlowStart(phase: string, t0: number): Promise<void> {
  let waits = "";
  try {
    const pg = (await import("pg")).default;
    const c = new pg.Client({ connectionString: TEST_PG_ADMIN_URL, connectionTimeoutMillis: 5000 });
    await c.connect();
    try {
      const r = await c.query(
        `SELECT datname, state, wait_event_type, wait_event, now() - query_start AS for, left(query, 120) AS query
           FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state <> 'idle' ORDER BY query_start`,
      );
      waits = r.rows.map((x) => JSON.stringify(x)).join("\n  ");
    } finally {
      await c.end();
    }
  } catch (e) {
    waits = `(pg_stat_activity unavailable: ${(e as Error).message})`;
  }
  console.error(
    `startTestServer: still at "${phase}" after ${Math.round((Date.now() - t0) / 1000)} s; busy database sessions:\n  ${waits || "(none)"}`,
  );
}

function serverHandle(app: App, tdb: TestDatabase, dataDir: string, ownsDb: boolean): TestServer {
  const addr = app.server.server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    db: tdb,
    dataDir,
    account: (o = {}) =>
      createAccount(app.deps, {
        name: "test",
        tier: o.tier ?? "enterprise",
        credits: o.credits ?? 1000,
        ...(o.unlimited ? { unlimited: true } : {}),
      }),
    stop: async () => {
      await app.close();
      if (ownsDb) await tdb.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Res {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function call(
  url: string,
  method: string,
  pathname: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string>; raw?: string | Buffer } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers["X-API-Key"] = opts.key;
  let body: string | Buffer | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["Content-Type"] ??= "application/json";
  }
  const r = await fetch(url + pathname, { method, headers, body: body as BodyInit | undefined });
  const text = await r.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: r.status, headers: r.headers, body: parsed, text };
}

/** Asserts the SPEC.md error envelope and returns the error object. */
export function envelope(r: Res, status: number, code: string) {
  if (r.status !== status || r.body?.error?.code !== code) {
    throw new Error(`expected ${status} ${code}, got ${r.status} ${r.text.slice(0, 500)}`);
  }
  const e = r.body.error;
  const keys = ["code", "message", "type", "request_id", "retryable", "retry_with_same_idempotency_key"];
  for (const k of keys) if (!(k in e)) throw new Error(`envelope lacks ${k}: ${r.text}`);
  if (Object.keys(r.body).length !== 1) throw new Error(`envelope has extra top-level keys: ${r.text}`);
  // a replayed response keeps the original body (and its request_id) under a new request id header
  const replay = r.headers.get("x-service-idempotent-replay") === "true";
  if (!replay && r.headers.get("x-service-request-id") !== e.request_id)
    throw new Error("request id header and body differ");
  if (!r.headers.get("link")?.includes(`/docs/errors#${code}`))
    throw new Error(`Link header missing: ${r.headers.get("link")}`);
  return e;
}

/** Spawns the service as its own process (the way an operator runs it). */
export function spawnService(env: Record<string, string>): {
  child: ChildProcess;
  output: () => string;
  url: () => Promise<string>;
} {
  let out = "";
  // node --import tsx (as scripts/start.mjs runs it), not the tsx CLI: the CLI relays signals and SIGKILLs the
  // API when it has not exited ~60 ms after a SIGTERM, which cuts the graceful shutdown the tests observe.
  const child = spawn(process.execPath, ["--import", "tsx", path.join(REPO_ROOT, "apps/api/src/main.ts")], {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: "0", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const url = () =>
    new Promise<string>((resolve, reject) => {
      const started = Date.now();
      const tick = () => {
        const m = /API listening on (http:\/\/[^\s]+)/.exec(out);
        if (m) return resolve(m[1]!);
        if (child.exitCode !== null) return reject(new Error(`service exited: ${out}`));
        if (Date.now() - started > 60_000) return reject(new Error(`service did not start: ${out}`));
        setTimeout(tick, 100);
      };
      tick();
    });
  return { child, output: () => out, url };
}

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM") {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}
