import { lookupIdempotent } from "@cua/core/idempotency/idempotency";
import { z } from "zod";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";

export const idempotencyRouter = router({
  get: apiProcedure
    .meta({
      errors: ["INVALID_IDEMPOTENCY_KEY", "NOT_FOUND"],
      openapi: {
        method: "GET",
        path: "/idempotency/{key}",
        tags: ["Account"],
        summary: "Look up an idempotent result",
        description: "The stored result of a request made with this Idempotency-Key by the same API key (24 h).",
      },
    })
    .input(z.object({ key: z.string().describe("the Idempotency-Key") }))
    .output(
      z.object({
        status: z.enum(["completed", "processing"]).describe("processing while the first request runs"),
        original_status: z.number().int().optional().describe("HTTP status of the original response"),
        result: z.unknown().optional().describe("the original response body"),
      }),
    )
    .query(({ ctx, input }) => lookupIdempotent(ctx.deps, `key:${ctx.principal.keyId}`, input.key)),
});
