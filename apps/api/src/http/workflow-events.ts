// GET /v1/workflows/runs/{id}/events: a workflow run's events as Server-Sent Events, with the task-run
// stream's framing (runs-events.ts; DECISIONS.md "Workflows" Compatibility amendment): `id: <seq>`,
// `event: <name>`, `data: <json>`; replay after `Last-Event-ID` / `?after=`; `: ping` heartbeats; after the
// durable terminal frame a final `done` frame `{status, run_id}` (no id), then the close. Connecting after the
// end with the terminal frame already seen closes at once. Frames are read from the database (polled), so
// every API process serves every run.
// Auth, rate limit, scope workflows:read and the 404 run through the workflows.getRun procedure.
import { CoreError } from "@cua/core/errors";
import { isTerminal } from "@cua/core/runs/run-record";
import { readWorkflowEvents, WORKFLOW_EVENTS_POLL_MS } from "@cua/core/workflows/workflow-events";
import { workflowRunEventsOp } from "@cua/core/workflows/workflows.op";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf, createContextFactory } from "../trpc/context.ts";
import { appRouter } from "../trpc/router.ts";
import { renderError, toCoreError } from "./render-error.ts";

const ENDPOINT = `${workflowRunEventsOp.method} /v1${workflowRunEventsOp.path}`;

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

export function registerWorkflowEvents(app: FastifyInstance, deps: AppDeps): void {
  const heartbeatMs = deps.env.RUN_SSE_HEARTBEAT_MS;
  app.get("/v1/workflows/runs/:id/events", async (req: FastifyRequest, reply: FastifyReply) => {
    const ctx = createContextFactory(deps, "rest")({ req });
    const { id } = req.params as { id: string };
    let after: number;
    let status: string;
    try {
      const run = await appRouter.createCaller(ctx).workflows.getRun({ id });
      after = cursorOf(req);
      status = run.status;
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
    let timer: NodeJS.Timeout | null = null;
    const heartbeat = setInterval(() => raw.write(": ping\n\n"), heartbeatMs);
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      if (timer) clearTimeout(timer);
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

    if (isTerminal(status)) {
      const terminal = await deps.db.workflowRunEvent.findFirst({
        where: { runId: id, event: "terminal" },
        select: { seq: true },
      });
      if (terminal && terminal.seq <= after) return end();
    }
    let cursor = after;
    const poll = async () => {
      timer = null;
      if (ended) return;
      try {
        const frames = await readWorkflowEvents(deps, id, cursor);
        let chunk = "";
        let last = false;
        for (const f of frames) {
          cursor = f.seq;
          chunk += `id: ${f.seq}\nevent: ${f.event}\ndata: ${JSON.stringify(f.data)}\n\n`;
          if (f.event === "terminal") {
            const d = f.data as { status?: string };
            chunk += `event: done\ndata: ${JSON.stringify({ status: d.status, run_id: id })}\n\n`;
            last = true;
            break;
          }
        }
        if (chunk && !ended) raw.write(chunk);
        if (last) return end();
      } catch (e) {
        req.log.warn({ err: e }, "workflow run events read failed");
      }
      if (!ended) timer = setTimeout(() => void poll(), WORKFLOW_EVENTS_POLL_MS);
    };
    await poll();
  });
}
