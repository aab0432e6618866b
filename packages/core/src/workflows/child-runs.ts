// A workflow run's task step waits on a task run; when that task run waits for a human (on_awaiting_human
// pause), so does the workflow run (docs/workflows.md "A task step that waits for a human"). The task run's
// own transitions call these, in their transaction (runs/transitions.ts, runs/resume-run.ts), so the workflow
// run, its step row and its frames change in the same commit as the task run:
//
//   task run running -> awaiting_human   the step: awaiting_human; the workflow run: awaiting_human with the
//                                        task run's reason, awaiting_step_id, awaiting_run_id; frames status +
//                                        awaiting_human {run_id, step_id, reason, task_run_id}; callback
//                                        workflow.awaiting_human
//   task run awaiting_human -> running   the step: running; the workflow run: running (or the next task step
//   (resumed) or -> terminal             that waits, in a parallel step); frames resumed {run_id, step_id,
//                                        task_run_id, approved, note} (a resume) and status
//
// Locks: the task run's row (held by the caller), then the workflow run's row, the order every path takes.
import type { Tx } from "@cua/db/client";
import type { Run } from "@cua/db/generated";
import { queueWorkflowCallback } from "./callbacks.ts";
import { appendWorkflowEvents } from "./workflow-runs.ts";

/** The workflow run and step a task run was started for (its metadata, set by the task step). */
export function workflowOf(run: Pick<Run, "metadata">): { runId: string; stepId: string } | null {
  const m = run.metadata as { workflow_run_id?: unknown; workflow_step_id?: unknown } | null;
  if (typeof m?.workflow_run_id !== "string" || typeof m.workflow_step_id !== "string") return null;
  return { runId: m.workflow_run_id, stepId: m.workflow_step_id };
}

async function lockWorkflowRun(tx: Tx, id: string) {
  await tx.$queryRaw`SELECT 1 FROM workflow_runs WHERE id = ${id} FOR UPDATE`;
  return tx.workflowRun.findUnique({ where: { id } });
}

/**
 * The task run `child` went awaiting_human with `reason`: its step waits, and the workflow run waits with it
 * (unless another of its task steps already holds awaiting_step_id: a parallel step). Returns the workflow
 * callback delivery it queued, if any (send it after the commit).
 */
export async function childAwaitingHumanInTx(tx: Tx, child: Run, reason: string, now: Date): Promise<string | null> {
  const wf = workflowOf(child);
  if (!wf) return null;
  const run = await lockWorkflowRun(tx, wf.runId);
  if (!run || (run.status !== "running" && run.status !== "awaiting_human")) return null;
  const step = await tx.workflowRunStep.updateMany({
    where: { runId: wf.runId, stepId: wf.stepId, childRunId: child.id, status: { in: ["running", "awaiting_human"] } },
    data: { status: "awaiting_human" },
  });
  if (step.count === 0) return null; // not this step's current task run
  const frame = {
    event: "awaiting_human" as const,
    data: { run_id: wf.runId, step_id: wf.stepId, reason, task_run_id: child.id },
  };
  if (run.status === "awaiting_human") {
    await appendWorkflowEvents(tx, wf.runId, [frame]);
    return null;
  }
  await tx.workflowRun.update({
    where: { id: wf.runId },
    data: { status: "awaiting_human", awaitingHumanReason: reason, awaitingStepId: wf.stepId },
  });
  await appendWorkflowEvents(tx, wf.runId, [
    { event: "status", data: { run_id: wf.runId, status: "awaiting_human" } },
    frame,
  ]);
  const paused = await tx.workflowRun.findUniqueOrThrow({ where: { id: wf.runId } });
  return queueWorkflowCallback(
    tx,
    paused,
    "workflow.awaiting_human",
    `workflow.awaiting_human#${child.id}#${child.resumeCount + 1}`,
    now,
  );
}

/**
 * The task run `child` left awaiting_human: resumed (`resumed` carries the note) or ended (cancelled, timed
 * out, failed while it waited). Its step runs again (the task step's check records the end) and the workflow
 * run runs again, or waits on the next of its task steps that still waits.
 */
export async function childLeftHumanWaitInTx(
  tx: Tx,
  child: Run,
  resumed: { note: string | null } | null,
): Promise<void> {
  const wf = workflowOf(child);
  if (!wf) return;
  const run = await lockWorkflowRun(tx, wf.runId);
  if (!run || (run.status !== "running" && run.status !== "awaiting_human")) return;
  const step = await tx.workflowRunStep.updateMany({
    where: { runId: wf.runId, stepId: wf.stepId, childRunId: child.id, status: "awaiting_human" },
    data: { status: "running" },
  });
  if (step.count === 0) return;
  const frames: Parameters<typeof appendWorkflowEvents>[2] = [];
  if (resumed)
    frames.push({
      event: "resumed",
      data: { run_id: wf.runId, step_id: wf.stepId, task_run_id: child.id, approved: true, note: resumed.note },
    });
  if (run.status === "awaiting_human" && run.awaitingStepId === wf.stepId) {
    // another task step still waiting (parallel branches) keeps the run waiting, with its own reason
    const other = await tx.workflowRunStep.findFirst({
      where: { runId: wf.runId, status: "awaiting_human", childRunId: { not: null } },
      orderBy: { startedAt: "asc" },
    });
    const otherRun = other?.childRunId
      ? await tx.run.findUnique({ where: { id: other.childRunId }, select: { awaitingHumanReason: true } })
      : null;
    await tx.workflowRun.update({
      where: { id: wf.runId },
      data: other
        ? { awaitingStepId: other.stepId, awaitingHumanReason: otherRun?.awaitingHumanReason ?? null }
        : { status: "running", awaitingHumanReason: null, awaitingStepId: null },
    });
    if (!other)
      frames.push({ event: "status", data: { run_id: wf.runId, status: "running", note: resumed?.note ?? null } });
  }
  await appendWorkflowEvents(tx, wf.runId, frames);
}
