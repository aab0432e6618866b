// Which engine answers and who pays: SPEC.md "Authentication" 4 and DECISIONS.md "Engines", "Names"
// (body fields llm_provider/llm_model; headers win, and a disagreement is 422).

import { CoreError, validationError } from "@cua/base/errors";
import { SANDBOX_MODEL_ID } from "@cua/engines/models";
import type { Engine } from "@cua/engines/types";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { type LlmProvider, parseProvider, resolveStoredLlmKey } from "../llm-keys/llm-keys.ts";
import type { EnginePort } from "./engine-port.ts";

export interface LlmRequest {
  headerProvider?: string;
  headerApiKey?: string;
  headerModel?: string;
  bodyProvider?: string;
  bodyModel?: string;
}

export type EngineChoice =
  | { kind: "sandbox"; engine: Engine; provider: "managed"; model: string }
  | { kind: "managed"; engine: Engine; provider: "managed"; model: string }
  | { kind: "byok"; engine: Engine; provider: LlmProvider; model: string; apiKey: string };

/** Reads the provider intent from headers and body (no key lookup yet). */
export function readLlmIntent(r: LlmRequest): {
  provider: LlmProvider | "managed" | null;
  apiKey?: string;
  model?: string;
} {
  if (r.headerProvider && r.bodyProvider && r.headerProvider !== r.bodyProvider) {
    throw validationError("body.llm_provider", `differs from the X-LLM-Provider header (${r.headerProvider})`);
  }
  if (r.headerModel && r.bodyModel && r.headerModel !== r.bodyModel) {
    throw validationError("body.llm_model", `differs from the X-LLM-Model header (${r.headerModel})`);
  }
  const raw = r.headerProvider ?? r.bodyProvider;
  const model = r.headerModel ?? r.bodyModel;
  if (raw === undefined || raw === "") {
    if (r.headerApiKey) throw validationError("headers.x-llm-provider", "X-LLM-Api-Key needs X-LLM-Provider");
    return { provider: null, model };
  }
  const provider = raw === "managed" ? "managed" : parseProvider(raw);
  if (provider === "managed" && r.headerApiKey)
    throw validationError("headers.x-llm-api-key", "the managed engine takes no provider key");
  return { provider, apiKey: r.headerApiKey, model };
}

export async function resolveEngine(
  deps: CoreDeps & { engines: EnginePort },
  principal: Principal,
  r: LlmRequest,
): Promise<EngineChoice> {
  const intent = readLlmIntent(r);
  if (intent.provider === null || intent.provider === "managed") {
    if (principal.mode === "test")
      return { kind: "sandbox", engine: deps.engines.sandbox(), provider: "managed", model: SANDBOX_MODEL_ID };
    return { kind: "managed", engine: deps.engines.managed(), provider: "managed", model: deps.engines.managedModel() };
  }
  let apiKey = intent.apiKey;
  if (!apiKey) {
    // Test auth never reads a stored live provider key (SPEC "Authentication" 4).
    if (principal.mode === "test") {
      throw new CoreError("LLM_KEY_NOT_CONFIGURED", "With a test key, BYOK needs an explicit X-LLM-Api-Key header.");
    }
    apiKey = (await resolveStoredLlmKey(deps, principal.accountId, intent.provider)) ?? undefined;
    if (!apiKey) {
      throw new CoreError(
        "LLM_KEY_NOT_CONFIGURED",
        `No ${intent.provider} key is stored; PUT /v1/llm/keys/${intent.provider} or send X-LLM-Api-Key.`,
      );
    }
  }
  const engine = deps.engines.provider(intent.provider, apiKey, intent.model);
  return { kind: "byok", engine, provider: intent.provider, model: intent.model ?? engine.id, apiKey };
}
