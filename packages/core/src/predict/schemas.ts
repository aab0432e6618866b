// Request and response shapes of the prediction endpoints (SPEC.md "Prediction and grounding",
// DECISIONS.md "Prediction"). Field-level limits that SPEC gives a 400/413 code (screenshot, prompt budget)
// are checked in the use cases so they answer with that code, not a generic 422.

import { ActionSchema, FILTERABLE_TOOLS } from "@cua/base/actions/action";
import { z } from "zod";
import { ActionPolicySchema } from "../policy/action-policy.ts";
import { LlmChoice, ModelField } from "./model-choice.ts";

export const CuaVersionSchema = z.enum(["v5", "v4", "v3", "v1"]).describe("engine strategy: v5 (default), v4, v3, v1");
// Over the cap is 413 PAYLOAD_TOO_LARGE, decided here so it precedes 422 on other fields (DECISIONS.md
// "Cross-cutting rules": ... -> 413 -> 422); decodeScreenshot in the use case checks the rest.
const SCREENSHOT_MAX_B64 = 10_485_760;
const Screenshot = z
  .string()
  .superRefine((s, ctx) => {
    const b64 = s.startsWith("data:") ? s.length - (s.indexOf(",") + 1) : s.length;
    if (b64 > SCREENSHOT_MAX_B64)
      ctx.addIssue({
        code: "custom",
        message: `at most ${SCREENSHOT_MAX_B64} base64 characters (${b64} sent)`,
        params: { errorCode: "PAYLOAD_TOO_LARGE" },
      });
  })
  .describe(
    "raw base64 or an exact data:image/png;base64, / data:image/jpeg;base64, URI; 100 to 10,485,760 base64 characters",
  );
const ScreenDim = (what: string) =>
  z.number().int().min(1).max(16384).optional().describe(`${what}; must match the screenshot actually sent`);
const Prompt = (what: string) =>
  z.string().optional().describe(`${what}; system_prompt plus instructions at most 32,000 characters`);

export const TrajectoryStepSchema = z.strictObject({
  screenshot: Screenshot,
  actions: z.array(ActionSchema).max(10).describe("actions taken at that step"),
  reasoning: z.string().max(16_000).optional().describe("reasoning of that step"),
});

const LlmBody = {
  llm_provider: z
    .string()
    .optional()
    .describe("anthropic, openai or managed (the X-LLM-Provider header wins; they must agree)"),
  llm_model: z.string().max(200).optional().describe("provider model (X-LLM-Model wins; they must agree)"),
};

// DECISIONS.md "Compatibility amendments (2026-11-25)": predict and session predict options
const AnswerOptions = {
  include_reasoning: z.boolean().optional().describe("default true; false answers reasoning as an empty string"),
  include_raw_code: z
    .boolean()
    .optional()
    .describe("default false; true adds raw_code (pyautogui) to the response and to each action"),
};
const ModelChoice = {
  model: ModelField.optional(),
  llm: LlmChoice.optional(),
};
export const Metadata = z
  .record(z.string().min(1).max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .describe("your own string key/value pairs (at most 50 keys)");

export const PredictBody = z.strictObject({
  screenshot: Screenshot,
  instruction: z.string().min(1).max(16_000).describe("what to do, in plain language"),
  cua_version: CuaVersionSchema.optional(),
  screen_width: ScreenDim("width of the screenshot"),
  screen_height: ScreenDim("height of the screenshot"),
  max_actions: z.number().int().min(1).max(10).optional().describe("1 to 10"),
  trajectory: z.array(TrajectoryStepSchema).max(19).optional().describe("prior steps, at most 19"),
  system_prompt: Prompt("replaces the base prompt"),
  instructions: Prompt("added to the base prompt"),
  tools: z.array(z.enum(FILTERABLE_TOOLS)).max(8).optional().describe("action types the engine may use (at most 8)"),
  action_policy: ActionPolicySchema.optional(),
  ...LlmBody,
  ...AnswerOptions,
  ...ModelChoice,
});
export type PredictBody = z.infer<typeof PredictBody>;

export const SessionCreateBody = z.strictObject({
  cua_version: CuaVersionSchema.optional(),
  screen_width: z.number().int().min(1).max(16384).optional().describe("expected screenshot width"),
  screen_height: z.number().int().min(1).max(16384).optional().describe("expected screenshot height"),
  action_policy: ActionPolicySchema.optional(),
  instructions: Prompt("added to the base prompt"),
  system_prompt: Prompt("replaces the base prompt"),
  ...LlmBody,
  max_trajectory_length: z
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe("1 to 20 (default 20): the newest steps the session keeps and the engine sees"),
  tools: z
    .array(z.enum(FILTERABLE_TOOLS))
    .max(8)
    .optional()
    .describe("action types the engine may use in this session (a predict's own tools win)"),
  metadata: Metadata.optional(),
  ...ModelChoice,
});
export type SessionCreateBody = z.infer<typeof SessionCreateBody>;

export const SessionPredictBody = z.strictObject({
  screenshot: Screenshot,
  instruction: z.string().min(1).max(16_000).describe("what to do now"),
  screen_width: ScreenDim("width of the screenshot"),
  screen_height: ScreenDim("height of the screenshot"),
  max_actions: z.number().int().min(1).max(10).optional().describe("1 to 10"),
  tools: z.array(z.enum(FILTERABLE_TOOLS)).max(8).optional().describe("action types the engine may use"),
  ...AnswerOptions,
  ...ModelChoice,
});
export type SessionPredictBody = z.infer<typeof SessionPredictBody>;

export const GroundBody = z
  .strictObject({
    screenshot: Screenshot,
    description: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .describe("the element to find, e.g. 'the Save button' (or `element`; exactly one of them)"),
    element: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .describe("the element to find (the commercial contract's name for `description`; exactly one of them)"),
    screen_width: ScreenDim("width of the screenshot"),
    screen_height: ScreenDim("height of the screenshot"),
    cua_version: CuaVersionSchema.optional(),
    ...LlmBody,
  })
  .superRefine((b, ctx) => {
    if ((b.description === undefined) === (b.element === undefined))
      ctx.addIssue({
        code: "custom",
        path: [b.description === undefined ? "description" : "element"],
        message:
          b.description === undefined
            ? "one of description or element is required"
            : "send description or element, not both",
      });
  });
export type GroundBody = z.infer<typeof GroundBody>;

export const OcrBody = z.strictObject({
  screenshot: Screenshot,
  language: z.enum(["eng"]).optional().describe("eng (default)"),
});
export type OcrBody = z.infer<typeof OcrBody>;

export const ParseBody = z.strictObject({
  code: z.string().max(200_000).describe("pyautogui code; parsed, never executed"),
  strict: z.boolean().optional().describe("default true: an unsupported statement is 422"),
  screen_width: z.number().int().min(1).max(16384).optional().describe("bounds for coordinates"),
  screen_height: z.number().int().min(1).max(16384).optional().describe("bounds for coordinates"),
});
export type ParseBody = z.infer<typeof ParseBody>;

export const UsageSchema = z.object({
  input_tokens: z.number().int().describe("engine or provider input tokens"),
  output_tokens: z.number().int().describe("engine or provider output tokens"),
  credits_charged: z.number().int().describe("0 on test keys and with BYOK"),
  cost_cents: z.number().int().describe("equal to credits_charged"),
});

export const CoordinateSpace = z
  .object({ width: z.number().int(), height: z.number().int() })
  .describe("the size of the image the engine saw: every coordinate in this response is in this space");

export const LlmAttribution = z
  .object({ provider: z.string(), model: z.string(), billed_to: z.enum(["platform", "provider"]) })
  .describe("who answered and who pays (no secrets)");

export const PredictResponse = z.object({
  request_id: z.string(),
  actions: z.array(ActionSchema).describe("actions to execute in order (each may carry description and raw_code)"),
  reasoning: z.string().describe("the engine's reasoning; empty with include_reasoning: false"),
  status: z.enum(["continue", "done", "fail"]),
  usage: UsageSchema,
  llm: LlmAttribution,
  coordinate_space: CoordinateSpace,
  cua_version: CuaVersionSchema.describe("the engine strategy that answered"),
  screen_width: z.number().int().describe("width of the screenshot (coordinate space)"),
  screen_height: z.number().int().describe("height of the screenshot (coordinate space)"),
  raw_code: z.string().optional().describe("all actions as pyautogui code (include_raw_code: true)"),
  safety_checks: z
    .array(z.object({ code: z.string(), message: z.string() }))
    .optional()
    .describe("provider safety checks, passed on"),
});
export type PredictResponse = z.infer<typeof PredictResponse>;

export const SessionPredictResponse = PredictResponse.extend({
  step: z.number().int().describe("1-based, counts every step ever taken"),
});

export const GroundResponse = z.object({
  request_id: z.string(),
  found: z.boolean(),
  x: z.number().int().nullable(),
  y: z.number().int().nullable(),
  bbox: z
    .object({ x: z.number().int(), y: z.number().int(), width: z.number().int(), height: z.number().int() })
    .nullable(),
  confidence: z.number(),
  usage: UsageSchema,
  llm: LlmAttribution,
  coordinate_space: CoordinateSpace,
  screen_width: z.number().int().describe("width of the screenshot (coordinate space)"),
  screen_height: z.number().int().describe("height of the screenshot (coordinate space)"),
});

const Box = z.object({ x: z.number(), y: z.number(), width: z.number(), height: z.number() });
export const OcrResponse = z.object({
  request_id: z.string(),
  text: z.string(),
  words: z.array(z.object({ text: z.string(), confidence: z.number(), bbox: Box })),
  lines: z.array(z.object({ text: z.string(), bbox: Box })),
  usage: UsageSchema,
  coordinate_space: CoordinateSpace,
});

export const SessionInfo = z.object({
  session_id: z.string(),
  status: z.literal("active"),
  cua_version: z.string(),
  screen_width: z.number().int().nullable(),
  screen_height: z.number().int().nullable(),
  screen_size: z
    .object({ width: z.number().int(), height: z.number().int() })
    .nullable()
    .describe("screen_width/screen_height as an object; null when the session was created without them"),
  step_count: z
    .number()
    .int()
    .describe("steps the trajectory holds now (at most max_trajectory_length; 0 after a reset)"),
  total_steps: z
    .number()
    .int()
    .describe("steps ever taken (the `step` of the last predict; a reset does not restart it)"),
  max_trajectory_length: z.number().int().describe("1 to 20"),
  tools: z.array(z.string()).nullable().describe("action types the engine may use; null = all"),
  metadata: z.record(z.string(), z.string()).describe("your key/value pairs ({} when none)"),
  total_credits_used: z.number().int().describe("credits charged for this session: creation plus every predict"),
  action_policy: z.unknown().nullable(),
  llm: z.object({ provider: z.string(), model: z.string() }).nullable(),
  created_at: z.string(),
  last_used_at: z.string(),
  expires_at: z.string(),
});
export type SessionInfo = z.infer<typeof SessionInfo>;
