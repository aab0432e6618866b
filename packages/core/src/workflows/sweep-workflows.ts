// The safety net behind "commit, then send the event" for workflow runs (like runs/sweep-runs.ts): a crash
// between a workflow run's insert (or a callback's queueing) and the event that drives it leaves a queued run
// or a pending delivery without a function. The workflow-sweeper cron function re-sends those events; their
// ids (workflow-started-<id>, workflow-callback-<id>) make a re-send start nothing twice.
import type { WorkflowsDeps } from "./ports.ts";

export const WORKFLOW_SWEEP_GRACE_MS = 30_000;

export async function sweepWorkflows(
  deps: WorkflowsDeps,
  graceMs = WORKFLOW_SWEEP_GRACE_MS,
): Promise<{ runs: number; callbacks: number }> {
  const before = new Date(deps.clock.now().getTime() - graceMs);
  const queued = await deps.db.workflowRun.findMany({
    where: { status: "queued", createdAt: { lt: before } },
    select: { id: true },
    take: 500,
  });
  for (const r of queued) await deps.workflows.jobs.started(r.id);
  const pending = await deps.db.workflowCallbackDelivery.findMany({
    where: { status: "pending", attemptCount: 0, createdAt: { lt: before } },
    select: { id: true },
    take: 500,
  });
  for (const d of pending) await deps.workflows.jobs.callback(d.id);
  return { runs: queued.length, callbacks: pending.length };
}
