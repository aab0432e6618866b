// The wallet: balance, ledger (kind filter, cursor pages) and the operator's top-up.
import { operatorBalance, operatorLedger, operatorTopUp } from "@cua/core/console/operator-wallet";
import { z } from "zod";
import { consoleProcedure } from "../../trpc/console-procedures.ts";
import { router } from "../../trpc/init.ts";
import { LedgerInput, LedgerPage, TopUpInput } from "./console.types.ts";

export const consoleWalletRouter = router({
  balance: consoleProcedure
    .input(z.void())
    .output(z.object({ balance_credits: z.number().int().describe("spendable credits") }))
    .query(({ ctx }) => operatorBalance(ctx.deps, ctx.operator)),
  ledger: consoleProcedure
    .input(LedgerInput)
    .output(LedgerPage)
    .query(({ ctx, input }) =>
      operatorLedger(ctx.deps, ctx.operator, {
        kind: input.kind,
        limit: input.limit,
        cursor: input.cursor ?? undefined,
      }),
    ),
  topUp: consoleProcedure
    .input(TopUpInput)
    .output(
      z.object({
        balance_credits: z.number().int().describe("balance after the top-up"),
        credits: z.number().int().describe("credits added"),
        note: z.string().describe("the note recorded in the ledger"),
      }),
    )
    .mutation(({ ctx, input }) => operatorTopUp(ctx.deps, ctx.operator, input)),
});
