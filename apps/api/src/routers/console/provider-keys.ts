// Stored provider keys (BYOK) of the account's live mode: store or replace, list, delete.
// Only fingerprints are ever returned.
import { operatorPrincipal } from "@cua/core/console/operator-principal";
import { deleteLlmKey, listLlmKeys, putLlmKey } from "@cua/core/llm-keys/llm-keys";
import { z } from "zod";
import { consoleProcedure } from "../../trpc/console-procedures.ts";
import { router } from "../../trpc/init.ts";
import { ProviderKeyItem } from "./console.types.ts";

const Provider = z.enum(["anthropic", "openai"]).describe("anthropic or openai");

export const consoleProviderKeysRouter = router({
  list: consoleProcedure
    .input(z.void())
    .output(z.object({ keys: z.array(ProviderKeyItem).describe("stored keys, metadata only") }))
    .query(({ ctx }) => listLlmKeys(ctx.deps, operatorPrincipal(ctx.operator, "live"))),
  put: consoleProcedure
    .input(z.strictObject({ provider: Provider, api_key: z.string().max(1024).describe("the provider API key") }))
    .output(
      z.object({
        provider: z.string().describe("provider"),
        key_fingerprint: z.string().describe("first 16 hex characters of SHA-256 of the key"),
        stored: z.literal(true).describe("always true"),
      }),
    )
    .mutation(({ ctx, input }) =>
      putLlmKey(ctx.deps, operatorPrincipal(ctx.operator, "live"), input.provider, input.api_key),
    ),
  delete: consoleProcedure
    .input(z.strictObject({ provider: Provider }))
    .output(z.object({ deleted: z.literal(true).describe("always true") }))
    .mutation(({ ctx, input }) => deleteLlmKey(ctx.deps, operatorPrincipal(ctx.operator, "live"), input.provider)),
});
