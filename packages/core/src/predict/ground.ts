// POST /v1/ground (DECISIONS.md "Prediction", as amended 2026-11-25): `element` or `description` names the
// element; when nothing matches the answer is 422 GROUNDING_FAILED and the charge is refunded
// (X-Credits-Refunded); an engine error is 502 PREDICTION_FAILED, refunded as well.

import { CoreError, isCoreError } from "@cua/base/errors";
import { checkScreenSize, decodeScreenshot } from "@cua/base/images/screenshot";
import type { z } from "zod";
import { priceGround } from "../pricing/pricing.ts";
import { withCharge } from "./charge.ts";
import type { Billed, CallContext, PredictDeps } from "./predict.ts";
import { resolveEngine } from "./resolve-engine.ts";
import { attribution, billingModeOf, callEngine, coordinateSpace } from "./run-engine.ts";
import type { GroundBody, GroundResponse } from "./schemas.ts";

export async function ground(
  deps: PredictDeps,
  ctx: CallContext,
  body: GroundBody,
): Promise<Billed<z.infer<typeof GroundResponse>>> {
  const description = (body.element ?? body.description)!;
  const image = decodeScreenshot(body.screenshot);
  checkScreenSize(image, body.screen_width, body.screen_height);
  const choice = await resolveEngine(deps, ctx.principal, {
    ...ctx.llm,
    bodyProvider: body.llm_provider,
    bodyModel: body.llm_model,
  });
  const price = priceGround({
    image,
    mode: billingModeOf(choice),
  });
  const billable = choice.kind === "managed";
  const r = await withCharge(
    deps,
    {
      accountId: ctx.principal.accountId,
      amount: price.total,
      billable,
      endpoint: ctx.endpoint,
      requestId: ctx.requestId,
    },
    async () => {
      const out = await callEngine(deps.logger, choice.engine, "PREDICTION_FAILED", (signal) =>
        choice.engine.ground({
          screenshot: image,
          description,
          cuaVersion: body.cua_version ?? "v5",
          signal,
        }),
      ).catch((e: unknown) => {
        // an engine that failed (its own GROUNDING_FAILED) is a 502 engine failure; GROUNDING_FAILED (422)
        // is kept for "nothing matches" below
        if (isCoreError(e) && e.code === "GROUNDING_FAILED")
          throw new CoreError("PREDICTION_FAILED", e.message, e.extras);
        throw e;
      });
      const inside = (x: number | null, y: number | null) =>
        x !== null && y !== null && x >= 0 && y >= 0 && x < image.width && y < image.height;
      if (out.found && (!Number.isInteger(out.x) || !Number.isInteger(out.y) || !inside(out.x, out.y))) {
        throw new CoreError("PREDICTION_FAILED", "The engine answered a point outside the screenshot.");
      }
      if (!out.found || out.x === null || out.y === null) {
        throw new CoreError("GROUNDING_FAILED", `No element matching "${description.slice(0, 200)}" was found.`, {
          suggestion:
            "Describe the element differently (its visible text, role or position), or send a fresh screenshot.",
          confidence: out.confidence,
        });
      }
      return out;
    },
  ).catch((e: unknown) => {
    // nothing was billed (test key, BYOK): the refund header still says so, as on a billed call
    if (isCoreError(e) && e.code === "GROUNDING_FAILED" && !("X-Credits-Refunded" in e.headers))
      throw new CoreError(e.code, e.message, e.extras, { ...e.headers, "X-Credits-Refunded": "0" });
    throw e;
  });
  const o = r.result;
  return {
    charged: r.charged,
    remaining: r.remaining,
    body: {
      request_id: ctx.requestId,
      found: o.found,
      x: o.found ? o.x : null,
      y: o.found ? o.y : null,
      bbox: o.found ? o.bbox : null,
      confidence: o.confidence,
      usage: { ...o.usage, credits_charged: r.charged, cost_cents: r.charged },
      llm: attribution(choice, choice.model),
      coordinate_space: coordinateSpace(image),
      screen_width: image.width,
      screen_height: image.height,
    },
  };
}
