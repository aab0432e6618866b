// The step runner: one `call` (discovery, stepId=step) or `step` (one planned step) work item. It loads
// the run and its memoized steps, POSTs a signed Call Request to the SDK's handler through the protocol
// client, and then commits what the SDK answered in ONE transaction under the run's row lock, which
// also finishes the item (only if the lease is still ours) and queues what comes next.
import { type ExecutorContext, LeaseLostError } from "../context.ts";
import type { SdkHandler } from "../protocol/sdk-handler.ts";
import { buildCallBody, type CallResult, parseCallResponse, toSerializedError } from "../protocol/wire.ts";
import { parseRetryAfter } from "../scheduler/duration.ts";
import {
  type FunctionRecord,
  isActiveStatus,
  leaseOf,
  type QueueItem,
  type RunRecord,
  type StepRecord,
} from "../store/store.ts";
import { completeRun, failRun, markRunning } from "./endings.ts";
import { applyOps, opName } from "./ops.ts";
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

/**
 * The run and its steps as the previous call of a continued run left them (the item handed back is the
 * key): the next call needs no read. Only when nothing else asked for a call of the run meanwhile (the
 * commit reports it), so nothing else memoized a step; the commit also found the run active.
 */
const continued = new WeakMap<QueueItem, { run: RunRecord; steps: StepRecord[] }>();

/** What processing an item may hand back: the run's next call, already leased to this worker. */
export type NextItem = QueueItem | null;

/**
 * One call item. `continueLease`: when the answer is the common one (one new step ran), the run's next call
 * stays leased to this worker (until continueLease(), asked at the commit) and is returned, so the worker
 * goes on with the run without a claim or a poll in between (null: the call is left to any worker).
 */
export async function runCallItem(
  deps: StepRunnerDeps,
  item: QueueItem,
  isAbandoned: () => boolean,
  opts: { continueLease?: (() => Date) | null } = {},
): Promise<NextItem> {
  const { ctx } = deps;
  const { store, workerId } = ctx;
  // a run going on in this slot: what the previous call committed is known, unless something else wrote
  const known = continued.get(item);
  const loaded = known ?? (await store.loadCall(item.runId));
  const run = loaded?.run;
  const fn = deps.servedFunction(item.functionId);
  if (!run || !isActiveStatus(run.status) || !fn) {
    await store.transaction(async (tx) => {
      await tx.finishItem(item.id, leaseOf(item), ctx.now());
    });
    return null;
  }
  const steps: StepRecord[] = loaded.steps;
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
  if (isAbandoned()) return null;
  ctx.log.debug("sdk answered", { runId: run.id, item: item.kind, stepId, result: result.kind });

  // the common answer (a discovery call ran one new step) in one statement; anything else, or a failed
  // condition, goes the general way below
  const only = result.kind === "ops" && result.ops.length === 1 ? result.ops[0] : undefined;
  if (item.kind === "call" && only && (only.op === "StepRun" || only.op === "Step")) {
    const done = await store.commitStepRun({
      runId: run.id,
      itemId: item.id,
      owner: leaseOf(item),
      workerId,
      step: { stepId: only.id, op: "StepRun", name: opName(only), data: only.data ?? null },
      now: ctx.now(),
      leaseUntil: opts.continueLease ? opts.continueLease() : null,
    });
    if (done) {
      if (!opts.continueLease) {
        ctx.kick();
        return null;
      }
      if (!done.othersWrote) {
        const step: StepRecord = {
          runId: run.id,
          stepId: only.id,
          seq: done.seq,
          op: "StepRun",
          name: opName(only),
          data: only.data ?? null,
          error: null,
          createdAt: done.createdAt,
        };
        continued.set(done.item, { run: { ...run, status: "running" }, steps: [...steps, step] });
      }
      return done.item;
    }
  }

  const again = retryPlan(item, result, maxAttempts, ctx.now(), ctx.backoff);
  await store.transaction(async (tx) => {
    const locked = await tx.lockRun(run.id);
    if (!(await tx.finishItem(item.id, leaseOf(item), ctx.now(), again))) throw new LeaseLostError(item.id);
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
  ctx.kick(); // the answer may have queued timers (sleeps, wait timeouts) or steps
  return null;
}
