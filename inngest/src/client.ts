// The Inngest client and the app's typed events. Events carry ids only: a function loads what it
// needs through core (one core call per step), so an event never holds a stale copy of a record.
//
// Production: the SDK reads INNGEST_EVENT_KEY, INNGEST_SIGNING_KEY and INNGEST_BASE_URL (a
// self-hosted `inngest start`) from the environment, or apps/api passes them explicitly through
// createInngestClient(). Embedded (the default): the executor in ./executor runs these same
// functions, and `executor.client` / `executor.send()` deliver events to it. See docs/executor.md.
import { eventType, Inngest, staticSchema } from "inngest";

export const APP_ID = "cua";

export interface InngestClientOptions {
  eventKey?: string;
  signingKey?: string;
  signingKeyFallback?: string;
  /** a self-hosted Inngest server, e.g. http://inngest:8288 */
  baseUrl?: string;
  /** talk to an Inngest dev server (no signatures) */
  isDev?: boolean;
  /** where the SDK logs (e.g. function errors); default: the SDK's console logger */
  logger?: {
    info(...a: unknown[]): void;
    warn(...a: unknown[]): void;
    error(...a: unknown[]): void;
    debug(...a: unknown[]): void;
  };
}

export function createInngestClient(opts: InngestClientOptions = {}): Inngest {
  return new Inngest({
    id: APP_ID,
    ...(opts.eventKey !== undefined ? { eventKey: opts.eventKey } : {}),
    ...(opts.signingKey !== undefined ? { signingKey: opts.signingKey } : {}),
    ...(opts.signingKeyFallback !== undefined ? { signingKeyFallback: opts.signingKeyFallback } : {}),
    ...(opts.baseUrl !== undefined ? { baseUrl: opts.baseUrl } : {}),
    ...(opts.isDev !== undefined ? { isDev: opts.isDev } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
  });
}

/** The client functions are created with. Whoever serves or executes them supplies the configured one. */
export const inngest = createInngestClient();

// --- task runs -------------------------------------------------------------------------------------

/** A run record was created (status queued): drive it to a terminal state. */
export const runStarted = eventType("run/started", { schema: staticSchema<{ run_id: string }>() });
/** POST /v1/runs/{id}/resume accepted for a run awaiting a human. */
export const runResumed = eventType("run/resumed", {
  schema: staticSchema<{ run_id: string; note?: string | null }>(),
});
/** POST /v1/runs/{id}/cancel: stops the run's function (cancelOn, matched by run_id). */
export const runCancelled = eventType("run/cancelled", { schema: staticSchema<{ run_id: string }>() });
/** The run-task function ended (the run is terminal): stops the run's deadline function. */
export const runFinished = eventType("run/finished", { schema: staticSchema<{ run_id: string }>() });
/** A callback delivery was queued (run_callback_deliveries): deliver it. */
export const runCallback = eventType("run/callback", { schema: staticSchema<{ delivery_id: string }>() });

// --- workflow runs -----------------------------------------------------------------------------------

export const workflowRunStarted = eventType("workflow-run/started", {
  schema: staticSchema<{ workflow_run_id: string }>(),
});
/** A human_approval step was answered, or a paused workflow run was resumed. */
export const workflowRunResumed = eventType("workflow-run/resumed", {
  schema: staticSchema<{ workflow_run_id: string; step_id?: string | null; note?: string | null }>(),
});
export const workflowRunCancelled = eventType("workflow-run/cancelled", {
  schema: staticSchema<{ workflow_run_id: string }>(),
});

// --- schedules -----------------------------------------------------------------------------------------

/** A schedule fired (by its timer, run-now, a webhook trigger or a chain). */
export const scheduleFired = eventType("schedule/fired", {
  schema: staticSchema<{ schedule_id: string; trigger: "timer" | "manual" | "webhook" | "chain"; fired_at: string }>(),
});
/** A schedule was created, changed, paused, resumed or deleted: its timer function re-reads it. */
export const scheduleChanged = eventType("schedule/changed", { schema: staticSchema<{ schedule_id: string }>() });

export const events = {
  runStarted,
  runResumed,
  runCancelled,
  runFinished,
  runCallback,
  workflowRunStarted,
  workflowRunResumed,
  workflowRunCancelled,
  scheduleFired,
  scheduleChanged,
} as const;
