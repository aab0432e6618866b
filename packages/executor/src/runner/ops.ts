// Applying one SDK answer (a 206 with ops), inside the transaction that finishes its work item and
// under the run's lock. One handler per op code; each says whether it committed a step result (which
// makes the run ask the SDK again) or ended the run. See docs/executor.md "Op codes handled".
import { type ExecutorContext, INTERNAL_EVENTS } from "../context.ts";
import { compileExpression, ExpressionError } from "../events/expression.ts";
import {
  type CallResult,
  isSupportedOp,
  type OutgoingOp,
  type SupportedOp,
  toSerializedError,
  UnsupportedOpError,
} from "../protocol/wire.ts";
import { resolveInstant } from "../scheduler/duration.ts";
import { ulid } from "../store/ids.ts";
import { itemKeys } from "../store/keys.ts";
import type { EventPayload, QueueItem, RunRecord, StoreTx } from "../store/store.ts";
import { completeRun, failRun } from "./endings.ts";

type OpsResult = Extract<CallResult, { kind: "ops" }>;

/** What one answer is applied to. `retried`: the item itself is kept for another attempt. */
export interface OpsInput {
  tx: StoreTx;
  run: RunRecord;
  item: QueueItem;
  result: OpsResult;
  maxAttempts: number;
  retried: boolean;
}

/** committed: a step result was memoized; race: the step ran in parallelMode "race"; ended: the run failed */
interface OpOutcome {
  committed?: boolean;
  race?: boolean;
  ended?: boolean;
}

type OpHandler = (ctx: ExecutorContext, input: OpsInput, op: OutgoingOp, name: string | null) => Promise<OpOutcome>;

/** The step's user-facing name, wherever this SDK version put it. */
export function opName(op: OutgoingOp): string | null {
  return (
    op.displayName ?? op.userland?.id ?? (op.op === "StepRun" || op.op === "StepPlanned" ? (op.name ?? null) : null)
  );
}

const isRace = (op: OutgoingOp) => op.opts?.parallelMode === "race";

async function memoizeFailure(input: OpsInput, op: OutgoingOp, name: string | null): Promise<boolean> {
  return input.tx.insertStep(input.run.id, {
    stepId: op.id,
    op: "StepFailed",
    name,
    error: toSerializedError(op.error, "step failed"),
  });
}

/** StepRun / Step: memoize the result. */
const stepRan: OpHandler = async (_ctx, { tx, run }, op, name) => ({
  committed: await tx.insertStep(run.id, { stepId: op.id, op: "StepRun", name, data: op.data ?? null }),
  race: isRace(op),
});

/** StepFailed: memoize the error; the function receives a StepError it may catch. */
const stepFailed: OpHandler = async (_ctx, input, op, name) => ({
  committed: await memoizeFailure(input, op, name),
  race: isRace(op),
});

/** StepError: retry the step after the backoff, or memoize the error once out of attempts. */
const stepError: OpHandler = async (ctx, input, op, name) => {
  const { tx, run, item, result, maxAttempts, retried } = input;
  if (item.kind === "step" && op.id === item.stepId) {
    // the item itself is retried (retryPlan); out of attempts although the SDK did not say StepFailed:
    // the error is final
    return { committed: !retried && (await memoizeFailure(input, op, name)) };
  }
  // a step executed immediately during discovery failed: retry it as its own item
  const attempt = item.attempt + 1;
  if (attempt >= maxAttempts) return { committed: await memoizeFailure(input, op, name) };
  await tx.enqueue(
    {
      id: ulid(),
      runId: run.id,
      functionId: run.functionId,
      kind: "step",
      stepId: op.id,
      attempt,
      dedupeKey: itemKeys.step(run.id, op.id),
      payload: { name },
      runAt: new Date(ctx.now().getTime() + (result.retryAfterMs ?? ctx.backoff(attempt))),
    },
    { unlessStepMemoized: true },
  );
  return {};
};

/** StepPlanned: queue the step (a stale answer may plan a step meanwhile memoized: never plan it again). */
const stepPlanned: OpHandler = async (ctx, { tx, run }, op, name) => {
  await tx.enqueue(
    {
      id: ulid(),
      runId: run.id,
      functionId: run.functionId,
      kind: "step",
      stepId: op.id,
      dedupeKey: itemKeys.step(run.id, op.id),
      payload: { name, ...(op.opts?.parallelMode ? { parallelMode: op.opts.parallelMode } : {}) },
      runAt: ctx.now(),
    },
    { unlessStepMemoized: true },
  );
  return {};
};

/** Sleep: queue a wake-up at the duration (op.name) or date. */
const sleep: OpHandler = async (ctx, { tx, run }, op) => {
  if (await tx.hasStep(run.id, op.id)) return {};
  const spec = typeof op.name === "string" ? op.name : typeof op.opts?.duration === "string" ? op.opts.duration : "";
  let until: Date;
  try {
    until = resolveInstant(spec, ctx.now());
  } catch (e) {
    await failRun(ctx, tx, run, {
      name: "UnsupportedOpError",
      message: `executor: Sleep with unreadable duration "${spec}": ${(e as Error).message}`,
    });
    return { ended: true };
  }
  await tx.enqueue({
    id: ulid(),
    runId: run.id,
    functionId: run.functionId,
    kind: "sleep",
    stepId: op.id,
    dedupeKey: itemKeys.sleep(run.id, op.id),
    payload: { name: op.displayName ?? null, until: until.toISOString() },
    runAt: until,
  });
  return {};
};

/** WaitForEvent: record the wait (event name, CEL `if`, expiry) and its timeout. */
const waitForEvent: OpHandler = async (ctx, { tx, run }, op) => {
  if (await tx.hasStep(run.id, op.id)) return {};
  const eventName =
    typeof op.name === "string" && op.name ? op.name : typeof op.opts?.event === "string" ? op.opts.event : "";
  const expression = typeof op.opts?.if === "string" && op.opts.if.trim() ? op.opts.if : null;
  const timeout = typeof op.opts?.timeout === "string" ? op.opts.timeout : null;
  let expiresAt: Date | null;
  try {
    if (!eventName) throw new Error("no event name");
    if (expression) compileExpression(expression);
    expiresAt = timeout ? resolveInstant(timeout, ctx.now()) : null;
  } catch (e) {
    const why = e instanceof ExpressionError ? e.message : `unreadable WaitForEvent: ${(e as Error).message}`;
    await failRun(ctx, tx, run, { name: "UnsupportedOpError", message: `executor: ${why}` });
    return { ended: true };
  }
  const inserted = await tx.insertWait({
    id: ulid(),
    runId: run.id,
    stepId: op.id,
    kind: "event",
    eventName,
    expression,
    childRunId: null,
    expiresAt,
  });
  if (inserted && expiresAt) {
    await tx.enqueue({
      id: ulid(),
      runId: run.id,
      functionId: run.functionId,
      kind: "wait_timeout",
      stepId: op.id,
      dedupeKey: itemKeys.timeout(run.id, op.id),
      payload: { name: op.displayName ?? null, eventName },
      runAt: expiresAt,
    });
  }
  return {};
};

/** InvokeFunction: start a child run with an inngest/function.invoked event; the parent waits on it. */
const invokeFunction: OpHandler = async (ctx, { tx, run }, op, name) => {
  if (await tx.hasStep(run.id, op.id)) return {};
  const target = typeof op.opts?.function_id === "string" ? op.opts.function_id : "";
  const payload = (op.opts?.payload ?? {}) as { data?: Record<string, unknown>; v?: string };
  const timeout = typeof op.opts?.timeout === "string" && op.opts.timeout ? op.opts.timeout : null;
  const fns = await tx.listFunctions();
  if (!fns.some((f) => f.id === target)) {
    const committed = await tx.insertStep(run.id, {
      stepId: op.id,
      op: "InvokeFunction",
      name,
      error: { name: "Error", message: `executor: step.invoke target "${target}" is not a registered function` },
    });
    return { committed };
  }
  const childRunId = ulid();
  const expiresAt = timeout ? resolveInstant(timeout, ctx.now()) : null;
  const inserted = await tx.insertWait({
    id: ulid(),
    runId: run.id,
    stepId: op.id,
    kind: "invoke",
    eventName: null,
    expression: null,
    childRunId,
    expiresAt,
  });
  if (!inserted) return {};
  const childEventId = ulid();
  const childEvent: EventPayload = {
    name: INTERNAL_EVENTS.FunctionInvoked,
    data: { ...(payload.data ?? {}) },
    id: childEventId,
    ts: ctx.now().getTime(),
    ...(payload.v ? { v: payload.v } : {}),
  };
  await tx.insertEvent({ id: childEventId, externalId: null, name: childEvent.name, payload: childEvent });
  await tx.createRun({
    id: childRunId,
    functionId: target,
    event: childEvent,
    eventId: childEventId,
    parentRunId: run.id,
    parentStepId: op.id,
  });
  await tx.requestCall(childRunId, target, ctx.now(), ulid());
  if (expiresAt) {
    await tx.enqueue({
      id: ulid(),
      runId: run.id,
      functionId: run.functionId,
      kind: "wait_timeout",
      stepId: op.id,
      dedupeKey: itemKeys.timeout(run.id, op.id),
      payload: { name: op.displayName ?? null, childRunId },
      runAt: expiresAt,
    });
  }
  return {};
};

const nothing: OpHandler = async () => ({});

/** Every supported op but StepNotFound (refused below: the whole call is retried). */
const HANDLERS: Record<Exclude<SupportedOp, "StepNotFound">, OpHandler> = {
  StepRun: stepRan,
  Step: stepRan,
  StepFailed: stepFailed,
  StepError: stepError,
  StepPlanned: stepPlanned,
  Sleep: sleep,
  WaitForEvent: waitForEvent,
  InvokeFunction: invokeFunction,
  RunComplete: nothing, // handled after the other ops
};

/** Ops the answer cannot be applied with: an op this executor does not know, or StepNotFound. */
async function refuse(ctx: ExecutorContext, input: OpsInput): Promise<boolean> {
  const { tx, run, result, retried } = input;
  const unsupported = result.ops.find((o) => !isSupportedOp(o.op));
  if (unsupported) {
    const handled = "StepRun, StepPlanned, StepError, StepFailed, Sleep, WaitForEvent, InvokeFunction, RunComplete";
    const err = new UnsupportedOpError(
      `executor: unsupported op "${unsupported.op}" (step "${opName(unsupported) ?? unsupported.id}"); the embedded executor handles ${handled}`,
    );
    await failRun(ctx, tx, run, { name: err.name, message: err.message });
    return true;
  }
  const notFound = result.ops.find((o) => o.op === "StepNotFound");
  if (notFound) {
    // retried as a whole call (retryPlan) until out of attempts
    if (!retried)
      await failRun(ctx, tx, run, {
        name: "StepNotFoundError",
        message: `executor: the SDK could not find step ${notFound.id}`,
      });
    return true;
  }
  return false;
}

export async function applyOps(ctx: ExecutorContext, input: OpsInput): Promise<void> {
  if (await refuse(ctx, input)) return;
  const { tx, run, item, result } = input;
  const ops = result.ops;
  let committed = false;
  let raceMode = false;
  for (const op of ops) {
    const out = await (HANDLERS[op.op as keyof typeof HANDLERS] ?? nothing)(ctx, input, op, opName(op));
    if (out.ended) return;
    if (out.committed) committed = true;
    if (out.race) raceMode = true;
  }

  const complete = ops.find((o) => o.op === "RunComplete");
  if (complete) {
    await completeRun(ctx, tx, run, complete.data ?? null);
    return;
  }
  if (ops.length > 1 || ops.some((o) => o.op === "StepPlanned")) {
    if (!run.disableImmediateExecution) await tx.updateRun(run.id, { disableImmediateExecution: true });
  }
  if (!committed) return;
  // V2 ("optimize parallelism"): while sibling planned steps are still outstanding, their
  // completion will ask again; races (parallelMode "race") and V1 SDKs want every result now.
  if (item.kind === "step" && result.version !== 1 && !raceMode) {
    if ((await tx.countItems(run.id, "step", item.id)) > 0) return;
  }
  await tx.requestCall(run.id, run.functionId, ctx.now(), ulid());
}
