import { usageSummary } from "@cua/core/usage/usage";
import { z } from "zod";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";

const UsageOutput = z.object({
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

export const usageRouter = router({
  get: apiProcedure
    .meta({
      scope: "usage",
      errors: ["INVALID_PERIOD"],
      openapi: {
        method: "GET",
        path: "/usage",
        tags: ["Account"],
        summary: "Usage summary",
        description: "Requests and credits by endpoint for a month of the caller's mode.",
      },
    })
    .input(z.object({ period: z.string().optional().describe("YYYY-MM, default the current month (UTC)") }))
    .output(UsageOutput)
    .query(async ({ ctx, input }) => {
      await ctx.deps.usage.flush();
      return usageSummary(ctx.deps, {
        accountId: ctx.principal.accountId,
        mode: ctx.principal.mode,
        period: input.period,
      });
    }),
});
