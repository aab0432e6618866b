// The app's events: ONE typed definition per event (its name and a zod schema of its data), shared by
// the code that sends it and the function that receives it. Functions trigger, wait and cancel on
// these objects; senders build events with their create() (name and data checked by the compiler) and
// send them through sendAppEvents(), which also checks them at run time. No event name is written as
// a string anywhere else (inngest/test/events.test.ts proves a misspelled one fails to compile and
// to validate). The SDK validates every event a function receives against the same schema.
//
// Events carry ids only: a function loads what it needs through core (one core call per step), so an
// event never holds a stale copy of a record. Events are added here together with the functions that
// receive them (docs/executor.md lists them).
// To add one: an `eventType(name, { schema })` below and its entry in `appEvents`; a function triggers
// on the object, and senders use its create().
import { eventType } from "inngest";
import { z } from "zod";

const id = z.string().min(1);

// --- task runs (docs/runs.md "Execution") -------------------------------------------------------------

/** A run record was created (status queued): drive it to a terminal state. */
export const runStarted = eventType("run/started", { schema: z.object({ run_id: id }) });
/** POST /v1/runs/{id}/resume accepted for a run awaiting a human. */
export const runResumed = eventType("run/resumed", {
  schema: z.object({ run_id: id, note: z.string().nullable().optional() }),
});
/** POST /v1/runs/{id}/cancel: stops the run's function (cancelOn, matched by run_id). */
export const runCancelled = eventType("run/cancelled", { schema: z.object({ run_id: id }) });
/**
 * The run-task function ended (the run is terminal): stops the run's deadline function. `scheduled`: a
 * schedule started the run (schedule-settle is triggered only then); absent in events of older versions,
 * whose scheduled runs the schedule sweeper settles.
 */
export const runFinished = eventType("run/finished", {
  schema: z.object({ run_id: id, scheduled: z.boolean().optional() }),
});
/** A callback delivery was queued (run_callback_deliveries): deliver it. */
export const runCallback = eventType("run/callback", { schema: z.object({ delivery_id: id }) });

// --- schedules (docs/schedules.md "Firing") ------------------------------------------------------------

/** A schedule's timer is (re-)armed: sleep until its next_run_at. A newer generation cancels older timers. */
export const scheduleArmed = eventType("schedule/armed", {
  schema: z.object({ schedule_id: id, generation: z.number().int().min(0) }),
});

// --- workflow runs (docs/workflows.md "Execution") ------------------------------------------------------

/** A workflow run was created (status queued): drive it to a terminal state. */
export const workflowStarted = eventType("workflow/started", { schema: z.object({ workflow_run_id: id }) });
/** POST /v1/workflows/runs/{id}/resume answered the pending human_approval (the decision is in the database). */
export const workflowResumed = eventType("workflow/resumed", {
  schema: z.object({ workflow_run_id: id, resume_count: z.number().int().min(1) }),
});
/** POST /v1/workflows/runs/{id}/cancel: stops the workflow function (cancelOn, matched by workflow_run_id). */
export const workflowCancelled = eventType("workflow/cancelled", { schema: z.object({ workflow_run_id: id }) });
/** A workflow callback delivery was queued (workflow_callback_deliveries): deliver it. */
export const workflowCallback = eventType("workflow/callback", { schema: z.object({ delivery_id: id }) });

/** The catalogue: every event the app sends or receives. */
export const appEvents = {
  runStarted,
  runResumed,
  runCancelled,
  runFinished,
  runCallback,
  scheduleArmed,
  workflowStarted,
  workflowResumed,
  workflowCancelled,
  workflowCallback,
} as const;

export type AppEventType = (typeof appEvents)[keyof typeof appEvents];
export type AppEventName = AppEventType["name"];
/** An event built with a definition's create(): `{ name, data, id? }` typed by that definition. */
export type AppEvent = ReturnType<AppEventType["create"]>;

/** An event as it goes over the wire to an executor or an Inngest server. */
export interface WireEvent {
  name: string;
  data: Record<string, unknown>;
  id?: string;
}

/** Where events go: the embedded executor (`executor.send`) or an Inngest client (`client.send`). */
export interface EventSink {
  send(events: WireEvent[]): Promise<unknown>;
}

export class EventValidationError extends Error {
  override name = "EventValidationError";
}

const byName = new Map<string, AppEventType>(Object.values(appEvents).map((e) => [e.name, e]));

/** Check an event against the catalogue (its name, then its data against the schema); the plain event. */
export async function validateAppEvent(event: { name: string; data?: unknown; id?: string }): Promise<WireEvent> {
  const definition = byName.get(event.name);
  if (!definition) throw new EventValidationError(`unknown event "${event.name}": not in the catalogue (events.ts)`);
  const checked = await definition.schema["~standard"].validate(event.data);
  if (checked.issues) {
    const why = checked.issues.map((i) => `${(i.path ?? []).join(".") || "data"}: ${i.message}`).join("; ");
    throw new EventValidationError(`event "${event.name}" has invalid data: ${why}`);
  }
  return {
    name: event.name,
    data: event.data as Record<string, unknown>,
    ...(event.id !== undefined ? { id: event.id } : {}),
  };
}

/** Validate and send events built from the catalogue. */
export async function sendAppEvents(sink: EventSink, ...events: AppEvent[]): Promise<void> {
  await sink.send(await Promise.all(events.map(validateAppEvent)));
}
