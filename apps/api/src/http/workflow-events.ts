// GET /v1/workflows/runs/{id}/events: a workflow run's events as Server-Sent Events, with the task-run
// stream's framing (runs-events.ts; DECISIONS.md "Workflows" Compatibility amendment): `id: <seq>`,
// `event: <name>`, `data: <json>`; replay after `Last-Event-ID` / `?after=`; `: ping` heartbeats; after the
// durable terminal frame a final `done` frame `{status, run_id}` (no id), then the close. Connecting after the
// end with the terminal frame already seen closes at once. Frames are read from the database (polled), so
// every API process serves every run.
// Auth, rate limit, scope workflows:read and the 404 run through the workflows.getRun procedure.
import { isTerminal } from "@cua/core/runs/run-record";
import { readWorkflowEvents, WORKFLOW_EVENTS_POLL_MS } from "@cua/core/workflows/workflow-events";
import { workflowRunEventsOp } from "@cua/core/workflows/workflows.op";
import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { appRouter } from "../trpc/router.ts";
import { type EventFrame, serveEventStream } from "./event-stream.ts";

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

export function registerWorkflowEvents(app: FastifyInstance, deps: AppDeps): void {
  const statusOf = new WeakMap<object, string>();
  serveEventStream(app, deps, {
    url: "/v1/workflows/runs/:id/events",
    endpoint: `${workflowRunEventsOp.method} /v1${workflowRunEventsOp.path}`,
    authorize: async (ctx, id) => {
      const run = await appRouter.createCaller(ctx).workflows.getRun({ id });
      statusOf.set(ctx, run.status);
    },
    frames: async function* (ctx, id, after, signal): AsyncGenerator<EventFrame> {
      if (isTerminal(statusOf.get(ctx) ?? "")) {
        const terminal = await deps.db.workflowRunEvent.findFirst({
          where: { runId: id, event: "terminal" },
          select: { seq: true },
        });
        if (terminal && terminal.seq <= after) return; // the client saw the end: nothing more
      }
      let cursor = after;
      while (!signal.aborted) {
        try {
          for (const f of await readWorkflowEvents(deps, id, cursor)) {
            cursor = f.seq;
            yield f;
            if (f.event === "terminal") return;
          }
        } catch (e) {
          ctx.req.log.warn({ err: e }, "workflow run events read failed");
        }
        await sleep(WORKFLOW_EVENTS_POLL_MS, signal);
      }
    },
  });
}
