// The stateless prediction operations: predict, ground, ocr (billed engine calls) and parse (free).

import { ActionSchema } from "@cua/base/actions/action";
import type { ErrorCode } from "@cua/base/errors";
import { z } from "zod";
import { billed, callContext } from "../operations/call-context.ts";
import { defineOperation } from "../operations/define.ts";
import { parsePyautogui } from "../parse/pyautogui.ts";
import { ground } from "./ground.ts";
import { ocr } from "./ocr.ts";
import { predict } from "./predict.ts";
import {
  GroundBody,
  GroundResponse,
  OcrBody,
  OcrResponse,
  ParseBody,
  PredictBody,
  PredictResponse,
} from "./schemas.ts";

export const ENGINE_ERRORS = [
  "INVALID_SCREENSHOT",
  "INPUT_TOO_LARGE",
  "INSUFFICIENT_CREDITS",
  "LLM_KEY_NOT_CONFIGURED",
  "LLM_PROVIDER_UNSUPPORTED",
  "LLM_KEY_INVALID",
  "PREDICTION_FAILED",
  "UPSTREAM_UNAVAILABLE",
  "UPSTREAM_TIMEOUT",
  "BILLING_UNAVAILABLE",
] as const satisfies readonly ErrorCode[];

const LLM_HEADERS =
  "Headers X-LLM-Provider, X-LLM-Api-Key, X-LLM-Model select BYOK (0 credits). `Accept: text/event-stream` streams keepalive events then one result event.";

export const predictOp = defineOperation({
  id: "predict.predict",
  method: "POST",
  path: "/predict",
  scope: "predict",
  idempotency: "reserve-and-replay",
  input: PredictBody,
  output: PredictResponse,
  billing: "5 credits base plus surcharges (GET /v1/models); 0 with BYOK or a test key",
  errors: ENGINE_ERRORS,
  docs: {
    tags: ["Prediction"],
    summary: "Predict actions",
    description: `Screenshot + instruction in, validated actions out. 5 credits base plus surcharges (GET /v1/models). ${LLM_HEADERS}`,
  },
  alsoServes: ["text/event-stream"],
  mcp: { tool: "predict", group: "predict" },
  handler: async (ctx, input) => billed(ctx, await predict(ctx.deps, callContext(ctx), input)),
});

export const groundOp = defineOperation({
  id: "predict.ground",
  method: "POST",
  path: "/ground",
  scope: "ground",
  idempotency: "reserve-and-replay",
  input: GroundBody,
  output: GroundResponse,
  billing: "3 credits (+1 HD); 0 with BYOK or a test key",
  errors: [...ENGINE_ERRORS.filter((c) => c !== "INPUT_TOO_LARGE"), "GROUNDING_FAILED"],
  docs: {
    tags: ["Prediction"],
    summary: "Ground a described element",
    description: `Finds (x, y) and a box for the element named by \`element\` or \`description\` (exactly one; both is 422). Nothing matching: 422 GROUNDING_FAILED with the charge refunded (X-Credits-Refunded); an engine failure is 502 PREDICTION_FAILED, refunded too. 3 credits (+1 HD). ${LLM_HEADERS}`,
  },
  mcp: { tool: "ground", group: "predict" },
  handler: async (ctx, input) => billed(ctx, await ground(ctx.deps, callContext(ctx), input)),
});

export const ocrOp = defineOperation({
  id: "predict.ocr",
  method: "POST",
  path: "/ocr",
  scope: "predict",
  idempotency: "reserve-and-replay",
  input: OcrBody,
  output: OcrResponse,
  billing: "3 credits; 0 with a test key",
  errors: ["INVALID_SCREENSHOT", "INSUFFICIENT_CREDITS", "PREDICTION_FAILED", "BILLING_UNAVAILABLE"],
  docs: {
    tags: ["Prediction"],
    summary: "Read text and boxes",
    description: "Text, words and lines with boxes in the image's pixel space. 3 credits.",
  },
  handler: async (ctx, input) => billed(ctx, await ocr(ctx.deps, callContext(ctx, false), input)),
});

export const parseOp = defineOperation({
  id: "predict.parse",
  method: "POST",
  path: "/parse",
  scope: "parse",
  input: ParseBody,
  output: z.object({
    actions: z.array(ActionSchema),
    skipped: z
      .array(z.object({ line: z.number().int(), code: z.string(), reason: z.string() }))
      .describe("unsupported statements (strict: false)"),
  }),
  docs: {
    tags: ["Prediction"],
    summary: "Parse pyautogui code",
    description:
      "Free. A real parser (never evaluated). strict (default) rejects unsupported statements with 422 and details path code:LINE.",
  },
  mcp: { tool: "parse", group: "predict" },
  handler: (_ctx, input) =>
    parsePyautogui(input.code, {
      strict: input.strict ?? true,
      screen:
        input.screen_width && input.screen_height
          ? { width: input.screen_width, height: input.screen_height }
          : undefined,
    }),
});
