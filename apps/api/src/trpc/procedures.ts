// The procedure builders every router uses. Check order (DECISIONS.md "Cross-cutting rules"):
// 401 credential -> 429 rate limit (every authenticated call counts) -> 403 scope -> 400 header
// format (Idempotency-Key) -> then input validation (.input() runs after this middleware).

import { CoreError } from "@cua/base/errors";
import { checkIdempotencyKey } from "@cua/core/idempotency/idempotency";
import { authenticateKey, type Principal } from "@cua/core/keys/authenticate-key";
import { pathParams } from "@cua/core/operations/define";
import { rateLimitHeaders } from "../http/rate-limit.ts";
import { header } from "./context.ts";
import { t } from "./init.ts";

export function readApiKey(headers: { xApiKey?: string; authorization?: string }): string {
  const { xApiKey, authorization } = headers;
  if (xApiKey !== undefined) {
    if (/^bearer\s/i.test(xApiKey.trim())) {
      throw new CoreError("INVALID_API_KEY", "Do not put a Bearer prefix inside X-API-Key; send the raw key.", {
        suggestion: "X-API-Key: sk-svc-live-... or Authorization: Bearer sk-svc-live-...",
      });
    }
    return xApiKey.trim();
  }
  if (authorization !== undefined) {
    const m = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
    if (!m) throw new CoreError("INVALID_API_KEY", "Authorization must be `Bearer <API key>`.");
    return m[1]!;
  }
  throw new CoreError("INVALID_API_KEY", "No API key: send X-API-Key or Authorization: Bearer.");
}

const withEndpoint = t.middleware(({ ctx, meta, next }) => {
  if (meta?.openapi) ctx.endpoint = `${meta.openapi.method} /v1${meta.openapi.path}`;
  if (meta?.op?.path) ctx.pathParams = pathParams(meta.op.path);
  return next();
});

export const publicProcedure = t.procedure.use(withEndpoint);

export const apiProcedure = t.procedure.use(withEndpoint).use(async ({ ctx, meta, next }) => {
  const raw = readApiKey({ xApiKey: header(ctx.req, "x-api-key"), authorization: header(ctx.req, "authorization") });
  const principal: Principal = await authenticateKey(ctx.deps, raw);
  ctx.principal = principal;
  if (principal.mode === "test") ctx.res.headers["X-Service-Test-Mode"] = "true";
  // DECISIONS.md "Compatibility amendments": every response to an API key names its kind
  ctx.res.headers["X-Service-Key-Kind"] = principal.mode;
  const rl = await ctx.deps.limiter.check(principal.keyId, principal.tier);
  Object.assign(ctx.res.headers, rateLimitHeaders(rl));
  if (!rl.allowed) {
    throw new CoreError("RATE_LIMIT_EXCEEDED", `At most ${rl.limit} requests per minute for this key.`, {
      retry_after: rl.reset,
    });
  }
  if (meta?.scope && !principal.scopes.includes(meta.scope)) {
    throw new CoreError("INSUFFICIENT_SCOPE", `This endpoint requires the "${meta.scope}" scope.`, {
      required_scope: meta.scope,
      current_scopes: principal.scopes,
    });
  }
  if (meta?.idempotent) {
    const k = header(ctx.req, "idempotency-key");
    if (k !== undefined) checkIdempotencyKey(k);
    else if (meta.idempotencyRequired) {
      throw new CoreError("IDEMPOTENCY_KEY_REQUIRED", "This operation requires an Idempotency-Key header.", {
        suggestion:
          "Send Idempotency-Key: <up to 128 characters of [A-Za-z0-9_-:]>; reuse it to get the same answer back.",
      });
    }
  }
  return next({ ctx: { ...ctx, principal } });
});
