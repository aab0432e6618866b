// The prepaid wallet. Every change of the balance and its ledger entry are written in one transaction;
// the balance can only be decremented by a conditional UPDATE (balance >= amount), so it never goes
// below zero and concurrent reservations cannot overdraw it. Reservations settle exactly once
// (reserved -> captured | refunded | released) by a conditional status UPDATE.
import type { CoreDeps } from "../deps.ts";
import { CoreError } from "../errors.ts";
import { hex } from "../ids.ts";
import { addChargeTx } from "../usage/usage.ts";

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
  return deps.db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ balance_credits: number }[]>`
      UPDATE accounts SET balance_credits = balance_credits - ${args.amount}
      WHERE id = ${args.accountId}::uuid AND balance_credits >= ${args.amount}
      RETURNING balance_credits`;
    const row = rows[0];
    if (!row) {
      const acct = await tx.account.findUnique({ where: { id: args.accountId }, select: { balanceCredits: true } });
      throw new CoreError(
        "INSUFFICIENT_CREDITS",
        `This call costs ${args.amount} credits; the wallet holds ${acct?.balanceCredits ?? 0}.`,
        { required: args.amount, balance: acct?.balanceCredits ?? 0, suggestion: "Top up the wallet, then retry." },
      );
    }
    await tx.reservation.create({
      data: {
        id,
        accountId: args.accountId,
        amount: args.amount,
        status: "reserved",
        endpoint: args.endpoint,
        requestId: args.requestId ?? null,
        idempotencyRef: args.idempotencyRef ?? null,
      },
    });
    await tx.walletEntry.create({
      data: {
        accountId: args.accountId,
        kind: "reserve",
        delta: -args.amount,
        amount: args.amount,
        balanceAfter: row.balance_credits,
        reservationId: id,
        requestId: args.requestId ?? null,
      },
    });
    return { id, amount: args.amount, balanceAfter: row.balance_credits };
  });
}

async function settle(
  deps: CoreDeps,
  reservationId: string,
  to: "captured" | "refunded" | "released",
): Promise<{ amount: number; balance: number; accountId: string } | null> {
  return deps.db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<
      { account_id: string; amount: number; request_id: string | null; endpoint: string; settled_at: Date }[]
    >`
      UPDATE reservations SET status = ${to}, settled_at = now()
      WHERE id = ${reservationId} AND status = 'reserved'
      RETURNING account_id::text, amount, request_id, endpoint, settled_at`;
    const r = rows[0];
    if (!r) return null; // already settled: settling twice is a no-op, never a double charge or refund
    const giveBack = to === "captured" ? 0 : r.amount;
    const bal = await tx.$queryRaw<{ balance_credits: number }[]>`
      UPDATE accounts SET balance_credits = balance_credits + ${giveBack}
      WHERE id = ${r.account_id}::uuid RETURNING balance_credits`;
    const balance = bal[0]!.balance_credits;
    await tx.walletEntry.create({
      data: {
        accountId: r.account_id,
        kind: to === "captured" ? "capture" : to === "refunded" ? "refund" : "release",
        delta: giveBack,
        amount: r.amount,
        balanceAfter: balance,
        reservationId,
        requestId: r.request_id,
      },
    });
    if (to === "captured") {
      await addChargeTx(tx, { accountId: r.account_id, endpoint: r.endpoint, credits: r.amount, at: r.settled_at });
    }
    return { amount: r.amount, balance, accountId: r.account_id };
  });
}

/** Charges a reservation on success. Returns the balance after, or null when it was settled already. */
export const capture = (deps: CoreDeps, reservationId: string) => settle(deps, reservationId, "captured");
/** Returns a reservation's credits after PREDICTION_FAILED / GROUNDING_FAILED (X-Credits-Refunded). */
export const refund = (deps: CoreDeps, reservationId: string) => settle(deps, reservationId, "refunded");
/** Returns a reservation's credits when the call ended before any metered work (a non-engine error). */
export const release = (deps: CoreDeps, reservationId: string) => settle(deps, reservationId, "released");

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
