// Metered work: reserve before, capture on success, refund on engine failure (SPEC.md "Errors", billing
// rules). An unconfirmed refund is BILLING_UNAVAILABLE; any other error releases the reservation.
import type { CoreDeps } from "../deps.ts";
import { CoreError, isCoreError } from "../errors.ts";
import { capture, refund, release, reserve } from "../wallet/wallet.ts";

export interface Charged<T> {
  result: T;
  charged: number;
  /** wallet balance after the charge; null when nothing was billed */
  remaining: number | null;
}

const REFUNDED_CODES = new Set([
  "PREDICTION_FAILED",
  "GROUNDING_FAILED",
  "UPSTREAM_TIMEOUT",
  "UPSTREAM_UNAVAILABLE",
  "LLM_KEY_INVALID",
]);

export async function withCharge<T>(
  deps: CoreDeps,
  args: { accountId: string; amount: number; billable: boolean; endpoint: string; requestId: string },
  work: () => Promise<T>,
): Promise<Charged<T>> {
  if (!args.billable || args.amount === 0) return { result: await work(), charged: 0, remaining: null };
  const r = await reserve(deps, {
    accountId: args.accountId,
    amount: args.amount,
    endpoint: args.endpoint,
    requestId: args.requestId,
  });
  let result: T;
  try {
    result = await work();
  } catch (e) {
    const engineFailure = isCoreError(e) && REFUNDED_CODES.has(e.code);
    let settled: Awaited<ReturnType<typeof refund>> = null;
    try {
      settled = engineFailure ? await refund(deps, r.id) : await release(deps, r.id);
    } catch (dbErr) {
      deps.logger.error("refund failed", { reservation: r.id, err: String(dbErr) });
    }
    if (!settled) {
      throw new CoreError(
        "BILLING_UNAVAILABLE",
        `The call failed and its refund of ${args.amount} credits could not be confirmed; reconcile with GET /v1/idempotency/{key}.`,
      );
    }
    if (engineFailure) {
      const ce = e as CoreError;
      throw new CoreError(ce.code, ce.message, ce.extras, { ...ce.headers, "X-Credits-Refunded": String(args.amount) });
    }
    throw e;
  }
  const cap = await capture(deps, r.id);
  return { result, charged: args.amount, remaining: cap?.balance ?? r.balanceAfter };
}
