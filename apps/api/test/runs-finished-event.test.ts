// run/finished says whether a schedule started the run, and only such runs start the schedule-settle
// function (issue 16: every task run started it, a whole function run for nothing). A scheduled run's
// settlement itself is in schedules-firing.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./helpers.ts";
import { createRun, testMachine, waitRun } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account();
  machine = await testMachine(s, acct.test_key);
});
afterAll(() => s.stop());

describe("run/finished", () => {
  it("a run no schedule started: run/finished says scheduled false and no schedule-settle run starts", async () => {
    const r = await createRun(s, acct.test_key, { machine_id: machine, task: "#steps=2" });
    expect(r.status).toBe(201);
    await waitRun(s, acct.test_key, r.body.id, ["succeeded"]);
    const db = s.app.deps.db;
    let finished: { payload: unknown }[] = [];
    for (let i = 0; i < 100 && finished.length === 0; i++) {
      finished = await db.$queryRaw<{ payload: unknown }[]>`
        SELECT payload FROM executor_events WHERE name = 'run/finished' AND payload->'data'->>'run_id' = ${r.body.id}`;
      if (finished.length === 0) await new Promise((res) => setTimeout(res, 50));
    }
    expect(finished).toHaveLength(1);
    expect((finished[0]!.payload as { data: unknown }).data).toEqual({ run_id: r.body.id, scheduled: false });
    const runsOf = async (fn: string) =>
      (
        await db.$queryRaw<{ n: number }[]>`
          SELECT count(*)::int AS n FROM executor_runs WHERE function_id LIKE ${`%${fn}`}`
      )[0]!.n;
    expect(await runsOf("run-deadline")).toBeGreaterThan(0); // the function ids are named this way
    expect(await runsOf("schedule-settle")).toBe(0);
  });
});
