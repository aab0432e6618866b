// Shared by predict and session predict: run the engine, validate its answer against the SPEC action
// table and the caller's limits, enforce the action policy, and shape the response.
import { type Action, validateEngineActions } from "@cua/base/actions/action";
import { CoreError, isCoreError } from "@cua/base/errors";
import type { DecodedImage, Engine, PredictInput, PredictOutput } from "@cua/engines/types";
import type { CoreDeps, Logger } from "../deps.ts";
import { describeAction, toPyautogui } from "../parse/to-pyautogui.ts";
import { type ActionPolicy, enforcePolicy } from "../policy/action-policy.ts";
import { withCharge } from "./charge.ts";
import type { Billed, CallContext } from "./predict.ts";
import type { EngineChoice } from "./resolve-engine.ts";
import type { PredictResponse } from "./schemas.ts";

export const PROMPT_BUDGET_CHARS = 32_000;
export const ENGINE_DEADLINE_MS = 120_000;

export function checkPromptBudget(systemPrompt?: string | null, instructions?: string | null): void {
  // characters are code points, as in the 500-character surcharge rule
  const n = [...(systemPrompt ?? "")].length + [...(instructions ?? "")].length;
  if (n > PROMPT_BUDGET_CHARS) {
    const message = `system_prompt plus instructions are ${n} characters; the budget is ${PROMPT_BUDGET_CHARS}.`;
    // like other validation answers, the fields at fault are named (issue 12)
    const details = (["system_prompt", "instructions"] as const)
      .filter((f) => (f === "system_prompt" ? systemPrompt : instructions))
      .map((f) => ({ path: `body.${f}`, message }));
    throw new CoreError("INPUT_TOO_LARGE", message, { details, actual: n, max: PROMPT_BUDGET_CHARS });
  }
}

/** Runs an engine call under the service's deadline; unexpected throws become `failCode`. */
export async function callEngine<T>(
  logger: Logger,
  engine: Engine,
  failCode: "PREDICTION_FAILED" | "GROUNDING_FAILED",
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ENGINE_DEADLINE_MS);
  try {
    return await fn(ac.signal);
  } catch (e) {
    if (isCoreError(e)) throw e;
    if (ac.signal.aborted)
      throw new CoreError(
        "UPSTREAM_TIMEOUT",
        `The ${engine.id} engine did not answer within ${ENGINE_DEADLINE_MS / 1000} s.`,
      );
    logger.error("engine failed", { engine: engine.id, err: String(e) });
    throw new CoreError(failCode, `The ${engine.id} engine failed.`);
  } finally {
    clearTimeout(timer);
  }
}

export interface Prediction {
  actions: Action[];
  reasoning: string;
  status: "continue" | "done" | "fail";
  usage: { input_tokens: number; output_tokens: number };
  safety_checks?: { code: string; message: string }[];
  /** the engine cannot proceed but a human could (status fail): the run may pause for one */
  needs_human?: { reason: string };
  model: string;
}

export async function predictWith(
  logger: Logger,
  choice: EngineChoice,
  input: Omit<PredictInput, "signal">,
  policy: ActionPolicy | null | undefined,
): Promise<Prediction> {
  const out: PredictOutput = await callEngine(logger, choice.engine, "PREDICTION_FAILED", (signal) =>
    choice.engine.predict({ ...input, signal }),
  );
  const screen = { width: input.screenshot.width, height: input.screenshot.height };
  // an engine answer that does not validate is never passed through
  const actions = validateEngineActions(out.actions, screen);
  if (actions.length > input.maxActions) {
    throw new CoreError(
      "PREDICTION_FAILED",
      `The engine proposed ${actions.length} actions; max_actions is ${input.maxActions}.`,
    );
  }
  if (input.tools) {
    const allowed = new Set<string>([...input.tools, "done", "fail"]);
    const bad = actions.find((a) => !allowed.has(a.action_type));
    if (bad)
      throw new CoreError("PREDICTION_FAILED", `The engine used ${bad.action_type}, which the tools filter excludes.`);
  }
  const enforced = enforcePolicy(actions, policy);
  if (!enforced.ok) {
    return {
      actions: enforced.actions,
      reasoning: `Action policy violation (${enforced.violation.rule}): ${enforced.violation.message}. The proposed batch was rejected.`,
      status: "fail",
      usage: out.usage,
      safety_checks: out.safety_checks,
      model: out.model,
    };
  }
  const last = actions.at(-1);
  const status = last?.action_type === "done" ? "done" : last?.action_type === "fail" ? "fail" : out.status;
  return {
    actions,
    reasoning: out.reasoning,
    status,
    usage: out.usage,
    safety_checks: out.safety_checks,
    ...(status === "fail" && out.needs_human ? { needs_human: out.needs_human } : {}),
    model: out.model,
  };
}

export function attribution(choice: EngineChoice, model: string) {
  return {
    provider: choice.provider,
    model: choice.kind === "byok" ? model || choice.model : choice.model,
    billed_to: choice.kind === "byok" ? ("provider" as const) : ("platform" as const),
  };
}

export function coordinateSpace(img: DecodedImage) {
  return { width: img.width, height: img.height };
}

export const billingModeOf = (choice: EngineChoice): "managed" | "byok" | "test" =>
  choice.kind === "managed" ? "managed" : choice.kind === "byok" ? "byok" : "test";

/** Reserve the price, run the engine, settle, and shape the predict response (predict and session predict). */
export async function billedPrediction(
  deps: CoreDeps,
  ctx: CallContext,
  choice: EngineChoice,
  amount: number,
  input: Omit<PredictInput, "signal">,
  policy: ActionPolicy | null | undefined,
): Promise<Billed<PredictResponse>> {
  const r = await withCharge(
    deps,
    {
      accountId: ctx.principal.accountId,
      amount,
      billable: choice.kind === "managed",
      endpoint: ctx.endpoint,
      requestId: ctx.requestId,
    },
    () => predictWith(deps.logger, choice, input, policy),
  );
  const p = r.result;
  return {
    charged: r.charged,
    remaining: r.remaining,
    body: {
      request_id: ctx.requestId,
      actions: p.actions.map((a) => ({ ...a, description: a.description ?? describeAction(a) })),
      reasoning: p.reasoning,
      status: p.status,
      usage: { ...p.usage, credits_charged: r.charged, cost_cents: r.charged },
      llm: attribution(choice, p.model),
      coordinate_space: coordinateSpace(input.screenshot),
      cua_version: input.cuaVersion,
      screen_width: input.screenshot.width,
      screen_height: input.screenshot.height,
      ...(p.safety_checks?.length ? { safety_checks: p.safety_checks } : {}),
    },
  };
}

export interface AnswerOptions {
  include_reasoning?: boolean | undefined;
  include_raw_code?: boolean | undefined;
}

/**
 * include_reasoning (default true) and include_raw_code (default false) of predict and session predict
 * (DECISIONS.md "Compatibility amendments (2026-11-25)"): raw_code is the pyautogui equivalent, per action
 * and for the whole answer.
 */
export function shapeAnswer<T extends PredictResponse>(body: T, o: AnswerOptions): T {
  let out = body;
  if (o.include_reasoning === false) out = { ...out, reasoning: "" };
  if (o.include_raw_code === true) {
    const actions = out.actions.map((a) => ({ ...a, raw_code: toPyautogui(a) }));
    out = { ...out, actions, raw_code: actions.map((a) => a.raw_code).join("\n") };
  }
  return out;
}
