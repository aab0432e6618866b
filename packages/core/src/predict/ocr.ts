// POST /v1/ocr (DECISIONS.md "Prediction"): text, words and lines with boxes in the image's space; 3
// credits on live keys; the same engine as grounding (the sandbox for test keys).

import { CoreError } from "@cua/base/errors";
import { decodeScreenshot } from "@cua/base/images/screenshot";
import type { z } from "zod";
import { priceOcr } from "../pricing/pricing.ts";
import { withCharge } from "./charge.ts";
import type { Billed, CallContext, PredictDeps } from "./predict.ts";
import { callEngine, coordinateSpace } from "./run-engine.ts";
import type { OcrBody, OcrResponse } from "./schemas.ts";

export async function ocr(
  deps: PredictDeps,
  ctx: CallContext,
  body: OcrBody,
): Promise<Billed<z.infer<typeof OcrResponse>>> {
  const image = decodeScreenshot(body.screenshot);
  const test = ctx.principal.mode === "test";
  const engine = test ? deps.engines.sandbox() : deps.engines.local();
  const price = priceOcr({ mode: test ? "test" : "managed" });
  const r = await withCharge(
    deps,
    {
      accountId: ctx.principal.accountId,
      amount: price.total,
      billable: !test,
      endpoint: ctx.endpoint,
      requestId: ctx.requestId,
    },
    () =>
      callEngine(deps.logger, engine, "PREDICTION_FAILED", (signal) => {
        if (!engine.ocr) throw new CoreError("PREDICTION_FAILED", `The ${engine.id} engine does not read text.`);
        return engine.ocr(image, signal);
      }),
  );
  const o = r.result;
  return {
    charged: r.charged,
    remaining: r.remaining,
    body: {
      request_id: ctx.requestId,
      text: o.text,
      words: o.words,
      lines: o.lines,
      usage: { input_tokens: 0, output_tokens: 0, credits_charged: r.charged, cost_cents: r.charged },
      coordinate_space: coordinateSpace(image),
    },
  };
}
