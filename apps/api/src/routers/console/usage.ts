// Usage of a month by endpoint, for either mode (the same summary as GET /v1/usage).
import { operatorPrincipal } from "@cua/core/console/operator-principal";
import { usageSummary } from "@cua/core/usage/usage";
import { z } from "zod";
import { consoleProcedure } from "../../trpc/console-procedures.ts";
import { router } from "../../trpc/init.ts";
import { UsageInput } from "./console.types.ts";

const UsageOutput = z.object({
  period: z.string().describe("YYYY-MM"),
  mode: z.enum(["live", "test"]).describe("mode summarized"),
  credits_charged: z.number().int().describe("credits charged in the period"),
  cost_cents: z.number().int().describe("equal to credits_charged"),
  requests: z.number().int().describe("authenticated requests in the period"),
  by_endpoint: z
    .array(z.object({ endpoint: z.string(), requests: z.number().int(), credits_charged: z.number().int() }))
    .describe("per endpoint template"),
  wallet: z.object({ balance_credits: z.number().int().describe("current wallet balance") }),
});

export const consoleUsageRouter = router({
  summary: consoleProcedure
    .input(UsageInput)
    .output(UsageOutput)
    .query(async ({ ctx, input }) => {
      await ctx.deps.usage.flush();
      const p = operatorPrincipal(ctx.operator, input.mode);
      return usageSummary(ctx.deps, { accountId: p.accountId, mode: p.mode, period: input.period });
    }),
});
