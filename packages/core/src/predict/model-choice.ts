// `model` and `llm: {provider, model}` of predict, session create, ground and runs (DECISIONS.md "Compatibility
// amendments (2026-11-25)"): `llm` means the same as the body provider fields (llm_provider, llm_model), and
// `model` must be one of GET /v1/models. With BYOK the model is the provider's model (it must belong to that
// provider); without BYOK the service's own engine answers and `llm.model` of the answer names the model that
// actually answered (docs/prediction.md "Choosing a model").

import { validationError } from "@cua/base/errors";
import { z } from "zod";
import { MODELS } from "../pricing/pricing.ts";
import type { LlmRequest } from "./resolve-engine.ts";

export const MODEL_IDS = MODELS.map((m) => m.id) as [string, ...string[]];

export const ModelField = z
  .string()
  .min(1)
  .max(200)
  .describe(`one of GET /v1/models: ${MODEL_IDS.join(", ")}`);

export const LlmChoice = z
  .strictObject({
    provider: z.string().min(1).max(40).describe("anthropic, openai or managed (same as llm_provider)"),
    model: z.string().min(1).max(200).optional().describe("the provider's model (same as llm_model)"),
  })
  .describe("provider selection, the same as the body fields llm_provider/llm_model");

export type LlmChoiceInput = { provider: string; model?: string | undefined };

export interface ModelInput {
  model?: string | undefined;
  llm?: LlmChoiceInput | undefined;
  llm_provider?: string | undefined;
  llm_model?: string | undefined;
}

/** Merges `llm` and `model` into the request's provider fields (422 when they disagree). */
export function withModelChoice(r: LlmRequest, body: ModelInput): LlmRequest {
  let bodyProvider = body.llm_provider;
  let bodyModel = body.llm_model;
  if (body.llm) {
    if (bodyProvider !== undefined && bodyProvider !== body.llm.provider)
      throw validationError("body.llm.provider", "differs from llm_provider");
    if (bodyModel !== undefined && body.llm.model !== undefined && bodyModel !== body.llm.model)
      throw validationError("body.llm.model", "differs from llm_model");
    bodyProvider = body.llm.provider;
    bodyModel = body.llm.model ?? bodyModel;
  }
  if (body.model !== undefined) {
    const m = MODELS.find((x) => x.id === body.model);
    if (!m) throw validationError("body.model", `unknown model; one of ${MODEL_IDS.join(", ")} (GET /v1/models)`);
    const provider = r.headerProvider ?? bodyProvider;
    const byok = provider !== undefined && provider !== "" && provider !== "managed";
    if (byok && m.provider !== provider)
      throw validationError("body.model", `${m.id} is a ${m.provider} model; the request names provider ${provider}`);
    if (!byok && m.provider !== "managed") {
      // no provider named: the service's engine answers (the answer's llm.model says which)
    } else if (byok) {
      const named = r.headerModel ?? bodyModel;
      if (named !== undefined && named !== m.id) throw validationError("body.model", `differs from the model ${named}`);
      bodyModel = m.id;
    }
  }
  return { ...r, bodyProvider, bodyModel };
}
