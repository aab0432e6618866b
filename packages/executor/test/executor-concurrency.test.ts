// Concurrency on PostgreSQL: three workers on one database, runs mixing flaky parallel steps,
// waitForEvent, invoke and sleep, while the events they wait for are sent over and over from
// several workers at once. Every step body runs once per attempt, every run completes.
import { openDb } from "@cua/db/client";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { Inngest } from "inngest";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createExecutor, type Executor } from "../src/index.ts";
import { createPrismaStore } from "../src/store/prisma-store.ts";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const client = new Inngest({ id: "conc", logger: quiet });
const hits = new Map<string, number>();
const hit = (k: string) => hits.set(k, (hits.get(k) ?? 0) + 1);
const n = (k: string) => hits.get(k) ?? 0;

const child = client.createFunction({ id: "child", triggers: [{ event: "conc/child" }] }, async ({ step, event }) =>
  step.run("c", () => {
    hit(`${event.data.k}:child`);
    return 1;
  }),
);

const flow = client.createFunction(
  { id: "flow", retries: 5, triggers: [{ event: "conc/go" }] },
  async ({ step, event }) => {
    const k = String(event.data.k);
    const parts = await Promise.all(
      [1, 2, 3, 4].map((i) =>
        step.run(`p${i}`, async () => {
          hit(`${k}:p${i}`);
          // every other run fails each parallel step once before it succeeds
          if (Number(k.slice(1)) % 2 === 0 && n(`${k}:p${i}`) === 1) throw new Error("flaky");
          await new Promise((r) => setTimeout(r, Math.random() * 20));
          return i;
        }),
      ),
    );
    const w = await step.waitForEvent("w", { event: "conc/ev", timeout: "30s", match: "data.k" });
    const inv = await step.invoke("inv", { function: child, data: { k } });
    await step.sleep("s", "1s");
    const [b, c] = await Promise.all([
      step.run("b", () => {
        hit(`${k}:b`);
        return 1;
      }),
      step.waitForEvent("w2", { event: "conc/ev2", timeout: "30s", if: "async.data.k == event.data.k" }),
    ]);
    return { sum: parts.reduce((x, y) => x + y, 0), w: w?.data.k ?? null, inv, b, c: c?.data.k ?? null };
  },
);

let tdb: TestDatabase;
let pool: Awaited<ReturnType<typeof openDb>>;
const workers: Executor[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  pool = await openDb({ databaseUrl: tdb.url, migrate: false, poolSize: 12 });
  for (const id of ["w1", "w2", "w3"]) {
    workers.push(
      createExecutor({
        client,
        functions: [flow, child],
        store: createPrismaStore(pool.db),
        workerId: id,
        pollIntervalMs: 20,
        backoff: () => 30,
        concurrency: 4,
      }),
    );
  }
  for (const w of workers) await w.start();
});

afterAll(async () => {
  for (const w of workers) await w.stop();
  await pool?.close();
  await tdb?.drop();
});

test("three workers, concurrent events: every run completes and every step runs once per attempt", async () => {
  const N = 12;
  const [w1, w2, w3] = workers as [Executor, Executor, Executor];
  const { runIds } = await w1.send(Array.from({ length: N }, (_, i) => ({ name: "conc/go", data: { k: `k${i}` } })));
  let done = false;
  const spam = (async () => {
    while (!done) {
      await Promise.all(
        [w2, w3].map((w, j) =>
          w.send(
            Array.from({ length: N }, (_, i) => i)
              .filter((i) => i % 2 === j)
              .flatMap((i) => [
                { name: "conc/ev", data: { k: `k${i}` } },
                { name: "conc/ev2", data: { k: `k${i}` } },
              ]),
          ),
        ),
      );
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  let runs: Awaited<ReturnType<Executor["waitForRun"]>>[];
  try {
    runs = await Promise.all(runIds.map((id) => w1.waitForRun(id, { timeoutMs: 50_000 })));
  } finally {
    done = true;
    await spam;
  }
  for (const [i, run] of runs.entries()) {
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ sum: 10, w: `k${i}`, inv: 1, b: 1, c: `k${i}` });
    const flaky = i % 2 === 0 ? 1 : 0;
    for (const s of ["p1", "p2", "p3", "p4"]) expect(n(`k${i}:${s}`)).toBe(1 + flaky);
    expect(n(`k${i}:b`)).toBe(1);
    expect(n(`k${i}:child`)).toBe(1);
  }
  // one invoked child per run, never a duplicate, and no work left behind
  expect(await tdb.db.executorRun.count()).toBe(2 * N);
  expect(await tdb.db.executorQueueItem.count()).toBe(0);
  expect(await tdb.db.executorWait.count()).toBe(0);
}, 60_000);
