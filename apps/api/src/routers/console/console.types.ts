// Input and output schemas of the console's procedures (served over /trpc only).
import { z } from "zod";
import { NullableTimestamp, Timestamp } from "../common.types.ts";

export const Mode = z.enum(["live", "test"]).describe("live or test mode");

export const LedgerKind = z.enum(["topup", "reserve", "capture", "release", "refund"]).describe("kind of ledger entry");

export const LedgerInput = z.strictObject({
  kind: LedgerKind.optional().describe("only entries of this kind"),
  limit: z.number().int().min(1).max(200).optional().describe("page size, 1 to 200 (default 50)"),
  cursor: z.string().max(32).nullish().describe("next_cursor of the previous page"),
  direction: z.enum(["forward", "backward"]).optional().describe("sent by tRPC's infinite-query client; ignored"),
});

export const LedgerEntry = z.object({
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

export const LedgerPage = z.object({
  entries: z.array(LedgerEntry).describe("newest first"),
  next_cursor: z.string().nullable().describe("cursor of the next page, or null"),
  has_more: z.boolean().describe("whether older entries exist"),
});

export const TopUpInput = z.strictObject({
  credits: z.number().int().min(1).max(10_000_000).describe("credits to add (1 credit = $0.01)"),
  note: z.string().max(200).optional().describe("note recorded in the ledger after the operator's email"),
});

export const UsageInput = z.strictObject({
  mode: Mode,
  period: z.string().max(7).optional().describe("YYYY-MM, default the current month (UTC)"),
});

export const ProviderKeyItem = z.object({
  provider: z.string().describe("anthropic or openai"),
  key_fingerprint: z.string().describe("first 16 hex characters of SHA-256 of the key"),
  created_at: Timestamp,
  updated_at: NullableTimestamp.describe("last replacement"),
});
