// POST /v1/ground (DECISIONS.md "Prediction"): found=false is still billed; an engine error is 502
// GROUNDING_FAILED with a refund.

import type { z } from "zod";
import { CoreError } from "../errors.ts";
import { checkScreenSize, decodeScreenshot } from "../images/screenshot.ts";
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
  const r = await withCharge(
    deps,
    {
      accountId: ctx.principal.accountId,
      amount: price.total,
      billable: choice.kind === "managed",
      endpoint: ctx.endpoint,
      requestId: ctx.requestId,
    },
    async () => {
      const out = await callEngine(deps.logger, choice.engine, "GROUNDING_FAILED", (signal) =>
        choice.engine.ground({
          screenshot: image,
          description: body.description,
          cuaVersion: body.cua_version ?? "v5",
          signal,
        }),
      );
      const inside = (x: number | null, y: number | null) =>
        x !== null && y !== null && x >= 0 && y >= 0 && x < image.width && y < image.height;
      if (out.found && (!Number.isInteger(out.x) || !Number.isInteger(out.y) || !inside(out.x, out.y))) {
        throw new CoreError("GROUNDING_FAILED", "The engine answered a point outside the screenshot.");
      }
      return out;
    },
  );
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
    },
  };
}
