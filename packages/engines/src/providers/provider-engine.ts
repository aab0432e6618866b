// One entry point to build a provider engine, for BYOK (provider and key from the request) and for the managed
// upstream the operator configures. The managed configuration contract is these environment variables (read
// by the server's env.ts and handed here as a plain object; this module never reads process.env):
//
//   MANAGED_ENGINE           anthropic | openai | openai-compatible | local (default local: no upstream)
//   MANAGED_ENGINE_API_KEY   the upstream key; required for anthropic and openai, optional for openai-compatible
//   MANAGED_ENGINE_BASE_URL  optional for anthropic and openai; required for openai-compatible
//   MANAGED_ENGINE_MODEL     optional for anthropic and openai (their defaults); required for openai-compatible
import { z } from "zod";
import type { Engine } from "../types.ts";
import { createAnthropicEngine } from "./anthropic-engine.ts";
import type { KeySource } from "./errors.ts";
import { createOpenAICompatibleEngine } from "./openai-compatible-engine.ts";
import { createOpenAIEngine } from "./openai-engine.ts";

export type ProviderName = "anthropic" | "openai" | "openai-compatible";

export interface ProviderEngineConfig {
  provider: ProviderName;
  apiKey?: string;
  model?: string;
  baseURL?: string;
  keySource: KeySource;
  timeoutMs?: number;
  maxRetries?: number;
}

export function createProviderEngine(config: ProviderEngineConfig): Engine {
  const common = {
    keySource: config.keySource,
    ...(config.model ? { model: config.model } : {}),
    ...(config.baseURL ? { baseURL: config.baseURL } : {}),
    ...(config.timeoutMs !== undefined ? { timeoutMs: config.timeoutMs } : {}),
    ...(config.maxRetries !== undefined ? { maxRetries: config.maxRetries } : {}),
  };
  switch (config.provider) {
    case "anthropic":
      return createAnthropicEngine({ ...common, apiKey: config.apiKey ?? "" });
    case "openai":
      return createOpenAIEngine({ ...common, apiKey: config.apiKey ?? "" });
    case "openai-compatible":
      if (!config.baseURL || !config.model) throw new Error("openai-compatible needs a base URL and a model");
      return createOpenAICompatibleEngine({
        ...common,
        baseURL: config.baseURL,
        model: config.model,
        apiKey: config.apiKey,
      });
  }
}

const blankToUndefined = (v: unknown) => (typeof v === "string" && v.trim() === "" ? undefined : v);

export const ManagedEngineEnv = z
  .object({
    MANAGED_ENGINE: z
      .preprocess(blankToUndefined, z.enum(["anthropic", "openai", "openai-compatible", "local"]).default("local"))
      .describe("Which upstream answers managed (non-BYOK) live calls"),
    MANAGED_ENGINE_API_KEY: z.preprocess(blankToUndefined, z.string().optional()).describe("Upstream API key"),
    MANAGED_ENGINE_BASE_URL: z.preprocess(blankToUndefined, z.url().optional()).describe("Upstream base URL"),
    MANAGED_ENGINE_MODEL: z.preprocess(blankToUndefined, z.string().optional()).describe("Upstream model name"),
  })
  .superRefine((env, ctx) => {
    if ((env.MANAGED_ENGINE === "anthropic" || env.MANAGED_ENGINE === "openai") && !env.MANAGED_ENGINE_API_KEY) {
      ctx.addIssue({
        code: "custom",
        path: ["MANAGED_ENGINE_API_KEY"],
        message: `required when MANAGED_ENGINE=${env.MANAGED_ENGINE}`,
      });
    }
    if (env.MANAGED_ENGINE === "openai-compatible") {
      if (!env.MANAGED_ENGINE_BASE_URL) {
        ctx.addIssue({
          code: "custom",
          path: ["MANAGED_ENGINE_BASE_URL"],
          message: "required when MANAGED_ENGINE=openai-compatible",
        });
      }
      if (!env.MANAGED_ENGINE_MODEL) {
        ctx.addIssue({
          code: "custom",
          path: ["MANAGED_ENGINE_MODEL"],
          message: "required when MANAGED_ENGINE=openai-compatible",
        });
      }
    }
  });
export type ManagedEngineEnv = z.output<typeof ManagedEngineEnv>;

/** The managed upstream's engine config from validated env values; null means the built-in local engine. */
export function managedEngineConfig(env: ManagedEngineEnv): ProviderEngineConfig | null {
  if (env.MANAGED_ENGINE === "local") return null;
  return {
    provider: env.MANAGED_ENGINE,
    keySource: "managed",
    ...(env.MANAGED_ENGINE_API_KEY ? { apiKey: env.MANAGED_ENGINE_API_KEY } : {}),
    ...(env.MANAGED_ENGINE_BASE_URL ? { baseURL: env.MANAGED_ENGINE_BASE_URL } : {}),
    ...(env.MANAGED_ENGINE_MODEL ? { model: env.MANAGED_ENGINE_MODEL } : {}),
  };
}
