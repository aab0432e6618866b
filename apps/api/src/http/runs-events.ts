// GET /v1/runs/{id}/events (SPEC.md "Events" 1; DECISIONS.md "Runs"): the run's lifecycle as Server-Sent
// Events. Every frame is persisted with a monotonic per-run seq: `id: <seq>`, `event: status|step|
// awaiting_human|billing|terminal`, `data: <json>`. Reconnect with `Last-Event-ID: <seq>` or `?after=<seq>`
// for an ordered replay after that cursor. Heartbeat comments `: ping` every 15 s. DECISIONS.md "Compatibility
// amendments": the persisted frames also include `resumed` and `error`, and after the durable terminal frame
// the stream sends a final `done` frame `{status, run_id}` (no `id:`, so a client's Last-Event-ID stays the
// terminal's seq), then closes; reconnecting after `done` replays nothing. A client connecting with an older
// cursor gets the replay, `done`, then the close.
// Auth, rate limit, scope runs:read, the run id format and the 404 run through the runs.get procedure.
import { CoreError } from "@cua/core/errors";
import { apiKeyCaller } from "@cua/core/operations/caller";
import { runEventsOp } from "@cua/core/runs/run-events.op";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf, createContextFactory } from "../trpc/context.ts";
import { operationContext } from "../trpc/operations.ts";
import { appRouter } from "../trpc/router.ts";
import { renderError, toCoreError } from "./render-error.ts";

// its definition (schemas, scope, codes, OpenAPI entry) is packages/core/src/runs/run-events.op.ts
const ENDPOINT = `${runEventsOp.method} /v1${runEventsOp.path}`;

function cursorOf(req: FastifyRequest): number {
  const q = (req.query ?? {}) as Record<string, unknown>;
  const raw =
    (typeof q.after === "string" ? q.after : undefined) ?? (req.headers["last-event-id"] as string | undefined);
  if (raw === undefined || raw === "") return 0;
  if (!/^\d{1,10}$/.test(raw.trim())) {
    throw new CoreError("INVALID_CURSOR", "after / Last-Event-ID must be a non-negative integer event seq.");
  }
  return Number(raw.trim());
}

export function registerRunEvents(app: FastifyInstance, deps: AppDeps): void {
  const heartbeatMs = deps.env.RUN_SSE_HEARTBEAT_MS;
  app.get("/v1/runs/:id/events", async (req: FastifyRequest, reply: FastifyReply) => {
    const ctx = createContextFactory(deps, "rest")({ req });
    const { id } = req.params as { id: string };
    let after: number;
    try {
      await appRouter.createCaller(ctx).runs.get({ id });
      after = cursorOf(req);
    } catch (e) {
      const ce = toCoreError(e, "query");
      if (ce.code === "INTERNAL_ERROR")
        req.log.error({ err: (ce as { original?: unknown }).original ?? e }, "internal error");
      const r = renderError(ce, ctx.requestId, baseUrlOf(ctx));
      return reply
        .code(r.status)
        .headers({ ...ctx.res.headers, ...r.headers })
        .type("application/json")
        .send(r.body);
    } finally {
      ctx.endpoint = ENDPOINT;
    }

    reply.hijack();
    req.svcCtx = undefined; // usage is recorded when the stream ends (hooks do not see hijacked replies)
    const raw = reply.raw;
    raw.writeHead(200, {
      ...ctx.res.headers,
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
      "X-Service-Request-Id": String(req.id),
    });
    raw.write("retry: 2000\n\n");
    let ended = false;
    const stop = new AbortController();
    const heartbeat = setInterval(() => raw.write(": ping\n\n"), heartbeatMs);
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      stop.abort();
      raw.end();
      if (ctx.principal) {
        deps.usage.record({
          accountId: ctx.principal.accountId,
          mode: ctx.principal.mode,
          apiKeyId: ctx.principal.keyId,
          method: "GET",
          endpoint: ENDPOINT,
          status: 200,
          creditsCharged: 0,
          requestId: String(req.id),
          at: new Date(),
        });
      }
    };
    req.raw.once("close", end);
    raw.once("close", end);

    // the frames come from the operation's own stream (the console's subscription reads the same one)
    const caller = apiKeyCaller(ctx.principal!);
    const frames = runEventsOp.stream!(
      operationContext(ctx, runEventsOp as never, caller),
      { id, after: String(after) },
      stop.signal,
    );
    try {
      for await (const f of frames) {
        if (ended) break;
        let chunk = `id: ${f.seq}\nevent: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`;
        if (f.event === "terminal") {
          const d = f.data as { status?: string };
          chunk += `event: done\ndata: ${JSON.stringify({ status: d.status, run_id: id })}\n\n`;
        }
        raw.write(chunk);
      }
    } catch (e) {
      req.log.warn({ err: e }, "run events read failed");
    }
    end();
  });
}
