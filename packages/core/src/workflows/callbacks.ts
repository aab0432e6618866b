// Workflow run callbacks (docs/workflows.md "Callbacks"), shaped and signed like task-run callbacks
// (packages/core/src/runs/callbacks.ts): POST {id: "dlv_<hex>", event, created_at, workflow_run_id, status,
// reason?, data: {workflow_run}} to the run's webhook_url with `Service-Signature: t=..,v1=..` (the run's
// webhook_secret) and `Service-Delivery-Id`, stable across attempts; at most three recorded attempts (the
// workflow-callback function sleeps between them); any 2xx counts as delivered. Events: workflow.awaiting_human
// (one per approval), workflow.succeeded, workflow.failed, workflow.cancelled.

import { hex } from "@cua/base/ids";
import type { Tx } from "@cua/db/client";
import type { WorkflowRun } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import { attemptSignedDelivery, type DeliveryOutcome } from "../runs/callbacks.ts";
import { toWorkflowRunRecord } from "./workflow-runs.ts";

export type WorkflowCallbackEvent =
  | "workflow.awaiting_human"
  | "workflow.succeeded"
  | "workflow.failed"
  | "workflow.cancelled";

/** Queues a delivery (in the transition's transaction) unless the run has no webhook_url or eventKey was queued. */
export async function queueWorkflowCallback(
  tx: Tx,
  run: WorkflowRun,
  event: WorkflowCallbackEvent,
  eventKey: string,
  now: Date,
): Promise<string | null> {
  if (!run.webhookUrl) return null;
  const id = `dlv_${hex(12)}`;
  const steps = await tx.workflowRunStep.findMany({ where: { runId: run.id } });
  const body = JSON.stringify({
    id,
    event,
    created_at: now.toISOString(),
    workflow_run_id: run.id,
    status: run.status,
    ...(event === "workflow.awaiting_human" ? { reason: run.awaitingHumanReason, step_id: run.awaitingStepId } : {}),
    data: { workflow_run: toWorkflowRunRecord(run, steps) },
  });
  await tx.workflowCallbackDelivery.createMany({
    data: [{ id, runId: run.id, event, eventKey, body, status: "pending", createdAt: now }],
    skipDuplicates: true,
  });
  const row = await tx.workflowCallbackDelivery.findUnique({ where: { runId_eventKey: { runId: run.id, eventKey } } });
  return row?.id ?? null;
}

/** Attempt `attempt` (1..3) of one delivery; an attempt already recorded is not made again. */
export async function deliverWorkflowCallback(
  deps: CoreDeps & { runsConfig: { allowInsecureCallbacks: boolean; callbackTimeoutMs: number } },
  deliveryId: string,
  attempt: number,
): Promise<DeliveryOutcome> {
  const d = await deps.db.workflowCallbackDelivery.findUnique({ where: { id: deliveryId } });
  if (!d) return { done: true, status: "missing", attempt, status_code: null };
  if (d.status !== "pending" || d.attemptCount >= attempt)
    return {
      done: d.status !== "pending",
      status: d.status as DeliveryOutcome["status"],
      attempt: d.attemptCount,
      status_code: null,
    };
  const run = await deps.db.workflowRun.findUnique({ where: { id: d.runId } });
  if (!run?.webhookUrl || !run.webhookSecretSealed) {
    await deps.db.workflowCallbackDelivery.update({ where: { id: d.id }, data: { status: "failed" } });
    return { done: true, status: "failed", attempt, status_code: null };
  }
  const { entry, status, statusCode, ok } = await attemptSignedDelivery(deps, {
    runId: run.id,
    url: run.webhookUrl,
    secretSealed: run.webhookSecretSealed,
    deliveryId: d.id,
    body: d.body,
    attempt,
  });
  await deps.db.$executeRaw`
    UPDATE workflow_callback_deliveries
    SET attempts = attempts || ${JSON.stringify([entry])}::jsonb, attempt_count = ${attempt}, status = ${status},
        last_attempt_at = now(), delivered_at = ${ok ? new Date() : null}::timestamptz
    WHERE id = ${d.id} AND attempt_count = ${attempt - 1} AND status = 'pending'`;
  return { done: status !== "pending", status, attempt, status_code: statusCode };
}
