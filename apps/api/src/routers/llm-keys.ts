import { deleteLlmKey, listLlmKeys, putLlmKey } from "@cua/core/llm-keys/llm-keys";
import { z } from "zod";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";
import { Timestamp } from "./common.types.ts";

const Provider = z.string().describe("anthropic or openai");

export const llmKeysRouter = router({
  list: apiProcedure
    .meta({
      scope: "llm_keys",
      errors: ["FEATURE_NOT_AVAILABLE"],
      openapi: {
        method: "GET",
        path: "/llm/keys",
        tags: ["Account"],
        summary: "List stored provider keys",
        description: "Live keys only. Metadata only: the key itself is never returned.",
      },
    })
    .input(z.void())
    .output(
      z.object({
        keys: z.array(
          z.object({
            provider: z.string().describe("anthropic or openai"),
            key_fingerprint: z.string().describe("first 16 hex characters of SHA-256 of the key"),
            created_at: Timestamp,
            updated_at: Timestamp,
          }),
        ),
      }),
    )
    .query(({ ctx }) => listLlmKeys(ctx.deps, ctx.principal)),
  put: apiProcedure
    .meta({
      scope: "llm_keys",
      errors: ["FEATURE_NOT_AVAILABLE", "LLM_PROVIDER_UNSUPPORTED"],
      openapi: {
        method: "PUT",
        path: "/llm/keys/{provider}",
        tags: ["Account"],
        summary: "Store a provider key",
        description: "An upsert; encrypted at rest (AES-256-GCM envelope). Checks the key's form only.",
      },
    })
    .input(z.strictObject({ provider: Provider, api_key: z.string().describe("the provider API key") }))
    .output(
      z.object({
        provider: z.string().describe("provider"),
        key_fingerprint: z.string().describe("first 16 hex characters of SHA-256 of the key"),
        stored: z.literal(true),
      }),
    )
    .mutation(({ ctx, input }) => putLlmKey(ctx.deps, ctx.principal, input.provider, input.api_key)),
  delete: apiProcedure
    .meta({
      scope: "llm_keys",
      errors: ["FEATURE_NOT_AVAILABLE", "LLM_PROVIDER_UNSUPPORTED", "LLM_KEY_NOT_FOUND"],
      openapi: {
        method: "DELETE",
        path: "/llm/keys/{provider}",
        tags: ["Account"],
        summary: "Delete a stored provider key",
        description: "Stops future lookups; snapshots held by active runs and sessions are not revoked.",
      },
    })
    .input(z.object({ provider: Provider }))
    .output(z.object({ deleted: z.literal(true) }))
    .mutation(({ ctx, input }) => deleteLlmKey(ctx.deps, ctx.principal, input.provider)),
});
