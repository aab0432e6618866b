// What the executor's parts share: the state store, the clock, the logger, and two hooks the
// composition root (executor.ts) wires: `ingest` (the event router, which run endings use to emit
// Inngest's internal events inside their transaction) and `kick` (wake the worker loop).
import type { ExecutorStore, StoreTx } from "./store/store.ts";
import type { ExecutorLogger, SendEventInput, SendResult } from "./types.ts";

export interface ExecutorContext {
  readonly store: ExecutorStore;
  readonly log: ExecutorLogger;
  readonly now: () => Date;
  readonly workerId: string;
  /** delay before retry number `attempt`, unless the SDK sent Retry-After */
  readonly backoff: (attempt: number) => number;
  /** record events and route them (waits, cancelOn, triggers) inside the caller's transaction */
  ingest(tx: StoreTx, events: SendEventInput[]): Promise<SendResult>;
  /** new work may be due: wake the worker loop */
  kick(): void;
}

/** Inngest's own event names, emitted by the executor as the Inngest server does. */
export const INTERNAL_EVENTS = {
  FunctionFailed: "inngest/function.failed",
  FunctionFinished: "inngest/function.finished",
  FunctionCancelled: "inngest/function.cancelled",
  FunctionInvoked: "inngest/function.invoked",
  ScheduledTimer: "inngest/scheduled.timer",
} as const;

/** A finished item's lease turned out not to be ours any more: its result is discarded. */
export class LeaseLostError extends Error {
  override name = "LeaseLostError";
}
