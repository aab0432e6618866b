import type { ErrorCode } from "@cua/base/errors";
import type { Scope } from "@cua/core/keys/scopes";
import type { AnyOperation } from "@cua/core/operations/define";
import { initTRPC } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import { ReplayedResponse, renderError, toCoreError } from "../http/render-error.ts";
import { baseUrlOf, type Ctx, whereOf } from "./context.ts";

export interface Meta extends OpenApiMeta {
  /** the scope an API key needs; undefined = any valid key */
  scope?: Scope;
  /** reserve-and-replay idempotency (SPEC "Idem." RR) */
  idempotent?: boolean;
  /** REST success status (DECISIONS "Status of success") */
  successStatus?: 200 | 201 | 202;
  /** error codes this route can return beyond the common ones (for the OpenAPI document) */
  errors?: ErrorCode[];
  /** public route: no API key */
  public?: boolean;
  /** the Idempotency-Key header is required (400 IDEMPOTENCY_KEY_REQUIRED before body validation) */
  idempotencyRequired?: boolean;
  /** the operation definition the procedure was generated from (packages/core/src/operations) */
  op?: AnyOperation;
}

export const t = initTRPC
  .context<Ctx>()
  .meta<Meta>()
  .create({
    errorFormatter({ shape, error, ctx }) {
      if (!ctx) return { ...shape, data: { ...shape.data, stack: undefined } };
      if (error.cause instanceof ReplayedResponse) return error.cause.body as typeof shape;
      const ce = toCoreError(error, whereOf(ctx));
      const rendered = renderError(ce, ctx.requestId, baseUrlOf(ctx));
      if (ctx.transport === "rest") return rendered.body as unknown as typeof shape;
      return { ...shape, message: ce.message, data: { ...shape.data, stack: undefined, svc: rendered.body.error } };
    },
  });

export const router = t.router;
