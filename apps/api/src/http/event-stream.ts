// The one Server-Sent Events transport for persisted event streams (task runs, workflow runs): SPEC.md
// "Events" framing `id: <seq>`, `event: <name>`, `data: <json>`; replay after `Last-Event-ID` / `?after=`;
// `: ping` heartbeats; DECISIONS.md "Compatibility amendments": after the durable terminal frame a final
// `done` frame `{status, run_id}` (no `id:`, so a client's Last-Event-ID stays the terminal's seq), then the
// close. The frames, `done` included, come from the operation's own stream in core (the console's
// subscription reads the same one; packages/core/src/runs/done-frame.ts); this file only frames them. Errors before the stream opens (auth, scope, id, cursor, 404) are the JSON envelope. The stream's
// usage row is recorded when it ends (Fastify's hooks do not see hijacked replies).
import { CoreError } from "@cua/base/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf, type Ctx, createContextFactory } from "../trpc/context.ts";
import { renderError, toCoreError } from "./render-error.ts";

/** the last frame of core's streams (packages/core/src/runs/done-frame.ts) */
const DONE_EVENT = "done";

export interface EventFrame {
  seq: number;
  event: string;
  data: unknown;
}

export interface EventStreamRoute {
  /** Fastify route url, e.g. "/v1/runs/:id/events" */
  url: string;
  /** usage endpoint template, e.g. "GET /v1/runs/{id}/events" (from the operation's definition) */
  endpoint: string;
  /** auth, scope and the 404 through the resource's own procedure; throws a CoreError to refuse */
  authorize(ctx: Ctx, id: string): Promise<void>;
  /** the frames after `after`, ending with the terminal and `done` frames (or at once when the client saw them) */
  frames(ctx: Ctx, id: string, after: number, signal: AbortSignal): AsyncIterable<EventFrame>;
}

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

export function serveEventStream(app: FastifyInstance, deps: AppDeps, route: EventStreamRoute): void {
  const heartbeatMs = deps.env.RUN_SSE_HEARTBEAT_MS;
  app.get(route.url, async (req: FastifyRequest, reply: FastifyReply) => {
    const ctx = createContextFactory(deps, "rest")({ req });
    const { id } = req.params as { id: string };
    let after: number;
    try {
      await route.authorize(ctx, id);
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
      ctx.endpoint = route.endpoint;
    }

    reply.hijack();
    req.svcCtx = undefined; // usage is recorded when the stream ends
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
          endpoint: route.endpoint,
          status: 200,
          creditsCharged: 0,
          requestId: String(req.id),
          at: new Date(),
        });
      }
    };
    req.raw.once("close", end);
    raw.once("close", end);

    try {
      for await (const f of route.frames(ctx, id, after, stop.signal)) {
        if (ended) break;
        if (f.event === DONE_EVENT) {
          // the stream's own last frame (core's done-frame.ts): no `id:`, then the close
          raw.write(`event: ${DONE_EVENT}\ndata: ${JSON.stringify(f.data)}\n\n`);
          break;
        }
        raw.write(`id: ${f.seq}\nevent: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`);
      }
    } catch (e) {
      req.log.warn({ err: e }, "event stream read failed");
    }
    end();
  });
}
