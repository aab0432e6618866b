// Metered work: reserve before, capture on success, refund on engine failure (SPEC.md "Errors", billing
// rules). A result is returned only after its capture committed; when the database cannot confirm a
// settlement after retries, the answer is 503 BILLING_UNAVAILABLE and the hold is left `reserved` for the
// hold sweeper (wallet/holds.ts), which releases it: no result was delivered for it (issue 10).

import { CoreError, isCoreError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";
import { IDEMPOTENCY_RETENTION_SECONDS } from "../idempotency/idempotency.ts";
import { currentIdempotencyRef } from "../idempotency/idempotency-scope.ts";
import { type SettleOutcome, settleConfirmed } from "../wallet/holds.ts";
import { getBalance, refundCaptured, release, reserve } from "../wallet/wallet.ts";
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
  const idempotencyRef = currentIdempotencyRef();
  if (idempotencyRef) {
    const paid = await settlePredecessors(deps, args.accountId, idempotencyRef);
    if (paid) {
      // An earlier execution with this Idempotency-Key was charged and its answer lost (a crash, a
      // capture whose confirmation never arrived): this execution delivers what it paid for.
      let result: T;
      try {
        result = await work();
      } catch (e) {
        // nothing was ever delivered for this key: an engine failure refunds the earlier charge
        if (!isCoreError(e) || !REFUNDED_CODES.has(e.code)) throw e;
        const back = await refundCaptured(deps, paid.id).catch(() => null);
        if (!back) {
          throw new CoreError(
            "BILLING_UNAVAILABLE",
            `The call failed and the refund of the ${paid.amount} credits an earlier attempt with this Idempotency-Key paid could not be confirmed (the database did not answer). Retry with the same key: it is not charged again.`,
            { reservation_id: paid.id },
          );
        }
        throw new CoreError(e.code, e.message, e.extras, { ...e.headers, "X-Credits-Refunded": String(paid.amount) });
      }
      return { result, charged: paid.amount, remaining: await getBalance(deps, args.accountId) };
    }
  }
  const r = await reserve(deps, {
    accountId: args.accountId,
    amount: args.amount,
    endpoint: args.endpoint,
    requestId: args.requestId,
    idempotencyRef,
  });
  let result: T;
  try {
    result = await work();
  } catch (e) {
    const engineFailure = isCoreError(e) && REFUNDED_CODES.has(e.code);
    const s = await settleConfirmed(deps, r.id, engineFailure ? "refunded" : "released");
    if (s.kind === "unconfirmed" || (s.kind === "found" && s.status === "captured")) {
      deps.logger.error("hold not settled after a failed call", { reservation: r.id, err: String(e) });
      throw unsettled(args.amount, r.id, "The call failed and the return of its");
    }
    if (engineFailure) {
      const ce = e as CoreError;
      throw new CoreError(ce.code, ce.message, ce.extras, { ...ce.headers, "X-Credits-Refunded": String(args.amount) });
    }
    throw e;
  }
  const cap = await settleConfirmed(deps, r.id, "captured");
  if (cap.kind === "settled" || (cap.kind === "found" && cap.status === "captured")) {
    return { result, charged: args.amount, remaining: cap.balance ?? r.balanceAfter };
  }
  throw await captureFailed(deps, args.amount, r.id, cap);
}

/**
 * The holds earlier executions with the same Idempotency-Key left (within the key's 24 h retention): a
 * captured one is returned (that charge pays for this execution); one still `reserved` belonged to an
 * execution that delivered nothing (it is not running: the idempotency record admits one executor) and
 * is released now instead of waiting for the sweeper.
 */
async function settlePredecessors(
  deps: CoreDeps,
  accountId: string,
  ref: string,
): Promise<{ id: string; amount: number } | null> {
  const since = new Date(deps.clock.now().getTime() - IDEMPOTENCY_RETENTION_SECONDS * 1000);
  const holds = await deps.db.reservation.findMany({
    where: { accountId, idempotencyRef: ref, createdAt: { gte: since }, status: { in: ["reserved", "captured"] } },
    select: { id: true, status: true, amount: true },
  });
  const captured = holds.find((h) => h.status === "captured");
  if (captured) return { id: captured.id, amount: captured.amount };
  for (const h of holds) {
    const s = await release(deps, h.id);
    if (!s) {
      const now = await deps.db.reservation.findUnique({ where: { id: h.id }, select: { status: true, amount: true } });
      if (now?.status === "captured") return { id: h.id, amount: now.amount }; // a late capture won the race
    }
  }
  return null;
}

/** The work succeeded but its capture could not be confirmed: no result is returned without a charge. */
async function captureFailed(deps: CoreDeps, amount: number, holdId: string, cap: SettleOutcome): Promise<CoreError> {
  if (cap.kind === "found") {
    // released by the sweeper while the call ran past the hold TTL: nothing is charged
    return new CoreError(
      "BILLING_UNAVAILABLE",
      `The call outlived its hold of ${amount} credits, which was released; nothing was charged. Retry the call.`,
      { credits_charged: 0, reservation_id: holdId },
    );
  }
  // One last release: when it commits, the outcome is certain (nothing charged).
  const rel = await settleConfirmed(deps, holdId, "released", []);
  if (rel.kind === "settled") {
    return new CoreError(
      "BILLING_UNAVAILABLE",
      `The call's charge of ${amount} credits could not be recorded (the database is overloaded); its hold was released and nothing was charged. Retry the call.`,
      { credits_charged: 0, reservation_id: holdId },
    );
  }
  deps.logger.error("capture unconfirmed; hold left for the sweeper", { reservation: holdId });
  return unsettled(amount, holdId, "The call's result was not returned because the charge of");
}

function unsettled(amount: number, holdId: string, lead: string): CoreError {
  return new CoreError(
    "BILLING_UNAVAILABLE",
    `${lead} ${amount} held credits could not be confirmed (the database did not answer). The hold is settled from the ledger by the wallet sweeper: it is released unless a capture committed, and a retry with the same Idempotency-Key is never charged for this hold.`,
    { reservation_id: holdId },
  );
}
