import type { Engine } from "@cua/engines/types";
import type { LlmProvider } from "../llm-keys/llm-keys.ts";

/** How the domain obtains engines; the service assembles it from its configuration. */
export interface EnginePort {
  /** deterministic, no network: test keys in managed mode */
  sandbox(): Engine;
  /** the service's own engine for live keys: a configured upstream, or the built-in local engine */
  managed(): Engine;
  /** the built-in local engine (OCR-based); serves /v1/ocr on live keys whatever the managed upstream is */
  local(): Engine;
  /** the provider's computer-use API with the caller's key (BYOK) */
  provider(provider: LlmProvider, apiKey: string, model?: string): Engine;
  /** model id reported for the managed engine */
  managedModel(): string;
}
