import type { Principal } from "@cua/core/keys/authenticate-key";
import type { Billed, CallContext } from "@cua/core/predict/predict";
import { type Ctx, header } from "../trpc/context.ts";

export function callContext(ctx: Ctx & { principal: Principal }, withLlmHeaders = true): CallContext {
  return {
    principal: ctx.principal,
    requestId: ctx.requestId,
    endpoint: ctx.endpoint ?? "unknown",
    llm: withLlmHeaders
      ? {
          headerProvider: header(ctx.req, "x-llm-provider"),
          headerApiKey: header(ctx.req, "x-llm-api-key"),
          headerModel: header(ctx.req, "x-llm-model"),
        }
      : {},
  };
}

/** Billed success: X-Credits-Charged and X-Credits-Remaining (SPEC.md "Errors", billing rules). */
export function billed<T>(ctx: Ctx, r: Billed<T>, status?: 201): T {
  ctx.res.creditsCharged = r.charged;
  if (r.remaining !== null) {
    ctx.res.headers["X-Credits-Charged"] = String(r.charged);
    ctx.res.headers["X-Credits-Remaining"] = String(r.remaining);
  }
  if (status) ctx.res.status = status;
  return r.body;
}
