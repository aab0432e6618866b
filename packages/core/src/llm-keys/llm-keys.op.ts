// Stored provider keys (BYOK) of the caller's live mode: list, store or replace, delete.
import { z } from "zod";
import { Timestamp } from "../operations/common-schemas.ts";
import { defineOperation } from "../operations/define.ts";
import { listOf } from "../operations/list.ts";
import { deleteLlmKey, listLlmKeys, putLlmKey } from "./llm-keys.ts";

const Provider = z.string().describe("anthropic or openai");

const LlmKeyItem = z.object({
  provider: z.string().describe("anthropic or openai"),
  key_fingerprint: z.string().describe("first 16 hex characters of SHA-256 of the key"),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const listLlmKeysOp = defineOperation({
  id: "llmKeys.list",
  method: "GET",
  path: "/llm/keys",
  scope: "llm_keys",
  input: z.void(),
  output: listOf(LlmKeyItem, "stored provider keys, by provider", {
    keys: z.array(LlmKeyItem).describe("the same array as data (SPEC's name)"),
  }),
  errors: ["FEATURE_NOT_AVAILABLE"],
  docs: {
    tags: ["Account"],
    summary: "List stored provider keys",
    description: "Live keys only. Metadata only: the key itself is never returned.",
  },
  console: "shared",
  handler: (ctx) => listLlmKeys(ctx.deps, ctx.caller),
});

export const putLlmKeyOp = defineOperation({
  id: "llmKeys.put",
  method: "PUT",
  path: "/llm/keys/{provider}",
  scope: "llm_keys",
  input: z.strictObject({ provider: Provider, api_key: z.string().describe("the provider API key") }),
  output: z.object({
    provider: z.string().describe("provider"),
    key_fingerprint: z.string().describe("first 16 hex characters of SHA-256 of the key"),
    stored: z.literal(true),
  }),
  errors: ["FEATURE_NOT_AVAILABLE", "LLM_PROVIDER_UNSUPPORTED"],
  docs: {
    tags: ["Account"],
    summary: "Store a provider key",
    description: "An upsert; encrypted at rest (AES-256-GCM envelope). Checks the key's form only.",
  },
  console: "shared",
  handler: (ctx, input) => putLlmKey(ctx.deps, ctx.caller, input.provider, input.api_key),
});

export const deleteLlmKeyOp = defineOperation({
  id: "llmKeys.delete",
  method: "DELETE",
  path: "/llm/keys/{provider}",
  scope: "llm_keys",
  input: z.object({ provider: Provider }),
  output: z.object({ deleted: z.literal(true) }),
  errors: ["FEATURE_NOT_AVAILABLE", "LLM_PROVIDER_UNSUPPORTED", "LLM_KEY_NOT_FOUND"],
  docs: {
    tags: ["Account"],
    summary: "Delete a stored provider key",
    description: "Stops future lookups; snapshots held by active runs and sessions are not revoked.",
  },
  console: "shared",
  handler: (ctx, input) => deleteLlmKey(ctx.deps, ctx.caller, input.provider),
});
