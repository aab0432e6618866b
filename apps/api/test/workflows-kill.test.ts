// Crash safety of workflow runs (issue 13 "Done when": the kill -9 test for a workflow with a parallel step).
// The API process is killed with SIGKILL while both branches' live task runs are under way; a second process
// on the same database finishes the workflow: no task step starts a second run, every agent step executes
// and bills once, and the workflow's event log holds one terminal frame. Live machines are served by the
// mock provider; the managed engine is the local one.

import fs from "node:fs";
import { createAccount } from "@cua/core/accounts/create-account";
import { silentLogger, systemClock } from "@cua/core/deps";
import { ledgerSum } from "@cua/core/wallet/wallet";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { MockMachineProvider } from "@cua/machines/mock-provider";
import { afterAll, beforeAll, expect, it } from "vitest";
import { call, spawnService, stopChild, TEST_SECRETS_KEY } from "./helpers.ts";
import { waitFor } from "./runs-helpers.ts";

let tdb: TestDatabase;
const children: ReturnType<typeof spawnService>[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL");
  await tdb?.drop();
});

function service() {
  const c = spawnService({
    DATABASE_URL: tdb.url,
    SECRETS_KEY: TEST_SECRETS_KEY,
    DATA_DIR: `/tmp/cua-wf-kill-${process.pid}`,
    MACHINE_PROVIDER: "none",
    MACHINE_METER_INTERVAL_MS: "3600000",
    EXECUTOR_LEASE_MS: "1500",
    EXECUTOR_POLL_MS: "50",
  });
  children.push(c);
  return c;
}

async function kill9(c: ReturnType<typeof spawnService>): Promise<void> {
  const pid = c.child.pid!;
  c.child.kill("SIGKILL");
  await waitFor(
    "the server process to die",
    async () => fs.existsSync(`/proc/${pid}`),
    (alive) => !alive,
    5000,
  );
}

const TASK = Array.from({ length: 12 }, (_, i) => (i % 2 ? "press enter" : "press tab")).join("; ");

it("kill -9 while a parallel step's task runs are under way; the restarted service finishes the workflow once", async () => {
  const deps = { db: tdb.db, clock: systemClock, logger: silentLogger, kek: Buffer.from(TEST_SECRETS_KEY, "hex") };
  const acct = await createAccount(deps, { name: "wf-kill", tier: "enterprise", credits: 1000 });
  const machineId = crypto.randomUUID();
  const handle = await new MockMachineProvider().provision({ machineId, displayName: "wf-kill" });
  await tdb.db.machine.create({
    data: {
      id: machineId,
      accountId: acct.account_id,
      mode: "live",
      kind: "managed",
      displayName: "wf-kill",
      status: "running",
      provider: "mock",
      handle: handle as object,
    },
  });

  const a = service();
  const urlA = await a.url();
  const created = await call(urlA, "POST", "/v1/workflows/runs", {
    key: acct.live_key,
    body: {
      machine_id: machineId,
      definition: {
        steps: [
          {
            id: "p",
            type: "parallel",
            branches: [[{ id: "left", type: "task", task: TASK }], [{ id: "right", type: "task", task: TASK }]],
          },
          {
            id: "both",
            type: "assert",
            condition: {
              op: "and",
              conditions: [
                { op: "truthy", value: "{{left.passed}}" },
                { op: "truthy", value: "{{right.passed}}" },
              ],
            },
          },
        ],
        output: { left: "{{left.steps}}", right: "{{right.steps}}" },
      },
    },
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const childRuns = () =>
    tdb.db.run.findMany({
      where: { metadata: { path: ["workflow_run_id"], equals: id } },
      orderBy: { createdAt: "asc" },
    });

  // both branches' task runs have committed steps, and neither has finished
  await waitFor(
    "both task runs under way",
    childRuns,
    (rs) => rs.length === 2 && rs.every((r) => r.stepCount >= 1 && r.status === "running"),
    60_000,
  );
  await kill9(a);
  const mid = await tdb.db.workflowRun.findUniqueOrThrow({ where: { id } });
  expect(mid.status).toBe("running");

  const b = service();
  const urlB = await b.url();
  const done = await waitFor(
    "the workflow to finish",
    async () => (await call(urlB, "GET", `/v1/workflows/runs/${id}`, { key: acct.live_key })).body,
    (r: any) => ["succeeded", "failed", "cancelled", "timed_out"].includes(r.status),
    90_000,
  );
  expect(done.status).toBe("succeeded");

  // no task step started a second run
  const runs = await childRuns();
  expect(runs.map((r) => [(r.metadata as any).workflow_step_id, r.status]).sort()).toEqual([
    ["left", "succeeded"],
    ["right", "succeeded"],
  ]);
  expect(done.output).toEqual({
    left: runs.find((r) => (r.metadata as any).workflow_step_id === "left")!.stepCount,
    right: runs.find((r) => (r.metadata as any).workflow_step_id === "right")!.stepCount,
  });
  // every agent step committed once and billed once
  let total = 0;
  for (const r of runs) {
    const steps = await tdb.db.runStep.findMany({ where: { runId: r.id }, orderBy: { step: "asc" } });
    expect(steps.map((s) => [s.step, s.phase])).toEqual(
      Array.from({ length: r.stepCount }, (_, i) => [i + 1, "committed"]),
    );
    expect(r.creditsCharged).toBe(5 * r.stepCount);
    total += r.creditsCharged;
  }
  expect(done.spent_cents).toBe(total);
  await waitFor(
    "the last captures",
    () => tdb.db.reservation.count({ where: { accountId: acct.account_id, status: "reserved" } }),
    (n) => n === 0,
    10_000,
  );
  const captured = await tdb.db.reservation.findMany({ where: { accountId: acct.account_id, status: "captured" } });
  expect(new Set(captured.map((h) => h.requestId)).size).toBe(captured.length);
  const balance = (await tdb.db.account.findUniqueOrThrow({ where: { id: acct.account_id } })).balanceCredits;
  expect(balance).toBe(1000 - total);
  expect(await ledgerSum(deps, acct.account_id)).toBe(balance);
  // the workflow's event log is gap-free, each step finished once, one terminal frame
  const events = await tdb.db.workflowRunEvent.findMany({ where: { runId: id }, orderBy: { seq: "asc" } });
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  const finished = events.filter((e) => e.event === "step_finished").map((e) => (e.data as any).step_id);
  expect(finished.sort()).toEqual(["both", "left", "p", "right"]);
  expect(events.filter((e) => e.event === "terminal")).toHaveLength(1);

  await stopChild(b.child, "SIGTERM");
}, 180_000);
