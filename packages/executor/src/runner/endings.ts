// Run endings: completed, failed, cancelled. Each one, inside the caller's transaction and under the
// run's lock: records the outcome, drops the run's queued work and waits, emits Inngest's internal
// events (function.finished / failed / cancelled, which trigger onFailure handlers), and hands the
// result to a parent run waiting on it through step.invoke.
import { type ExecutorContext, INTERNAL_EVENTS } from "../context.ts";
import { ulid } from "../store/ids.ts";
import { itemKeys } from "../store/keys.ts";
import { isActiveStatus, type RunRecord, type SerializedError, type StoreTx } from "../store/store.ts";

/** The first SDK answer moves a queued run to running. */
export async function markRunning(ctx: ExecutorContext, tx: StoreTx, run: RunRecord): Promise<void> {
  if (run.status === "queued") await tx.updateRun(run.id, { status: "running", startedAt: run.startedAt ?? ctx.now() });
}

/** A run started by step.invoke ended: memoize its result (or error) on the waiting parent step. */
async function resolveParent(
  ctx: ExecutorContext,
  tx: StoreTx,
  child: RunRecord,
  result: { data: unknown } | { error: SerializedError },
): Promise<void> {
  if (!child.parentRunId) return;
  const parent = await tx.lockRun(child.parentRunId);
  const wait = await tx.deleteWaitForChild(child.id);
  if (!parent || !wait || !isActiveStatus(parent.status)) return;
  await tx.insertStep(parent.id, { stepId: wait.stepId, op: "InvokeFunction", name: null, ...result });
  await tx.deleteItemByKey(itemKeys.timeout(parent.id, wait.stepId));
  await tx.requestCall(parent.id, parent.functionId, ctx.now(), ulid());
}

export async function completeRun(ctx: ExecutorContext, tx: StoreTx, run: RunRecord, data: unknown): Promise<void> {
  const at = ctx.now();
  await tx.updateRun(run.id, {
    status: "completed",
    output: data ?? null,
    endedAt: at,
    ...(run.startedAt ? {} : { startedAt: at }),
  });
  await tx.clearRunWork(run.id);
  await ctx.ingest(tx, [
    {
      name: INTERNAL_EVENTS.FunctionFinished,
      data: { function_id: run.functionId, run_id: run.id, event: run.event, result: data ?? null },
    },
  ]);
  await resolveParent(ctx, tx, run, { data: data ?? null });
}

export async function failRun(
  ctx: ExecutorContext,
  tx: StoreTx,
  run: RunRecord,
  error: SerializedError,
): Promise<void> {
  const at = ctx.now();
  await tx.updateRun(run.id, { status: "failed", error, endedAt: at, ...(run.startedAt ? {} : { startedAt: at }) });
  await tx.clearRunWork(run.id);
  await ctx.ingest(tx, [
    {
      name: INTERNAL_EVENTS.FunctionFailed,
      data: { function_id: run.functionId, run_id: run.id, error, event: run.event },
    },
    {
      name: INTERNAL_EVENTS.FunctionFinished,
      data: { function_id: run.functionId, run_id: run.id, event: run.event, error },
    },
  ]);
  await resolveParent(ctx, tx, run, { error });
}

export async function cancelRun(ctx: ExecutorContext, tx: StoreTx, run: RunRecord, reason: string): Promise<void> {
  const error: SerializedError = { name: "FunctionCancelledError", message: reason };
  await tx.updateRun(run.id, { status: "cancelled", error, endedAt: ctx.now() });
  await tx.clearRunWork(run.id);
  await ctx.ingest(tx, [
    {
      name: INTERNAL_EVENTS.FunctionCancelled,
      data: { function_id: run.functionId, run_id: run.id, event: run.event },
    },
  ]);
  await resolveParent(ctx, tx, run, { error });
}
