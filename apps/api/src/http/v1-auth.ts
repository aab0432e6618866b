// The credential chain of an API-key operation, in the order of DECISIONS.md "Cross-cutting rules":
// 401 credential -> 429 rate limit (every authenticated call counts) -> 403 scope -> 400 header format
// (Idempotency-Key); input validation comes after (the compiled route, ./v1-routes.ts).

import { CoreError } from "@cua/base/errors";
import { checkIdempotencyKey } from "@cua/core/idempotency/idempotency";
import { authenticateKey, type Principal } from "@cua/core/keys/authenticate-key";
import type { Scope } from "@cua/core/keys/scopes";
import { type Ctx, header } from "../trpc/context.ts";
import { setRateLimitHeaders } from "./rate-limit.ts";

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

/** What the chain reads of an operation's definition. */
export interface KeyRule {
  /** the scope an API key needs; undefined = any valid key */
  scope?: Scope;
  /** reserve-and-replay: an Idempotency-Key, when sent, must be well-formed */
  idempotent: boolean;
  /** the Idempotency-Key header is required (400 IDEMPOTENCY_KEY_REQUIRED before body validation) */
  idempotencyRequired: boolean;
}

/** Authenticates the request's key and applies the rate limit, the scope and the Idempotency-Key format.
 * Sets ctx.principal and the headers every answer to a key carries (also on errors thrown after them). */
export async function authorizeKey(ctx: Ctx, rule: KeyRule): Promise<Principal> {
  const raw = readApiKey({ xApiKey: header(ctx.req, "x-api-key"), authorization: header(ctx.req, "authorization") });
  const principal: Principal = await authenticateKey(ctx.deps, raw);
  ctx.principal = principal;
  if (principal.mode === "test") ctx.res.headers["X-Service-Test-Mode"] = "true";
  // DECISIONS.md "Compatibility amendments": every response to an API key names its kind
  ctx.res.headers["X-Service-Key-Kind"] = principal.mode;
  const rl = await ctx.deps.limiter.check(principal.keyId, principal.tier);
  setRateLimitHeaders(ctx.res.headers, rl);
  if (!rl.allowed) {
    throw new CoreError("RATE_LIMIT_EXCEEDED", `At most ${rl.limit} requests per minute for this key.`, {
      retry_after: rl.reset,
    });
  }
  if (rule.scope && !principal.scopes.includes(rule.scope)) {
    throw new CoreError("INSUFFICIENT_SCOPE", `This endpoint requires the "${rule.scope}" scope.`, {
      required_scope: rule.scope,
      current_scopes: principal.scopes,
    });
  }
  if (rule.idempotent) {
    const k = header(ctx.req, "idempotency-key");
    if (k !== undefined) checkIdempotencyKey(k);
    else if (rule.idempotencyRequired) {
      throw new CoreError("IDEMPOTENCY_KEY_REQUIRED", "This operation requires an Idempotency-Key header.", {
        suggestion:
          "Send Idempotency-Key: <up to 128 characters of [A-Za-z0-9_-:]>; reuse it to get the same answer back.",
      });
    }
  }
  return principal;
}
