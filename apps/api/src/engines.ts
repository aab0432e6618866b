// Assembles the engine port from the configuration (DECISIONS.md "Engines"): the sandbox for test keys,
// the managed engine (a configured upstream, else the built-in local engine), and BYOK provider engines.

import type { EnginePort } from "@cua/core/predict/engine-port";
import { createLocalEngine } from "@cua/engines/local/local-engine";
import { MANAGED_MODEL_ID } from "@cua/engines/models";
import { createAnthropicEngine } from "@cua/engines/providers/anthropic-engine";
import { createOpenAICompatibleEngine } from "@cua/engines/providers/openai-compatible-engine";
import { createOpenAIEngine } from "@cua/engines/providers/openai-engine";
import { createSandboxEngine } from "@cua/engines/sandbox";
import type { Engine } from "@cua/engines/types";
import type { Env } from "./env.ts";

export function createEnginePort(env: Env): EnginePort {
  const sandbox = createSandboxEngine();
  let local: Engine | undefined;
  const getLocal = () => (local ??= createLocalEngine());
  const common = { timeoutMs: env.PROVIDER_TIMEOUT_MS, maxRetries: env.PROVIDER_MAX_RETRIES };
  const kind = env.MANAGED_ENGINE ?? "local";
  const buildManaged = (): Engine => {
    if (kind === "local") return getLocal();
    if (kind === "openai-compatible") {
      if (!env.MANAGED_ENGINE_BASE_URL || !env.MANAGED_ENGINE_MODEL)
        throw new Error("MANAGED_ENGINE=openai-compatible needs MANAGED_ENGINE_BASE_URL and MANAGED_ENGINE_MODEL");
      return createOpenAICompatibleEngine({
        baseURL: env.MANAGED_ENGINE_BASE_URL,
        model: env.MANAGED_ENGINE_MODEL,
        apiKey: env.MANAGED_ENGINE_API_KEY,
        ...common,
      });
    }
    if (!env.MANAGED_ENGINE_API_KEY) throw new Error(`MANAGED_ENGINE=${kind} needs MANAGED_ENGINE_API_KEY`);
    const o = {
      apiKey: env.MANAGED_ENGINE_API_KEY,
      model: env.MANAGED_ENGINE_MODEL,
      baseURL: env.MANAGED_ENGINE_BASE_URL,
      keySource: "managed" as const,
      ...common,
    };
    return kind === "anthropic" ? createAnthropicEngine(o) : createOpenAIEngine(o);
  };
  let managed: Engine | undefined;
  const getManaged = (): Engine => {
    managed ??= buildManaged();
    return managed;
  };
  return {
    sandbox: () => sandbox,
    local: getLocal,
    managed: getManaged,
    managedModel: () => (kind === "local" ? MANAGED_MODEL_ID : (env.MANAGED_ENGINE_MODEL ?? getManaged().id)),
    provider: (provider, apiKey, model) =>
      provider === "anthropic"
        ? createAnthropicEngine({ apiKey, model, baseURL: env.ANTHROPIC_BASE_URL, ...common })
        : createOpenAIEngine({ apiKey, model, baseURL: env.OPENAI_BASE_URL, ...common }),
  };
}
