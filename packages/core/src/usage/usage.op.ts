import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { usageSummary } from "./usage.ts";

export const UsageOutput = z.object({
  period: z.string().describe("YYYY-MM"),
  mode: z.enum(["live", "test"]).describe("the caller's mode"),
  credits_charged: z.number().int().describe("credits charged in the period"),
  cost_cents: z.number().int().describe("equal to credits_charged (1 credit = $0.01)"),
  requests: z.number().int().describe("authenticated requests in the period"),
  by_endpoint: z
    .array(z.object({ endpoint: z.string(), requests: z.number().int(), credits_charged: z.number().int() }))
    .describe("per endpoint"),
  wallet: z.object({ balance_credits: z.number().int().describe("current wallet balance") }),
  // DECISIONS.md "Compatibility amendments (2026-11-25)": the commercial contract's names
  total_requests: z.number().int().describe("= requests"),
  total_credits: z.number().int().describe("= credits_charged"),
  total_cost_cents: z.number().int().describe("= cost_cents"),
  breakdown: z
    .record(
      z.string(),
      z.object({ requests: z.number().int(), credits: z.number().int(), cost_cents: z.number().int() }),
    )
    .describe('per endpoint ("POST /v1/predict": {requests, credits, cost_cents}); the same figures as by_endpoint'),
  balance: z.number().int().describe("wallet balance in credits (= wallet.balance_credits)"),
  wallet_balance_cents: z.number().int().describe("wallet balance in cents (1 credit = $0.01)"),
  wallet_balance_usd: z.string().describe('wallet balance in dollars, two decimals ("12.34")'),
});

export const getUsageOp = defineOperation({
  id: "usage.get",
  method: "GET",
  path: "/usage",
  scope: "usage",
  input: z.object({ period: z.string().optional().describe("YYYY-MM, default the current month (UTC)") }),
  output: UsageOutput,
  errors: ["INVALID_PERIOD"],
  docs: {
    tags: ["Account"],
    summary: "Usage summary",
    description: "Requests and credits by endpoint for a month of the caller's mode.",
  },
  console: "shared",
  mcp: { tool: "get_usage", group: "account" },
  // the recorder's unwritten requests count without a flush (usageSummary, UsageRecorder.readWithPending)
  handler: (ctx, input) =>
    usageSummary(ctx.deps, { accountId: ctx.caller.accountId, mode: ctx.caller.mode, period: input.period }),
});
