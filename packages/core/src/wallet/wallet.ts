// The prepaid wallet. Every change of the balance and its ledger entry are written in one transaction;
// the balance can only be decremented by a conditional UPDATE (balance >= amount), so it never goes
// below zero and concurrent reservations cannot overdraw it. Reservations settle exactly once
// (reserved -> captured | refunded | released) by a conditional status UPDATE.

import { CoreError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import type { CoreDeps } from "../deps.ts";

export interface Reservation {
  id: string;
  amount: number;
  balanceAfter: number;
}

export async function getBalance(deps: CoreDeps, accountId: string): Promise<number> {
  const a = await deps.db.account.findUnique({ where: { id: accountId }, select: { balanceCredits: true } });
  return a?.balanceCredits ?? 0;
}

/** Holds `amount` credits before metered work; 402 INSUFFICIENT_CREDITS with required and balance otherwise. */
export async function reserve(
  deps: CoreDeps,
  args: { accountId: string; amount: number; endpoint: string; requestId?: string; idempotencyRef?: string },
): Promise<Reservation> {
  if (!Number.isSafeInteger(args.amount) || args.amount < 0) throw new Error("reserve: bad amount");
  const id = `rsv_${hex(12)}`;
  // One statement (one implicit transaction, one round trip): the account row stays locked for
  // microseconds, not for a multi-round-trip interactive transaction, so concurrent calls of one account
  // do not queue on it while holding pool connections (issue 10: the pool, not PostgreSQL, was the limit).
  const rows = await deps.db.$queryRaw<{ balance_credits: number }[]>`
    WITH debit AS (
      UPDATE accounts SET balance_credits = balance_credits - ${args.amount}::int
      WHERE id = ${args.accountId}::uuid AND balance_credits >= ${args.amount}::int
      RETURNING id, balance_credits
    ), hold AS (
      INSERT INTO reservations (id, account_id, amount, status, endpoint, request_id, idempotency_ref)
      SELECT ${id}::text, debit.id, ${args.amount}::int, 'reserved', ${args.endpoint}::text, ${args.requestId ?? null}::text,
             ${args.idempotencyRef ?? null}::text
      FROM debit
      RETURNING id
    ), entry AS (
      INSERT INTO wallet_entries (account_id, kind, delta, amount, balance_after, reservation_id, request_id)
      SELECT debit.id, 'reserve', ${-args.amount}::int, ${args.amount}::int, debit.balance_credits, hold.id, ${args.requestId ?? null}::text
      FROM debit, hold
      RETURNING id
    )
    SELECT debit.balance_credits FROM debit, entry`;
  const row = rows[0];
  if (!row) {
    const balance = await getBalance(deps, args.accountId);
    throw new CoreError(
      "INSUFFICIENT_CREDITS",
      `This call costs ${args.amount} credits; the wallet holds ${balance}.`,
      {
        required: args.amount,
        balance,
        suggestion: "Top up the wallet, then retry.",
      },
    );
  }
  return { id, amount: args.amount, balanceAfter: row.balance_credits };
}

const ENTRY_KIND = { captured: "capture", refunded: "refund", released: "release" } as const;

/**
 * Settles a hold once, in one statement: the conditional status update, the balance (credits given back
 * unless captured), the ledger entry and, for a capture, the month's usage totals (addChargeTx's rule).
 * Null when the hold was settled already: settling twice is a no-op, never a double charge or refund.
 */
async function settle(
  deps: CoreDeps,
  reservationId: string,
  to: "captured" | "refunded" | "released",
): Promise<{ amount: number; balance: number; accountId: string } | null> {
  const capturing = to === "captured";
  const rows = await deps.db.$queryRaw<{ account_id: string; amount: number; balance_credits: number }[]>`
    WITH hold AS (
      UPDATE reservations SET status = ${to}::text, settled_at = now()
      WHERE id = ${reservationId}::text AND status = 'reserved'
      RETURNING account_id, amount, request_id, endpoint, settled_at
    ), acct AS (
      UPDATE accounts SET balance_credits = balance_credits + CASE WHEN ${capturing}::boolean THEN 0 ELSE hold.amount END
      FROM hold WHERE accounts.id = hold.account_id
      RETURNING accounts.id, accounts.balance_credits
    ), entry AS (
      INSERT INTO wallet_entries (account_id, kind, delta, amount, balance_after, reservation_id, request_id)
      SELECT hold.account_id, ${ENTRY_KIND[to]}::text, CASE WHEN ${capturing}::boolean THEN 0 ELSE hold.amount END, hold.amount,
             acct.balance_credits, ${reservationId}::text, hold.request_id
      FROM hold JOIN acct ON acct.id = hold.account_id
      RETURNING id
    ), usage AS (
      INSERT INTO usage_rollups (account_id, mode, period, endpoint, requests, credits_charged)
      SELECT hold.account_id, 'live'::"KeyMode", to_char(hold.settled_at AT TIME ZONE 'UTC', 'YYYY-MM'), hold.endpoint, 0, hold.amount
      FROM hold WHERE ${capturing}::boolean AND hold.amount > 0
      ON CONFLICT (account_id, mode, period, endpoint) DO UPDATE
      SET credits_charged = usage_rollups.credits_charged + EXCLUDED.credits_charged
      RETURNING 1
    )
    SELECT hold.account_id::text, hold.amount, acct.balance_credits
    FROM hold JOIN acct ON acct.id = hold.account_id, entry`;
  const r = rows[0];
  return r ? { amount: r.amount, balance: r.balance_credits, accountId: r.account_id } : null;
}

/** Charges a reservation on success. Returns the balance after, or null when it was settled already. */
export const capture = (deps: CoreDeps, reservationId: string) => settle(deps, reservationId, "captured");
/** Returns a reservation's credits after PREDICTION_FAILED / GROUNDING_FAILED (X-Credits-Refunded). */
export const refund = (deps: CoreDeps, reservationId: string) => settle(deps, reservationId, "refunded");
/** Returns a reservation's credits when the call ended before any metered work (a non-engine error). */
export const release = (deps: CoreDeps, reservationId: string) => settle(deps, reservationId, "released");

/**
 * Refunds a hold that was captured for a result never delivered (a same-key retry, free because its
 * predecessor paid, ended in an engine failure). One statement: captured -> refunded, the credits back,
 * a `refund` ledger entry and the month's usage totals of the capture reduced. Null unless it was captured.
 */
export async function refundCaptured(
  deps: CoreDeps,
  reservationId: string,
): Promise<{ amount: number; balance: number } | null> {
  const rows = await deps.db.$queryRaw<{ amount: number; balance_credits: number }[]>`
    WITH old AS (
      SELECT settled_at AS captured_at FROM reservations WHERE id = ${reservationId}::text
    ), hold AS (
      UPDATE reservations SET status = 'refunded', settled_at = now()
      FROM old WHERE id = ${reservationId}::text AND status = 'captured'
      RETURNING account_id, amount, request_id, endpoint, old.captured_at
    ), acct AS (
      UPDATE accounts SET balance_credits = balance_credits + hold.amount
      FROM hold WHERE accounts.id = hold.account_id
      RETURNING accounts.id, accounts.balance_credits
    ), entry AS (
      INSERT INTO wallet_entries (account_id, kind, delta, amount, balance_after, reservation_id, request_id)
      SELECT hold.account_id, 'refund', hold.amount, hold.amount, acct.balance_credits, ${reservationId}::text, hold.request_id
      FROM hold JOIN acct ON acct.id = hold.account_id
      RETURNING id
    ), usage AS (
      UPDATE usage_rollups SET credits_charged = credits_charged - hold.amount
      FROM hold
      WHERE usage_rollups.account_id = hold.account_id AND usage_rollups.mode = 'live'::"KeyMode"
        AND usage_rollups.period = to_char(hold.captured_at AT TIME ZONE 'UTC', 'YYYY-MM')
        AND usage_rollups.endpoint = hold.endpoint
      RETURNING 1
    )
    SELECT hold.amount, acct.balance_credits FROM hold JOIN acct ON acct.id = hold.account_id, entry`;
  const r = rows[0];
  return r ? { amount: r.amount, balance: r.balance_credits } : null;
}

export async function topUp(
  deps: CoreDeps,
  args: { accountId: string; credits: number; note?: string; requestId?: string },
): Promise<{ balance: number }> {
  if (!Number.isSafeInteger(args.credits) || args.credits <= 0) {
    throw new CoreError("VALIDATION_ERROR", "credits must be a positive integer", {
      details: [{ path: "credits", message: "must be a positive integer" }],
    });
  }
  return deps.db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ balance_credits: number }[]>`
      UPDATE accounts SET balance_credits = balance_credits + ${args.credits}
      WHERE id = ${args.accountId}::uuid RETURNING balance_credits`;
    const row = rows[0];
    if (!row) throw new CoreError("NOT_FOUND", "No such account.");
    await tx.walletEntry.create({
      data: {
        accountId: args.accountId,
        kind: "topup",
        delta: args.credits,
        amount: args.credits,
        balanceAfter: row.balance_credits,
        note: args.note ?? null,
        requestId: args.requestId ?? null,
      },
    });
    return { balance: row.balance_credits };
  });
}

export interface LedgerEntry {
  id: string;
  kind: string;
  delta: number;
  amount: number;
  balance_after: number;
  reservation_id: string | null;
  request_id: string | null;
  note: string | null;
  created_at: string;
}

export async function listLedger(
  deps: CoreDeps,
  args: { accountId: string; kind?: string; limit?: number; before?: bigint },
): Promise<LedgerEntry[]> {
  const rows = await deps.db.walletEntry.findMany({
    where: {
      accountId: args.accountId,
      ...(args.kind ? { kind: args.kind } : {}),
      ...(args.before ? { id: { lt: args.before } } : {}),
    },
    orderBy: { id: "desc" },
    take: args.limit ?? 50,
  });
  return rows.map((r) => ({
    id: r.id.toString(),
    kind: r.kind,
    delta: r.delta,
    amount: r.amount,
    balance_after: r.balanceAfter,
    reservation_id: r.reservationId,
    request_id: r.requestId,
    note: r.note,
    created_at: r.createdAt.toISOString(),
  }));
}

/** The ledger invariant: the balance equals the sum of every entry's delta. */
export async function ledgerSum(deps: CoreDeps, accountId: string): Promise<number> {
  const r = await deps.db.walletEntry.aggregate({ where: { accountId }, _sum: { delta: true } });
  return r._sum.delta ?? 0;
}
