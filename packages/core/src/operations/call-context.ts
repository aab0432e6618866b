// Helpers handlers share: the engine call context (caller, request, BYOK headers) and billed answers.
import type { Billed, CallContext } from "../predict/predict.ts";
import type { OperationContext } from "./define.ts";

/** The engine call context: the caller, the request, and the BYOK headers when the transport has them. */
export function callContext(ctx: OperationContext<"api_key">, withLlmHeaders = true): CallContext {
  return {
    principal: ctx.caller,
    requestId: ctx.requestId,
    endpoint: ctx.endpoint,
    llm: withLlmHeaders
      ? {
          headerProvider: ctx.header("x-llm-provider"),
          headerApiKey: ctx.header("x-llm-api-key"),
          headerModel: ctx.header("x-llm-model"),
        }
      : {},
  };
}

/** A billed success: X-Credits-Charged and X-Credits-Remaining (SPEC.md "Errors", billing rules). */
export function billed<T>(ctx: OperationContext, r: Billed<T>): T {
  ctx.res.creditsCharged = r.charged;
  if (r.remaining !== null) {
    ctx.res.headers["X-Credits-Charged"] = String(r.charged);
    ctx.res.headers["X-Credits-Remaining"] = String(r.remaining);
  } else if (ctx.caller?.mode === "test") {
    // DECISIONS.md "Compatibility amendments": billed responses to a test key say they cost nothing
    ctx.res.headers["X-Credits-Charged"] = "0";
  }
  return r.body;
}
