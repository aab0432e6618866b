// The workflow events of the catalogue (inngest/src/events.ts; docs/executor.md "Events"): what the
// workflow use cases send through WorkflowJobs is received by the workflow-run function (its trigger and
// cancelOn refer to the same definition objects), each with a stable idempotency id.
import type { WorkflowsDeps } from "@cua/core/workflows/ports";
import { Inngest } from "inngest";
import { describe, expect, test } from "vitest";
import { appEvents, validateAppEvent, type WireEvent, workflowResumed, workflowStarted } from "../src/events.ts";
import { createWorkflowFunctions } from "../src/functions/workflows.ts";
import { InngestWorkflowJobs } from "../src/workflow-jobs.ts";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

describe("workflow events", () => {
  test("started, resumed and cancelled reach the sink with stable ids; the function triggers and cancels on them", async () => {
    const sent: WireEvent[] = [];
    let bound = false;
    const jobs = new InngestWorkflowJobs(() =>
      bound ? { send: async (e: WireEvent[]) => void sent.push(...e) } : null,
    );
    await expect(jobs.started("wfr_1")).rejects.toThrow("not started");
    bound = true;
    await jobs.started("wfr_1");
    await jobs.resumed("wfr_1", 1);
    await jobs.cancelled("wfr_1");
    await jobs.callback("dlv_1");
    expect(sent.map((e) => [e.name, e.id, e.data])).toEqual([
      ["workflow/started", "workflow-started-wfr_1", { workflow_run_id: "wfr_1" }],
      ["workflow/resumed", "workflow-resumed-wfr_1-1", { workflow_run_id: "wfr_1", resume_count: 1 }],
      ["workflow/cancelled", "workflow-cancelled-wfr_1", { workflow_run_id: "wfr_1" }],
      ["workflow/callback", "workflow-callback-dlv_1", { delivery_id: "dlv_1" }],
    ]);
    const client = new Inngest({ id: "wf-events-test", logger: quiet });
    const received: string[] = [];
    for (const fn of createWorkflowFunctions(client, {} as WorkflowsDeps)) {
      const opts = (fn as unknown as { opts: { triggers: { event: unknown }[]; cancelOn?: { event: unknown }[] } })
        .opts;
      for (const t of [...opts.triggers, ...(opts.cancelOn ?? [])]) {
        if (t.event === undefined) continue; // the sweeper's cron
        expect(Object.values(appEvents)).toContain(t.event);
        received.push((t.event as { name: string }).name);
      }
    }
    // workflow/resumed is received by step.waitForEvent inside workflow-run
    expect(received.sort()).toEqual(["workflow/callback", "workflow/cancelled", "workflow/started"]);
  });

  test("wrong data fails validation", async () => {
    // @ts-expect-error resume_count must be a number
    await expect(validateAppEvent(workflowResumed.create({ workflow_run_id: "x", resume_count: "1" }))).rejects.toThrow(
      /resume_count/,
    );
    await expect(validateAppEvent(workflowStarted.create({ workflow_run_id: "" }))).rejects.toThrow(/workflow_run_id/);
  });
});
