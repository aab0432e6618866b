// The executor's public types: its options, the Executor interface and the views it returns.
import type { Inngest, InngestFunction } from "inngest";
import type { ExecutorStore, RunFilter, RunRecord, SerializedError } from "./store/store.ts";

export interface ExecutorLogger {
  debug(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
  warn(msg: string, extra?: Record<string, unknown>): void;
  error(msg: string, extra?: Record<string, unknown>): void;
}

export interface ExecutorOptions {
  /** the app's Inngest client (the one the functions were created with) */
  client: Inngest.Any;
  functions: InngestFunction.Any[];
  store: ExecutorStore;
  /** lease owner name; defaults to a random id per executor */
  workerId?: string;
  /** SDK calls and planned steps processed at once (default 8) */
  concurrency?: number;
  /**
   * Timer items (sleep wake-ups, wait timeouts, cron ticks) processed at once, in a lane of their own so that
   * a burst of run steps does not delay them; each fired timer's next SDK call runs in the same slot
   * (default 4)
   */
  timerConcurrency?: number;
  /** how long one slot goes on with a run's next steps before leaving them to the queue (default 2000 ms) */
  chainMs?: number;
  /** longest idle wait between polls when nothing is due (default 250 ms) */
  pollIntervalMs?: number;
  /** lease length; heartbeats renew it every third of it while a call runs (default 30 s) */
  leaseMs?: number;
  /** delay before retry number `attempt` (1 = first retry), unless the SDK sent Retry-After */
  backoff?: (attempt: number) => number;
  /** key used to sign requests to the in-process handler (default: random per process) */
  signingKey?: string;
  logger?: ExecutorLogger;
  /** clock (tests) */
  now?: () => Date;
}

export interface SendEventInput {
  name: string;
  data?: Record<string, unknown>;
  /** your idempotency id: a second event with the same id triggers nothing */
  id?: string;
  ts?: number;
  v?: string;
  user?: Record<string, unknown>;
}

export interface SendResult {
  /** internal event ids, one per event, in order */
  ids: string[];
  /** runs these events started (triggers), in creation order */
  runIds: string[];
}

export interface RunStepView {
  id: string;
  name: string | null;
  op: string;
  seq: number;
  data: unknown;
  error: SerializedError | null;
  at: Date;
}

export interface RunPendingView {
  kind: "call" | "step" | "sleep" | "wait_timeout" | "event" | "invoke";
  stepId: string | null;
  name: string | null;
  /** when the item is due (sleep wake-up, retry, timeout) */
  at: Date | null;
  attempt?: number;
  eventName?: string | null;
  expression?: string | null;
  childRunId?: string | null;
}

export interface RunView extends RunRecord {
  steps: RunStepView[];
  pending: RunPendingView[];
}

export interface ExecutorHealth {
  ok: boolean;
  running: boolean;
  workerId: string;
  inFlight: number;
  lastPollAt: Date | null;
  lastError: string | null;
}

export interface Executor {
  /** the app's client re-pointed at this executor: `executor.client.send()` triggers functions here */
  readonly client: Inngest.Any;
  readonly workerId: string;
  /** sync the functions (in-band), record them, and start leasing due work */
  start(): Promise<void>;
  /** stop leasing; wait for calls in flight (up to timeoutMs), then give remaining leases back */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
  send(events: SendEventInput | SendEventInput[]): Promise<SendResult>;
  /** cancel an active run; false when it is unknown or already ended */
  cancel(runId: string, reason?: string): Promise<boolean>;
  getRun(runId: string): Promise<RunView | null>;
  listRuns(filter?: RunFilter): Promise<RunRecord[]>;
  /** resolve once the run is completed, failed or cancelled */
  waitForRun(runId: string, opts?: { timeoutMs?: number; pollMs?: number }): Promise<RunView>;
  health(): Promise<ExecutorHealth>;
  /** delete runs (with their steps) that ended before `before`, and events received before it */
  prune(before: Date): Promise<{ runs: number; events: number }>;
}
