// The wallet in the console: balance, ledger and the operator's top-up (operator-only: no /v1 route).
import { z } from "zod";
import { Timestamp } from "../operations/common-schemas.ts";
import { defineOperation } from "../operations/define.ts";
import { ledgerPage, MAX_TOPUP_CREDITS, operatorTopUp, walletBalance } from "./ledger.ts";

const LedgerKind = z.enum(["topup", "reserve", "capture", "release", "refund"]).describe("kind of ledger entry");

const LedgerEntry = z.object({
  id: z.string().describe("entry id (monotonic)"),
  kind: z.string().describe("topup, reserve, capture, release or refund"),
  delta: z.number().int().describe("signed change of the spendable balance"),
  amount: z.number().int().describe("credits the entry concerns"),
  balance_after: z.number().int().describe("balance after the entry"),
  reservation_id: z.string().nullable().describe("reservation the entry settles"),
  request_id: z.string().nullable().describe("request that caused it"),
  note: z.string().nullable().describe("operator note (top-ups)"),
  created_at: Timestamp,
});

export const walletBalanceOp = defineOperation({
  id: "wallet.balance",
  method: "GET",
  path: null,
  input: z.void(),
  output: z.object({ balance_credits: z.number().int().describe("spendable credits") }),
  docs: { tags: ["Account"], summary: "Wallet balance", description: "The account's spendable credits." },
  console: "operator-only",
  handler: (ctx) => walletBalance(ctx.deps, ctx.caller),
});

export const walletLedgerOp = defineOperation({
  id: "wallet.ledger",
  method: "GET",
  path: null,
  input: z.strictObject({
    kind: LedgerKind.optional().describe("only entries of this kind"),
    limit: z.number().int().min(1).max(200).optional().describe("page size, 1 to 200 (default 50)"),
    cursor: z.string().max(32).nullish().describe("next_cursor of the previous page"),
    direction: z.enum(["forward", "backward"]).optional().describe("sent by tRPC's infinite-query client; ignored"),
  }),
  output: z.object({
    entries: z.array(LedgerEntry).describe("newest first"),
    next_cursor: z.string().nullable().describe("cursor of the next page, or null"),
    has_more: z.boolean().describe("whether older entries exist"),
  }),
  errors: ["INVALID_STATUS_FILTER", "INVALID_LIMIT", "INVALID_CURSOR"],
  docs: { tags: ["Account"], summary: "Wallet ledger", description: "Ledger entries, newest first, cursor pages." },
  console: "operator-only",
  handler: (ctx, input) =>
    ledgerPage(ctx.deps, ctx.caller, { kind: input.kind, limit: input.limit, cursor: input.cursor ?? undefined }),
});

export const walletTopUpOp = defineOperation({
  id: "wallet.topUp",
  method: "POST",
  path: null,
  input: z.strictObject({
    credits: z.number().int().min(1).max(MAX_TOPUP_CREDITS).describe("credits to add (1 credit = $0.01)"),
    note: z.string().max(200).optional().describe("note recorded in the ledger after the operator's email"),
  }),
  output: z.object({
    balance_credits: z.number().int().describe("balance after the top-up"),
    credits: z.number().int().describe("credits added"),
    note: z.string().describe("the note recorded in the ledger"),
  }),
  docs: {
    tags: ["Account"],
    summary: "Top up the wallet",
    description: "An operator's top-up, recorded in the ledger with a note naming the console user.",
  },
  console: "operator-only",
  handler: (ctx, input) => operatorTopUp(ctx.deps, ctx.caller, input),
});
