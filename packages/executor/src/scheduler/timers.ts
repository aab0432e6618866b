// Timers that come due: a sleep's wake-up memoizes the Sleep step; a wait's timeout memoizes null
// (waitForEvent) or an InngestInvokeTimeoutError (invoke). Either way the run is asked to go on. A
// wait resolved meanwhile (its event arrived, its child run ended) makes the timeout a no-op.
// With `leaseUntil`, the run's new call item is leased to this worker (until leaseUntil()) and returned:
// the timer lane makes that call itself, so what a timer wakes up (a schedule's fire, a deadline) does
// not queue behind run steps.
import { type ExecutorContext, LeaseLostError } from "../context.ts";
import { ulid } from "../store/ids.ts";
import { isActiveStatus, leaseOf, type QueueItem } from "../store/store.ts";

export async function fireTimer(
  ctx: ExecutorContext,
  item: QueueItem,
  leaseUntil?: (() => Date) | null,
): Promise<QueueItem | null> {
  return ctx.store.transaction(async (tx) => {
    const lease = leaseUntil ? { workerId: ctx.workerId, until: leaseUntil() } : undefined;
    const run = await tx.lockRun(item.runId);
    if (!(await tx.finishItem(item.id, leaseOf(item), ctx.now()))) throw new LeaseLostError(item.id);
    if (!run || !isActiveStatus(run.status) || !item.stepId) return null;
    const name = typeof item.payload?.name === "string" ? item.payload.name : null;
    if (item.kind === "sleep") {
      if (await tx.insertStep(run.id, { stepId: item.stepId, op: "Sleep", name, data: null })) {
        return tx.requestCall(run.id, run.functionId, ctx.now(), ulid(), lease);
      }
      return null;
    }
    // wait_timeout: the wait may already have been resolved, in which case this is a no-op
    const wait = await tx.deleteWait(run.id, item.stepId);
    if (!wait) return null;
    if (wait.kind === "event") {
      await tx.insertStep(run.id, { stepId: item.stepId, op: "WaitForEvent", name: wait.eventName, data: null });
    } else {
      await tx.insertStep(run.id, {
        stepId: item.stepId,
        op: "InvokeFunction",
        name,
        error: {
          name: "InngestInvokeTimeoutError",
          message: `executor: timed out waiting for invoked run ${wait.childRunId}`,
        },
      });
      if (wait.childRunId) await tx.updateRun(wait.childRunId, { parentRunId: null, parentStepId: null });
    }
    return tx.requestCall(run.id, run.functionId, ctx.now(), ulid(), lease);
  });
}
