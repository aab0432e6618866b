// Cron triggers as queue items: one `cron` item per (function, cron expression), keyed so that at
// most one exists. A tick starts a run with an inngest/scheduled.timer event and queues the next tick
// after now: ticks missed while no executor ran fire once, not once per missed tick.
import { type ExecutorContext, INTERNAL_EVENTS, LeaseLostError } from "../context.ts";
import { ulid } from "../store/ids.ts";
import { itemKeys } from "../store/keys.ts";
import { type EventPayload, type FunctionRecord, leaseOf, type NewQueueItem, type QueueItem } from "../store/store.ts";
import { nextCronTime, parseCron } from "./cron.ts";
import { parseDuration } from "./duration.ts";

/** When a cron item fires next: the next matching minute after `after`, plus the trigger's jitter. */
export function nextCronItem(functionId: string, cron: string, jitter: string | null, after: Date): NewQueueItem {
  const at = nextCronTime(parseCron(cron), after);
  const jitterMs = jitter ? Math.floor(Math.random() * parseDuration(jitter)) : 0;
  return {
    id: ulid(),
    runId: `cron:${functionId}`,
    functionId,
    kind: "cron",
    dedupeKey: itemKeys.cron(functionId, cron),
    payload: { cron, jitter, scheduledFor: at.toISOString() },
    runAt: new Date(at.getTime() + jitterMs),
  };
}

/** The first tick of every cron trigger of these functions. */
export function cronItemsOf(records: FunctionRecord[], now: Date): NewQueueItem[] {
  return records.flatMap((r) =>
    (r.config.triggers ?? []).flatMap((t) =>
      typeof t.cron === "string"
        ? [nextCronItem(r.id, t.cron, typeof t.jitter === "string" && t.jitter ? t.jitter : null, now)]
        : [],
    ),
  );
}

/** A cron tick: start a run with an inngest/scheduled.timer event and schedule the next tick. */
export async function fireCron(ctx: ExecutorContext, item: QueueItem): Promise<void> {
  const cron = typeof item.payload?.cron === "string" ? item.payload.cron : "";
  const jitter = typeof item.payload?.jitter === "string" ? item.payload.jitter : null;
  let runId: string | null = null;
  await ctx.store.transaction(async (tx) => {
    if (!(await tx.finishItem(item.id, leaseOf(item), ctx.now()))) throw new LeaseLostError(item.id);
    const fn = (await tx.listFunctions()).find((f) => f.id === item.functionId);
    if (!fn || !(fn.config.triggers ?? []).some((t) => t.cron === cron)) return; // trigger gone
    const eventId = ulid();
    const scheduledFor = typeof item.payload?.scheduledFor === "string" ? Date.parse(item.payload.scheduledFor) : NaN;
    const event: EventPayload = {
      name: INTERNAL_EVENTS.ScheduledTimer,
      data: { cron },
      id: eventId,
      ts: Number.isNaN(scheduledFor) ? ctx.now().getTime() : scheduledFor,
    };
    await tx.insertEvent({ id: eventId, externalId: null, name: event.name, payload: event });
    runId = ulid();
    await tx.createRun({ id: runId, functionId: fn.id, event, eventId });
    await tx.requestCall(runId, fn.id, ctx.now(), ulid());
    // ticks missed while nothing ran are not replayed: the next one is after now
    await tx.enqueue(nextCronItem(fn.id, cron, jitter, ctx.now()));
  });
  if (runId) ctx.kick();
}
