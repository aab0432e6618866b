import { ActionSchema } from "@cua/core/actions/action";
import { parsePyautogui } from "@cua/core/parse/pyautogui";
import { ground } from "@cua/core/predict/ground";
import { ocr } from "@cua/core/predict/ocr";
import { predict } from "@cua/core/predict/predict";
import {
  GroundBody,
  GroundResponse,
  OcrBody,
  OcrResponse,
  ParseBody,
  PredictBody,
  PredictResponse,
} from "@cua/core/predict/schemas";
import { z } from "zod";
import { idempotent } from "../trpc/idempotent.ts";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";
import { billed, callContext } from "./predict-helpers.ts";

const ENGINE_ERRORS = [
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
  "IDEMPOTENCY_IN_FLIGHT",
  "IDEMPOTENCY_KEY_REUSED",
  "INVALID_IDEMPOTENCY_KEY",
] as const;

const LLM_HEADERS =
  "Headers X-LLM-Provider, X-LLM-Api-Key, X-LLM-Model select BYOK (0 credits). `Accept: text/event-stream` streams keepalive events then one result event.";

export const predictRouter = router({
  predict: apiProcedure
    .meta({
      scope: "predict",
      idempotent: true,
      errors: [...ENGINE_ERRORS],
      openapi: {
        method: "POST",
        path: "/predict",
        tags: ["Prediction"],
        summary: "Predict actions",
        description: `Screenshot + instruction in, validated actions out. 5 credits base plus surcharges (GET /v1/models). ${LLM_HEADERS}`,
      },
    })
    .input(PredictBody)
    .output(PredictResponse)
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => billed(ctx, await predict(ctx.deps, callContext(ctx), input))),
    ),
  ground: apiProcedure
    .meta({
      scope: "ground",
      idempotent: true,
      errors: [
        ...ENGINE_ERRORS.filter((c) => c !== "PREDICTION_FAILED" && c !== "INPUT_TOO_LARGE"),
        "GROUNDING_FAILED",
      ],
      openapi: {
        method: "POST",
        path: "/ground",
        tags: ["Prediction"],
        summary: "Ground a described element",
        description: `Finds (x, y) and a box for a described element; found=false is still billed. 3 credits (+1 HD). ${LLM_HEADERS}`,
      },
    })
    .input(GroundBody)
    .output(GroundResponse)
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => billed(ctx, await ground(ctx.deps, callContext(ctx), input))),
    ),
  ocr: apiProcedure
    .meta({
      scope: "predict",
      idempotent: true,
      errors: [
        "INVALID_SCREENSHOT",
        "INSUFFICIENT_CREDITS",
        "PREDICTION_FAILED",
        "BILLING_UNAVAILABLE",
        "IDEMPOTENCY_IN_FLIGHT",
        "IDEMPOTENCY_KEY_REUSED",
        "INVALID_IDEMPOTENCY_KEY",
      ],
      openapi: {
        method: "POST",
        path: "/ocr",
        tags: ["Prediction"],
        summary: "Read text and boxes",
        description: "Text, words and lines with boxes in the image's pixel space. 3 credits.",
      },
    })
    .input(OcrBody)
    .output(OcrResponse)
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => billed(ctx, await ocr(ctx.deps, callContext(ctx, false), input))),
    ),
  parse: apiProcedure
    .meta({
      scope: "parse",
      openapi: {
        method: "POST",
        path: "/parse",
        tags: ["Prediction"],
        summary: "Parse pyautogui code",
        description:
          "Free. A real parser (never evaluated). strict (default) rejects unsupported statements with 422 and details path code:LINE.",
      },
    })
    .input(ParseBody)
    .output(
      z.object({
        actions: z.array(ActionSchema),
        skipped: z
          .array(z.object({ line: z.number().int(), code: z.string(), reason: z.string() }))
          .describe("unsupported statements (strict: false)"),
      }),
    )
    .mutation(({ input }) =>
      parsePyautogui(input.code, {
        strict: input.strict ?? true,
        screen:
          input.screen_width && input.screen_height
            ? { width: input.screen_width, height: input.screen_height }
            : undefined,
      }),
    ),
});
