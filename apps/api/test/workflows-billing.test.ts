// Billing and the budget guard of workflow runs with a live key (SPEC.md "Workflows": only task steps bill,
// 5 or 8 credits per agent step, each being a run; DECISIONS.md "Workflows": budget_cents is a guard, a
// breach fails the run with GUARD_EXCEEDED). Live machines are served by the mock provider and the managed
// engine is the local one, as in runs-billing.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestServer, type TestServer } from "./helpers.ts";
import { liveMockMachine, waitFor } from "./runs-helpers.ts";

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none", MACHINE_METER_INTERVAL_MS: "3600000", EXECUTOR_POLL_MS: "50" });
});
afterAll(() => s.stop());

const balance = async (accountId: string) =>
  (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: accountId } })).balanceCredits;
const waitDone = (key: string, id: string) =>
  waitFor(
    `workflow run ${id}`,
    async () => (await call(s.url, "GET", `/v1/workflows/runs/${id}`, { key })).body,
    (b: any) => ["succeeded", "failed", "cancelled"].includes(b?.status),
    60_000,
  ).then((b: any) => b);
const twoTasks = {
  steps: [
    { id: "a", type: "task", task: "press tab; press enter" },
    { id: "b", type: "task", task: "press tab; press enter" },
  ],
};

describe("live workflow runs", () => {
  it("each task step is a billed run (3 steps x 5 credits); spent_cents and usage add them up; other steps are free", async () => {
    const a = await s.account({ credits: 100 });
    const machine = await liveMockMachine(s, a.account_id);
    const r = await call(s.url, "POST", "/v1/workflows/runs", {
      key: a.live_key,
      body: {
        definition: {
          steps: [...twoTasks.steps, { id: "c", type: "assert", condition: { op: "truthy", value: "{{b.passed}}" } }],
        },
        machine_id: machine,
      },
    });
    expect(r.status).toBe(201);
    expect(r.body.id).toMatch(/^wfr_[0-9a-f]{24}$/);
    const run = await waitDone(a.live_key, r.body.id);
    expect(run).toMatchObject({ status: "succeeded", spent_cents: 30, usage: { credits_charged: 30, cost_cents: 30 } });
    const children = await Promise.all(
      run.steps
        .filter((x: any) => x.type === "task")
        .map((x: any) => call(s.url, "GET", `/v1/runs/${x.run_id}`, { key: a.live_key })),
    );
    expect(children.map((c) => [c.body.step_count, c.body.usage.credits_charged])).toEqual([
      [3, 15],
      [3, 15],
    ]);
    await waitFor(
      "captures",
      () => balance(a.account_id),
      (b) => b === 70,
      10_000,
    );
  });

  it("budget_cents: a task run that would pass the budget stops, and the workflow fails with GUARD_EXCEEDED", async () => {
    const a = await s.account({ credits: 100 });
    const machine = await liveMockMachine(s, a.account_id);
    const r = await call(s.url, "POST", "/v1/workflows/runs", {
      key: a.live_key,
      body: { definition: twoTasks, machine_id: machine, budget_cents: 20 },
    });
    const run = await waitDone(a.live_key, r.body.id);
    expect(run).toMatchObject({ status: "failed", error: { code: "GUARD_EXCEEDED", step_id: "b" }, budget_cents: 20 });
    expect(run.spent_cents).toBeLessThanOrEqual(20);
    const b = run.steps.find((x: any) => x.id === "b");
    const child = await call(s.url, "GET", `/v1/runs/${b.run_id}`, { key: a.live_key });
    expect(child.body).toMatchObject({ status: "failed", error: { code: "BUDGET_EXCEEDED" }, budget_cents: 5 });
  });
});
