import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { lookupIdempotent } from "./idempotency.ts";

export const getIdempotencyOp = defineOperation({
  id: "idempotency.get",
  method: "GET",
  path: "/idempotency/{key}",
  input: z.object({ key: z.string().describe("the Idempotency-Key") }),
  output: z.object({
    status: z.enum(["completed", "processing"]).describe("processing while the first request runs"),
    original_status: z.number().int().optional().describe("HTTP status of the original response"),
    result: z.unknown().optional().describe("the original response body"),
  }),
  errors: ["INVALID_IDEMPOTENCY_KEY", "NOT_FOUND"],
  docs: {
    tags: ["Account"],
    summary: "Look up an idempotent result",
    description: "The stored result of a request made with this Idempotency-Key by the same API key (24 h).",
  },
  handler: (ctx, input) => lookupIdempotent(ctx.deps, `key:${ctx.caller.keyId}`, input.key),
});
