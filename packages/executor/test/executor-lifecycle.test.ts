// Executor lifecycle on PostgreSQL: clean stop, stop with calls still running, functions removed
// from the app, retention, health.
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { Inngest } from "inngest";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createExecutor } from "../src/index.ts";
import { createPrismaStore } from "../src/store/prisma-store.ts";
import type { ExecutorStore } from "../src/store/store.ts";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const client = new Inngest({ id: "life", logger: quiet });
const hits = new Map<string, number>();
const hit = (k: string) => hits.set(k, (hits.get(k) ?? 0) + 1);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

const slow = client.createFunction({ id: "slow", triggers: [{ event: "life/slow" }] }, async ({ step, event }) => {
  const k = String(event.data.k);
  await step.run("slow-step", async () => {
    hit(`${k}:entered`);
    await delay(Number(event.data.ms));
    hit(`${k}:done`);
  });
  await step.run("next", () => hit(`${k}:next`));
  return "ok";
});

const parked = client.createFunction({ id: "parked", triggers: [{ event: "life/park" }] }, async ({ step }) => {
  await step.sleep("forever", "1h");
});

let tdb: TestDatabase;
let store: ExecutorStore;

beforeAll(async () => {
  tdb = await createTestDatabase();
  store = createPrismaStore(tdb.db);
});

afterAll(async () => {
  await tdb?.drop();
});

const make = (functions = [slow, parked], workerId?: string) =>
  createExecutor({
    client,
    functions,
    store,
    pollIntervalMs: 20,
    backoff: () => 20,
    leaseMs: 30_000,
    logger: { ...quiet },
    ...(workerId ? { workerId } : {}),
  });

test("stop() lets the call in flight commit; nothing runs until start() again, then the run completes", async () => {
  const ex = make();
  await ex.start();
  const { runIds } = await ex.send({ name: "life/slow", data: { k: "a", ms: 300 } });
  const runId = runIds[0] as string;
  while ((hits.get("a:entered") ?? 0) === 0) await delay(10);
  await ex.stop();
  expect(hits.get("a:done")).toBe(1);
  const stopped = await ex.getRun(runId);
  expect(stopped?.steps.map((s) => s.name)).toEqual(["slow-step"]);
  await delay(200);
  expect(hits.get("a:next")).toBeUndefined();
  expect((await ex.health()).ok).toBe(false);
  await ex.start();
  expect((await ex.health()).ok).toBe(true);
  expect((await ex.waitForRun(runId)).status).toBe("completed");
  expect(hits.get("a:entered")).toBe(1);
  expect(hits.get("a:next")).toBe(1);
  await ex.stop();
});

test("stop() past its timeout gives the lease back: another worker resumes at once, and the abandoned result is discarded", async () => {
  const first = make(undefined, "first");
  await first.start();
  const { runIds } = await first.send({ name: "life/slow", data: { k: "b", ms: 1500 } });
  const runId = runIds[0] as string;
  while ((hits.get("b:entered") ?? 0) === 0) await delay(10);
  await first.stop({ timeoutMs: 50 });
  const second = make(undefined, "second");
  const t0 = Date.now();
  await second.start();
  const run = await second.waitForRun(runId, { timeoutMs: 10_000 });
  expect(run.status).toBe("completed");
  expect(Date.now() - t0).toBeLessThan(10_000); // far less than the 30 s lease
  // the body was entered twice (at least once semantics for an uncommitted step) but committed once
  expect(hits.get("b:entered")).toBe(2);
  expect(run.steps.filter((s) => s.name === "slow-step")).toHaveLength(1);
  await delay(1600); // let the abandoned call finish: its result must not be committed
  expect((await second.getRun(runId))?.steps).toHaveLength(2);
  await second.stop();
});

test("runs of a function removed from the app fail at the next start instead of waiting forever", async () => {
  const ex = make();
  await ex.start();
  const { runIds } = await ex.send({ name: "life/park", data: {} });
  const runId = runIds[0] as string;
  while (!(await ex.getRun(runId))?.pending.some((p) => p.kind === "sleep")) await delay(20);
  await ex.stop();
  const without = make([slow]);
  await without.start();
  const run = await without.getRun(runId);
  expect(run?.status).toBe("failed");
  expect(run?.error?.name).toBe("FunctionRemovedError");
  expect(run?.pending).toEqual([]);
  expect((await without.send({ name: "life/park", data: {} })).runIds).toEqual([]);
  await without.stop();
});

test("prune() deletes ended runs, their steps and old events", async () => {
  const ex = make();
  await ex.start();
  const { runIds } = await ex.send({ name: "life/slow", data: { k: "c", ms: 1 } });
  await ex.waitForRun(runIds[0] as string);
  const parkedRun = (await ex.send({ name: "life/park", data: {} })).runIds[0] as string;
  const pruned = await ex.prune(new Date(Date.now() + 1000));
  expect(pruned.runs).toBeGreaterThanOrEqual(1);
  expect(pruned.events).toBeGreaterThanOrEqual(1);
  expect(await ex.getRun(runIds[0] as string)).toBeNull();
  expect(await tdb.db.executorStep.count({ where: { runId: runIds[0] as string } })).toBe(0);
  expect((await ex.getRun(parkedRun))?.status).not.toBe("completed"); // active runs are kept
  await ex.cancel(parkedRun);
  await ex.stop();
});
