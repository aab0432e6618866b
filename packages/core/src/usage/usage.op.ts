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
  handler: async (ctx, input) => {
    await ctx.deps.usage.flush();
    return usageSummary(ctx.deps, { accountId: ctx.caller.accountId, mode: ctx.caller.mode, period: input.period });
  },
});
