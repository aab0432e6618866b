// Leases are per lease, not per worker (docs/executor.md "Leases"). A call whose lease expired while it
// ran (a stall, or a clock jump: the service clock moves in tests of schedules) is claimed again by
// another slot of the SAME worker. The stale holder's answer must be discarded: before each lease had its
// own owner token, the stale slot's commit finished the item the run had moved on to (the continued
// call of the same id), so the run was left `running` with nothing queued and never ended.
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { Inngest } from "inngest";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createExecutor, type Executor } from "../src/index.ts";
import { createPrismaStore } from "../src/store/prisma-store.ts";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const client = new Inngest({ id: "leases", logger: quiet });

let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

/** A gate a step body waits at; the test opens it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { open, opened };
}
const entered: string[] = [];
const gates = { a1: gate(), a2: gate(), b: gate() };
const waitUntil = async (what: string, ok: () => boolean, ms = 15_000) => {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}; entered: ${entered.join(",")}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const fn = client.createFunction(
  { id: "two-steps", retries: 0, triggers: [{ event: "leases/go" }] },
  async ({ step }) => {
    const a = await step.run("a", async () => {
      const n = entered.filter((e) => e === "a").length;
      entered.push("a");
      await (n === 0 ? gates.a1 : gates.a2).opened;
      return `a${n + 1}`;
    });
    const b = await step.run("b", async () => {
      entered.push("b");
      await gates.b.opened;
      return "b";
    });
    return { a, b };
  },
);

let tdb: TestDatabase;
let executor: Executor;

beforeAll(async () => {
  tdb = await createTestDatabase();
  executor = createExecutor({
    client,
    functions: [fn],
    store: createPrismaStore(tdb.db),
    workerId: "one-worker",
    now: clock,
    pollIntervalMs: 20,
    leaseMs: 30_000,
    concurrency: 4,
  });
  await executor.start();
});

afterAll(async () => {
  for (const g of Object.values(gates)) g.open();
  await executor?.stop();
  await tdb?.drop();
});

test("a slot whose lease was taken again by its own worker cannot finish the run's next call", async () => {
  const { runIds } = await executor.send({ name: "leases/go", data: {} });
  const runId = runIds[0]!;
  await waitUntil("step a entered", () => entered.length === 1);
  // the first call's lease (30 s) expires: a second slot of the same worker claims the call again and
  // runs step a a second time (at least once, docs/executor.md "Guarantees")
  offsetMs += 60_000;
  await waitUntil("step a entered again", () => entered.length === 2);
  expect(entered).toEqual(["a", "a"]);
  // the second holder (the current lease) commits a and goes on with the run: step b starts
  gates.a2.open();
  await waitUntil("step b entered", () => entered.includes("b"));
  // the first holder's answer arrives late, while the run's next call is in flight under the same item
  gates.a1.open();
  await new Promise((r) => setTimeout(r, 300));
  gates.b.open();
  const run = await executor.waitForRun(runId, { timeoutMs: 15_000 });
  expect(run.status).toBe("completed");
  // the committed result is the current holder's; the stale answer was discarded
  expect(run.output).toEqual({ a: "a2", b: "b" });
  expect(entered).toEqual(["a", "a", "b"]);
  expect(await tdb.db.executorQueueItem.count({ where: { runId } })).toBe(0);
});
