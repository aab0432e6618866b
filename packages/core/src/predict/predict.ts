// POST /v1/predict: screenshot + instruction in, validated actions out, billed exactly as SPEC.md.

import { checkScreenSize, decodeScreenshot } from "@cua/base/images/screenshot";
import type { TrajectoryStep } from "@cua/engines/types";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { pricePredict } from "../pricing/pricing.ts";
import type { EnginePort } from "./engine-port.ts";
import { withModelChoice } from "./model-choice.ts";
import { type LlmRequest, resolveEngine } from "./resolve-engine.ts";
import { billedPrediction, billingModeOf, checkPromptBudget, shapeAnswer } from "./run-engine.ts";
import type { PredictBody, PredictResponse } from "./schemas.ts";

export interface PredictDeps extends CoreDeps {
  engines: EnginePort;
}

export interface CallContext {
  principal: Principal;
  requestId: string;
  endpoint: string;
  llm: LlmRequest;
}

export interface Billed<T> {
  body: T;
  charged: number;
  remaining: number | null;
}

export async function predict(
  deps: PredictDeps,
  ctx: CallContext,
  body: PredictBody,
): Promise<Billed<PredictResponse>> {
  checkPromptBudget(body.system_prompt, body.instructions);
  const image = decodeScreenshot(body.screenshot);
  checkScreenSize(image, body.screen_width, body.screen_height);
  const trajectory: TrajectoryStep[] = (body.trajectory ?? []).map((s, i) => ({
    screenshot: decodeScreenshot(s.screenshot, `body.trajectory.${i}.screenshot`),
    actions: s.actions,
    reasoning: s.reasoning,
  }));
  const choice = await resolveEngine(deps, ctx.principal, withModelChoice(ctx.llm, body));
  const cuaVersion = body.cua_version ?? "v5";
  const price = pricePredict({
    kind: "predict",
    cuaVersion,
    image,
    trajectoryImages: trajectory.map((t) => t.screenshot!),
    systemPrompt: body.system_prompt,
    instructions: body.instructions,
    mode: billingModeOf(choice),
  });
  const r = await billedPrediction(
    deps,
    ctx,
    choice,
    price.total,
    {
      screenshot: image,
      instruction: body.instruction,
      cuaVersion,
      maxActions: body.max_actions ?? 10,
      trajectory,
      systemPrompt: body.system_prompt,
      instructions: body.instructions,
      tools: body.tools,
    },
    body.action_policy,
  );
  return { ...r, body: shapeAnswer(r.body, body) };
}
