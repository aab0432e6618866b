// GET /v1/workflows/runs/{id}/events: a workflow run's events as Server-Sent Events, with the task-run
// stream's framing (runs-events.ts; DECISIONS.md "Workflows" Compatibility amendment): `id: <seq>`,
// `event: <name>`, `data: <json>`; replay after `Last-Event-ID` / `?after=`; `: ping` heartbeats; after the
// durable terminal frame a final `done` frame `{status, run_id}` (no id), then the close. Connecting after the
// end with the terminal frame already seen closes at once. Frames are read from the database (polled), so
// every API process serves every run.
// Auth, rate limit, scope workflows:read and the 404 run through the workflows.getRun operation (its compiled
// /v1 chain, http/v1-routes.ts); the frames are the operation's own stream (packages/core/src/workflows/workflow-events.ts), which the console's
// subscription reads too.
import { apiKeyCaller } from "@cua/core/operations/caller";
import { workflowRunEventsOp } from "@cua/core/workflows/workflows.op";
import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { operationContext } from "../trpc/operations.ts";
import { serveEventStream } from "./event-stream.ts";
import { callOperation } from "./v1-routes.ts";

export function registerWorkflowEvents(app: FastifyInstance, deps: AppDeps): void {
  serveEventStream(app, deps, {
    url: "/v1/workflows/runs/:id/events",
    endpoint: `${workflowRunEventsOp.method} /v1${workflowRunEventsOp.path}`,
    authorize: async (ctx, id) => {
      await callOperation(ctx, "workflows.getRun", { id });
    },
    frames: (ctx, id, after, signal) =>
      workflowRunEventsOp.stream!(
        operationContext(ctx, workflowRunEventsOp as never, apiKeyCaller(ctx.principal!)),
        { id, after: String(after) },
        signal,
      ),
  });
}
