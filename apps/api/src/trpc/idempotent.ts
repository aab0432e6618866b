// Wraps a reserve-and-replay operation (SPEC.md "Idem." RR). Without an Idempotency-Key the operation
// just runs. The response stored for replay is the body, the status and the billing headers.

import { ERROR_CODES } from "@cua/base/errors";
import { abandonIdempotent, beginIdempotent, completeIdempotent, fingerprint } from "@cua/core/idempotency/idempotency";
import { idempotencyRefOf, withIdempotencyRef } from "@cua/core/idempotency/idempotency-scope";
import type { Principal } from "@cua/core/keys/authenticate-key";
import { ReplayedResponse, renderError, toCoreError } from "../http/render-error.ts";
import { baseUrlOf, type Ctx, header } from "./context.ts";

const REPLAYED_HEADERS = [
  "X-Credits-Charged",
  "X-Credits-Remaining",
  "X-Credits-Refunded",
  "Cache-Control",
  "Location",
];

export async function idempotent<T>(
  ctx: Ctx & { principal: Principal },
  input: unknown,
  fn: () => Promise<T>,
  opts: { scope?: string } = {},
): Promise<T> {
  const key = header(ctx.req, "idempotency-key");
  if (key === undefined) return fn();
  const p = ctx.principal;
  const scope = opts.scope ?? `key:${p.keyId}`;
  const begun = await beginIdempotent(ctx.deps, {
    scope,
    key,
    accountId: p.accountId,
    mode: p.mode,
    endpoint: ctx.endpoint ?? "unknown",
    bodyHash: fingerprint(input ?? null),
    pendingWindowSeconds: ctx.deps.env.IDEMPOTENCY_PENDING_WINDOW_SECONDS,
  });
  if (begun.kind === "replay") {
    ctx.res.headers["X-Service-Idempotent-Replay"] = "true";
    if (begun.status >= 400) throw new ReplayedResponse(begun.status, begun.body, begun.headers);
    Object.assign(ctx.res.headers, begun.headers);
    ctx.res.status = begun.status;
    return begun.body as T;
  }
  let result: T;
  try {
    // billed work tags its wallet hold with this key, so a retry with the same key never pays twice
    result = await withIdempotencyRef(idempotencyRefOf(scope, key), fn);
  } catch (e) {
    const ce = toCoreError(e);
    const status = ERROR_CODES[ce.code].status;
    if (ERROR_CODES[ce.code].sameKey || status === 400 || status === 422 || status >= 500) {
      // Input that was never accepted, transient failures and unknown outcomes are not stored:
      // a retry with the same key executes. (Settled outcomes such as 402/403/404/409 are replayed.)
      await abandonIdempotent(ctx.deps, begun.recordId).catch(() => abandonLater(ctx, begun.recordId));
    } else {
      const r = renderError(ce, ctx.requestId, baseUrlOf(ctx));
      await completeIdempotent(ctx.deps, begun.recordId, { status: r.status, body: r.body, headers: r.headers }).catch(
        () => {},
      );
    }
    throw e;
  }
  const headers: Record<string, string> = {};
  for (const h of REPLAYED_HEADERS) if (ctx.res.headers[h] !== undefined) headers[h] = ctx.res.headers[h]!;
  const stored = { status: ctx.res.status ?? 200, body: result, headers };
  // The work is done (and any charge captured): an overloaded database must not turn it into an error
  // whose retry runs it again. Storing is retried; if it still fails the answer goes out and the key
  // stays `processing` (a retry after the pending window runs again, without a second charge).
  for (const wait of [0, 200, 1000]) {
    if (wait) await new Promise((r) => setTimeout(r, wait));
    try {
      await completeIdempotent(ctx.deps, begun.recordId, stored);
      break;
    } catch (e) {
      ctx.deps.logger.warn("idempotent response not stored", { err: e instanceof Error ? e.message : String(e) });
    }
  }
  return result;
}

/**
 * The database refused to forget a failed call's record (it is why the call failed): keep trying in the
 * background, so that same-key retries execute once it is back instead of answering 409
 * IDEMPOTENCY_IN_FLIGHT for the whole pending window.
 */
function abandonLater(ctx: Ctx, recordId: string, attempt = 1): void {
  if (attempt > 150) return; // 5 minutes; the pending window lets the record be taken over after that
  const t = setTimeout(() => {
    abandonIdempotent(ctx.deps, recordId).catch(() => abandonLater(ctx, recordId, attempt + 1));
  }, 2000);
  t.unref();
}
