// Attempts and backoff: how many times a call or a step may run, and when the next attempt is due.
import type { CallResult } from "../protocol/wire.ts";
import type { FunctionConfig, QueueItem } from "../store/store.ts";

/** Inngest-like exponential backoff with jitter: ~1 s, 2 s, 4 s ... capped at 5 min. */
export function defaultBackoff(attempt: number): number {
  const base = Math.min(1000 * 2 ** Math.max(0, attempt - 1), 300_000);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** The SDK reports `retries` (default 3) as steps.step.retries.attempts; attempts = retries + 1. */
export function maxAttemptsOf(config: FunctionConfig): number {
  const retries = config.steps?.step?.retries?.attempts;
  return (typeof retries === "number" && retries >= 0 ? retries : 3) + 1;
}

/**
 * Whether the item itself is kept for another attempt (a function-level error, StepNotFound, or the
 * item's own step answering StepError), and when: Retry-After if the SDK sent one, else the backoff.
 */
export function retryPlan(
  item: QueueItem,
  result: CallResult,
  maxAttempts: number,
  now: Date,
  backoff: (attempt: number) => number,
): { runAt: Date; attempt: number } | undefined {
  const next = item.attempt + 1;
  if (next >= maxAttempts) return undefined;
  const delay = (r: { retryAfterMs?: number }) => new Date(now.getTime() + (r.retryAfterMs ?? backoff(next)));
  if (result.kind === "error" && result.retriable) return { runAt: delay(result), attempt: next };
  if (result.kind === "ops") {
    if (result.ops.some((o) => o.op === "StepNotFound")) return { runAt: delay(result), attempt: next };
    if (item.kind === "step" && result.ops.some((o) => o.op === "StepError" && o.id === item.stepId)) {
      return { runAt: delay(result), attempt: next };
    }
  }
  return undefined;
}
