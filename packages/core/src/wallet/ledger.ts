// The wallet as the console shows it: balance, the ledger (filter by kind, newest first, cursor pages)
// and the operator's top-up, recorded in the ledger with a note naming the console user.

import { CoreError, validationError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { type Caller, requireOperator } from "../operations/caller.ts";
import { getBalance, type LedgerEntry, listLedger, topUp } from "./wallet.ts";

export const LEDGER_KINDS = ["topup", "reserve", "capture", "release", "refund"] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];
/** the most one top-up may add (the balance is a 32-bit integer of credits) */
export const MAX_TOPUP_CREDITS = 10_000_000;

export async function walletBalance(deps: CoreDeps, p: Principal): Promise<{ balance_credits: number }> {
  return { balance_credits: await getBalance(deps, p.accountId) };
}

/** An operator-only action: the note names the signed-in console user. */
export async function operatorTopUp(
  deps: CoreDeps,
  caller: Caller,
  input: { credits: number; note?: string },
): Promise<{ balance_credits: number; credits: number; note: string }> {
  const op = requireOperator(caller);
  if (!Number.isSafeInteger(input.credits) || input.credits < 1 || input.credits > MAX_TOPUP_CREDITS) {
    throw validationError("body.credits", `must be an integer from 1 to ${MAX_TOPUP_CREDITS}`);
  }
  const extra = input.note?.trim();
  const note = `console top-up by ${op.email}${extra ? `: ${extra}` : ""}`;
  const r = await topUp(deps, { accountId: caller.accountId, credits: input.credits, note });
  return { balance_credits: r.balance, credits: input.credits, note };
}

export interface LedgerPage {
  entries: LedgerEntry[];
  next_cursor: string | null;
  has_more: boolean;
}

export async function ledgerPage(
  deps: CoreDeps,
  p: Principal,
  input: { kind?: string; limit?: number; cursor?: string },
): Promise<LedgerPage> {
  if (input.kind !== undefined && !(LEDGER_KINDS as readonly string[]).includes(input.kind)) {
    throw new CoreError("INVALID_STATUS_FILTER", `kind must be one of ${LEDGER_KINDS.join(", ")}.`);
  }
  const limit = input.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new CoreError("INVALID_LIMIT");
  let before: bigint | undefined;
  if (input.cursor !== undefined) {
    if (!/^[1-9][0-9]{0,18}$/.test(input.cursor)) throw new CoreError("INVALID_CURSOR");
    before = BigInt(input.cursor);
  }
  const rows = await listLedger(deps, { accountId: p.accountId, kind: input.kind, limit: limit + 1, before });
  const has_more = rows.length > limit;
  const entries = rows.slice(0, limit);
  return { entries, has_more, next_cursor: has_more ? entries[entries.length - 1]!.id : null };
}
