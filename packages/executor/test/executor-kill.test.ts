// Crash safety: a child process running the executor is killed with SIGKILL (kill -9) twice in
// the middle of a run: once while a step body is running (its lease is held, its result not yet
// committed), once while the run sleeps. Each restart resumes the run from the database, and the
// run completes with every step's side effect applied exactly once (counter table below).
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, expect, test } from "vitest";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../..");
const fixture = path.join(here, "fixtures/kill-child.ts");

let tdb: TestDatabase;
const children: ChildProcess[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.db.$executeRawUnsafe(
    `CREATE TABLE kill_side_effects (run_id text, step text, count int NOT NULL, PRIMARY KEY (run_id, step))`,
  );
  await tdb.db.$executeRawUnsafe(
    `CREATE TABLE kill_markers (run_id text, name text, count int NOT NULL, PRIMARY KEY (run_id, name))`,
  );
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await tdb?.drop();
});

interface Child {
  proc: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startChild(env: Record<string, string>): Child {
  const proc = spawn(process.execPath, ["--import", "tsx", fixture], {
    cwd: repoRoot,
    env: { ...process.env, DATABASE_URL: tdb.url, LEASE_MS: "1500", SLOW_MS: "4000", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(proc);
  let out = "";
  proc.stdout?.on("data", (d) => {
    out += String(d);
  });
  proc.stderr?.on("data", (d) => {
    out += String(d);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return { proc, output: () => out, exited };
}

async function kill9(c: Child): Promise<void> {
  c.proc.kill("SIGKILL");
  const { signal } = await c.exited;
  expect(signal).toBe("SIGKILL");
}

async function until<T>(
  what: string,
  fn: () => Promise<T>,
  ok: (v: T) => boolean,
  child: Child,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; child output:\n${child.output()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const effects = async (runId: string): Promise<Record<string, number>> => {
  const rows = await tdb.db.$queryRaw<
    { step: string; count: number }[]
  >`SELECT step, count FROM kill_side_effects WHERE run_id = ${runId}`;
  return Object.fromEntries(rows.map((r) => [r.step, Number(r.count)]));
};
const marker = async (runId: string, name: string): Promise<number> => {
  const rows = await tdb.db.$queryRaw<
    { count: number }[]
  >`SELECT count FROM kill_markers WHERE run_id = ${runId} AND name = ${name}`;
  return Number(rows[0]?.count ?? 0);
};

test("kill -9 mid-run, twice: the run resumes after each restart and every step runs exactly once", async () => {
  // 1. first process: starts the run, gets killed while step s3's body is running
  const a = startChild({ SEND: "1" });
  const runLine = await until(
    "the run id",
    async () => /run (\S+)/.exec(a.output())?.[1],
    (v) => Boolean(v),
    a,
  );
  const runId = runLine as string;
  await until(
    "s3 to start",
    () => marker(runId, "s3-entered"),
    (n) => n === 1,
    a,
  );
  await kill9(a);
  expect(await effects(runId)).toEqual({ s1: 1, s2: 1 }); // s3 was interrupted before its side effect
  const stepsAfterA = await tdb.db.executorStep.findMany({ where: { runId }, orderBy: { seq: "asc" } });
  expect(stepsAfterA.map((s) => s.name)).toEqual(["s1", "nap1", "s2"]);
  const leased = await tdb.db.executorQueueItem.findMany({ where: { runId } });
  expect(leased.some((i) => i.leaseOwner?.startsWith(`pid-${a.proc.pid}#`))).toBe(true); // the dead process still holds the lease

  // 2. second process: takes over when the lease expires, gets killed while the run sleeps (nap2)
  const b = startChild({});
  await until(
    "the run to sleep in nap2",
    () => tdb.db.executorQueueItem.findMany({ where: { runId, kind: "sleep" } }),
    (items) => items.length === 1,
    b,
  );
  await kill9(b);
  expect(await effects(runId)).toEqual({ s1: 1, s2: 1, s3: 1, p1: 1, p2: 1 });
  expect(await marker(runId, "s3-entered")).toBe(2); // its body was entered again by b, its effect applied once

  // 3. third process: wakes the run from the database and completes it; then a clean stop
  const c = startChild({});
  const done = await until(
    "the run to complete",
    () => tdb.db.executorRun.findUnique({ where: { id: runId } }),
    (r) => r?.status === "completed" || r?.status === "failed",
    c,
  );
  expect(done?.status).toBe("completed");
  expect(done?.output).toEqual(["s1", "s2", "s3", "p1", "p2", "s4"]);
  expect(await effects(runId)).toEqual({ s1: 1, s2: 1, s3: 1, p1: 1, p2: 1, s4: 1 });
  const steps = await tdb.db.executorStep.findMany({ where: { runId }, orderBy: { seq: "asc" } });
  expect(steps.map((s) => s.name).sort()).toEqual(["nap1", "nap2", "p1", "p2", "s1", "s2", "s3", "s4"]);
  expect(await tdb.db.executorQueueItem.count({ where: { runId } })).toBe(0);

  c.proc.kill("SIGTERM");
  const exit = await c.exited;
  expect(exit.code).toBe(0);
  expect(c.output()).toContain("stopped");
}, 90_000);
