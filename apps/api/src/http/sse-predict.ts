// `Accept: text/event-stream` on the operations whose definition says `alsoServes: ["text/event-stream"]`
// (POST /v1/predict and POST /v1/sessions/{id}/predict; SPEC.md "Events" 4, DECISIONS.md "Prediction"): the
// operation's compiled route (./v1-routes.ts) runs the same chain (auth, scope, validation, idempotency,
// billing) while the client receives `event: keepalive` every 5 s, then one `event: result` (the JSON body)
// or `event: error` (the error envelope), then the stream ends.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf, type Ctx, whereOf } from "../trpc/context.ts";
import { ReplayedResponse, renderError, toCoreError } from "./render-error.ts";

export const KEEPALIVE_MS = 5000;

/** Answers one operation call as an event stream; `run` is the operation's whole chain. */
export async function serveSseAnswer(
  deps: AppDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  ctx: Ctx,
  run: () => Promise<unknown>,
): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-store",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
    "X-Service-Request-Id": String(req.id),
  });
  const send = (event: string, data: unknown) => raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  send("keepalive", {});
  const ka = setInterval(() => send("keepalive", {}), KEEPALIVE_MS);
  let status = 200;
  try {
    send("result", await run());
  } catch (e) {
    if (e instanceof ReplayedResponse) {
      status = e.status;
      send("error", e.body);
    } else {
      const ce = toCoreError(e, whereOf(ctx));
      if (ce.code === "INTERNAL_ERROR") req.log.error({ err: (ce as any).original ?? e }, "internal error");
      const r = renderError(ce, ctx.requestId, baseUrlOf(ctx));
      status = r.status;
      send("error", r.body);
    }
  } finally {
    clearInterval(ka);
    raw.end();
  }
  if (ctx.principal && ctx.endpoint) {
    deps.usage.record({
      accountId: ctx.principal.accountId,
      mode: ctx.principal.mode,
      apiKeyId: ctx.principal.keyId,
      method: "POST",
      endpoint: ctx.endpoint,
      status,
      creditsCharged: ctx.res.creditsCharged,
      requestId: String(req.id),
      at: new Date(),
    });
  }
}
