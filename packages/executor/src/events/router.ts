// The event router: records each event and, in the same transaction, (1) resumes the waitForEvent
// waits it matches, (2) cancels the runs whose cancelOn it matches, (3) starts one run per function
// whose trigger it matches. An event id given by the sender is an idempotency key: a second event
// with the same id is recorded as seen and routes nothing.
import type { ExecutorContext } from "../context.ts";
import { cancelRun } from "../runner/endings.ts";
import { isIsoDate, parseDuration } from "../scheduler/duration.ts";
import { ulid } from "../store/ids.ts";
import { itemKeys } from "../store/keys.ts";
import { type EventPayload, type FunctionRecord, isActiveStatus, type StoreTx } from "../store/store.ts";
import type { SendEventInput, SendResult } from "../types.ts";
import { expressionMatches } from "./expression.ts";

/** An event trigger matches its event name exactly, or by prefix when it ends in "*" ("app/*"). */
export function triggerMatchesName(trigger: string, name: string): boolean {
  return trigger.endsWith("*") ? name.startsWith(trigger.slice(0, -1)) : trigger === name;
}

/** An expression that cannot be evaluated does not match (and is logged). */
function safeMatches(ctx: ExecutorContext, expr: string | null | undefined, vars: Record<string, unknown>): boolean {
  try {
    return expressionMatches(expr, vars);
  } catch (e) {
    ctx.log.warn(`expression cannot be evaluated: ${(e as Error).message}`);
    return false;
  }
}

/** The event as functions receive it: data defaults to {}, id to the internal id, ts to now. */
export function normalizeEvent(input: SendEventInput, internalId: string, now: Date): EventPayload {
  if (!input || typeof input !== "object") throw new Error("executor: an event must be an object");
  if (typeof input.name !== "string" || input.name.trim() === "") throw new Error("executor: an event needs a name");
  const data = input.data ?? {};
  if (typeof data !== "object" || data === null || Array.isArray(data))
    throw new Error(`executor: event "${input.name}" data must be an object`);
  return { ...input, name: input.name, data, id: input.id ?? internalId, ts: input.ts ?? now.getTime() };
}

/** 1. waits (waitForEvent) registered before this event: memoize the event and ask the SDK again */
async function resumeWaits(ctx: ExecutorContext, tx: StoreTx, event: EventPayload): Promise<void> {
  for (const w of await tx.waitsForEvent(event.name)) {
    if (!safeMatches(ctx, w.expression, { event: w.runEvent, async: event })) continue;
    const run = await tx.lockRun(w.runId);
    if (!run || !isActiveStatus(run.status)) continue;
    if (!(await tx.deleteWait(w.runId, w.stepId))) continue;
    await tx.insertStep(run.id, { stepId: w.stepId, op: "WaitForEvent", name: w.eventName, data: event });
    await tx.deleteItemByKey(itemKeys.timeout(run.id, w.stepId));
    await tx.requestCall(run.id, run.functionId, ctx.now(), ulid());
  }
}

/** 2. cancelOn: active runs of functions with a matching rule (event name, `if`, still within `timeout`) */
async function applyCancelOn(
  ctx: ExecutorContext,
  tx: StoreTx,
  fns: FunctionRecord[],
  event: EventPayload,
): Promise<void> {
  const cancellers = fns.filter((f) => (f.config.cancel ?? []).some((c) => c.event === event.name));
  if (cancellers.length === 0) return;
  const byId = new Map(cancellers.map((f) => [f.id, f]));
  for (const run of await tx.activeRunsOf(cancellers.map((f) => f.id))) {
    const rules = (byId.get(run.functionId)?.config.cancel ?? []).filter((c) => c.event === event.name);
    const hit = rules.some((c) => {
      if (c.timeout) {
        const until = isIsoDate(c.timeout)
          ? new Date(c.timeout)
          : new Date(run.createdAt.getTime() + parseDuration(c.timeout));
        if (ctx.now() > until) return false;
      }
      return safeMatches(ctx, c.if, { event: run.event, async: event });
    });
    if (!hit) continue;
    const locked = await tx.lockRun(run.id);
    if (locked && isActiveStatus(locked.status)) await cancelRun(ctx, tx, locked, `cancelled by event "${event.name}"`);
  }
}

/** 3. triggers: one new run (and its first discovery call) per function the event triggers */
async function startTriggeredRuns(
  ctx: ExecutorContext,
  tx: StoreTx,
  fns: FunctionRecord[],
  event: EventPayload,
  eventId: string,
): Promise<string[]> {
  const runIds: string[] = [];
  for (const f of fns) {
    const hit = (f.config.triggers ?? []).some(
      (t) =>
        typeof t.event === "string" &&
        triggerMatchesName(t.event, event.name) &&
        safeMatches(ctx, t.expression, { event }),
    );
    if (!hit) continue;
    const runId = ulid();
    await tx.createRun({ id: runId, functionId: f.id, event, eventId });
    await tx.requestCall(runId, f.id, ctx.now(), ulid());
    runIds.push(runId);
  }
  return runIds;
}

/** Record and route events inside the caller's transaction. */
export async function ingest(ctx: ExecutorContext, tx: StoreTx, inputs: SendEventInput[]): Promise<SendResult> {
  const ids: string[] = [];
  const runIds: string[] = [];
  const fns = await tx.listFunctions();
  for (const input of inputs) {
    const internalId = ulid();
    const event = normalizeEvent(input, internalId, ctx.now());
    ids.push(internalId);
    const fresh = await tx.insertEvent({
      id: internalId,
      externalId: input.id ?? null,
      name: event.name,
      payload: event,
    });
    if (!fresh) continue;
    await resumeWaits(ctx, tx, event);
    await applyCancelOn(ctx, tx, fns, event);
    runIds.push(...(await startTriggeredRuns(ctx, tx, fns, event, internalId)));
  }
  return { ids, runIds };
}
