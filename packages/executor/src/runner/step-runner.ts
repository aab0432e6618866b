// The step runner: one `call` (discovery, stepId=step) or `step` (one planned step) work item. It loads
// the run and its memoized steps, POSTs a signed Call Request to the SDK's handler through the protocol
// client, and then commits what the SDK answered in ONE transaction under the run's row lock, which
// also finishes the item (only if the lease is still ours) and queues what comes next.
import { type ExecutorContext, LeaseLostError } from "../context.ts";
import type { SdkHandler } from "../protocol/sdk-handler.ts";
import { buildCallBody, type CallResult, parseCallResponse, toSerializedError } from "../protocol/wire.ts";
import { parseRetryAfter } from "../scheduler/duration.ts";
import { type FunctionRecord, isActiveStatus, type QueueItem, type StepRecord } from "../store/store.ts";
import { completeRun, failRun, markRunning } from "./endings.ts";
import { applyOps } from "./ops.ts";
import { maxAttemptsOf, retryPlan } from "./retries.ts";

export interface StepRunnerDeps {
  ctx: ExecutorContext;
  sdk: Pick<SdkHandler, "call">;
  /** the function this process serves with that id (undefined: not served here) */
  servedFunction(id: string): FunctionRecord | undefined;
}

/** Ask the SDK; a call that throws (the handler itself failed) is a retriable error. */
async function callSdk(deps: StepRunnerDeps, functionId: string, stepId: string, body: Record<string, unknown>) {
  try {
    const res = await deps.sdk.call(functionId, stepId, body);
    return await parseCallResponse(res, (v) => parseRetryAfter(v, deps.ctx.now()));
  } catch (e) {
    return { kind: "error", error: toSerializedError(e, "SDK call failed"), retriable: true, status: 0 } as CallResult;
  }
}

export async function runCallItem(deps: StepRunnerDeps, item: QueueItem, isAbandoned: () => boolean): Promise<void> {
  const { ctx } = deps;
  const { store, workerId } = ctx;
  const run = await store.getRun(item.runId);
  const fn = deps.servedFunction(item.functionId);
  if (!run || !isActiveStatus(run.status) || !fn) {
    await store.transaction(async (tx) => {
      await tx.finishItem(item.id, workerId, ctx.now());
    });
    return;
  }
  const steps: StepRecord[] = await store.listSteps(run.id);
  const maxAttempts = maxAttemptsOf(fn.config);
  const stepId = item.kind === "step" && item.stepId ? item.stepId : "step";
  const body = buildCallBody({
    runId: run.id,
    event: run.event,
    steps,
    attempt: item.attempt,
    maxAttempts,
    disableImmediateExecution: run.disableImmediateExecution,
  });
  const result = await callSdk(deps, run.functionId, stepId, body);
  if (isAbandoned()) return;
  ctx.log.debug("sdk answered", { runId: run.id, item: item.kind, stepId, result: result.kind });

  const again = retryPlan(item, result, maxAttempts, ctx.now(), ctx.backoff);
  await store.transaction(async (tx) => {
    const locked = await tx.lockRun(run.id);
    if (!(await tx.finishItem(item.id, workerId, ctx.now(), again))) throw new LeaseLostError(item.id);
    if (!locked || !isActiveStatus(locked.status)) return;
    await markRunning(ctx, tx, locked);
    if (result.kind === "completed") {
      await completeRun(ctx, tx, locked, result.data);
    } else if (result.kind === "error") {
      if (!again) await failRun(ctx, tx, locked, result.error);
    } else {
      await applyOps(ctx, { tx, run: locked, item, result, maxAttempts, retried: again !== undefined });
    }
  });
}
