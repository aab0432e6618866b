// GET /v1/runs/{id}/events (SPEC.md "Events" 1; DECISIONS.md "Runs"): the run's lifecycle as Server-Sent
// Events. Every frame is persisted with a monotonic per-run seq: `id: <seq>`, `event: status|step|
// awaiting_human|billing|terminal`, `data: <json>`. Reconnect with `Last-Event-ID: <seq>` or `?after=<seq>`
// for an ordered replay after that cursor. Heartbeat comments `: ping` every 15 s. DECISIONS.md "Compatibility
// amendments": the persisted frames also include `resumed` and `error`, and after the durable terminal frame
// the stream sends a final `done` frame `{status, run_id}` (no `id:`, so a client's Last-Event-ID stays the
// terminal's seq), then closes; reconnecting after `done` replays nothing. A client connecting with an older
// cursor gets the replay, `done`, then the close.
// Auth, rate limit, scope runs:read, the run id format and the 404 run through the runs.get operation (its
// compiled /v1 chain, http/v1-routes.ts).
import { apiKeyCaller } from "@cua/core/operations/caller";
import { runEventsOp } from "@cua/core/runs/run-events.op";
import type { FastifyInstance } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { operationContext } from "../trpc/operations.ts";
import { serveEventStream } from "./event-stream.ts";
import { callOperation } from "./v1-routes.ts";

// its definition (schemas, scope, codes, OpenAPI entry) is packages/core/src/runs/run-events.op.ts
export function registerRunEvents(app: FastifyInstance, deps: AppDeps): void {
  serveEventStream(app, deps, {
    url: "/v1/runs/:id/events",
    endpoint: `${runEventsOp.method} /v1${runEventsOp.path}`,
    authorize: async (ctx, id) => {
      await callOperation(ctx, "runs.get", { id });
    },
    // the frames come from the operation's own stream (the console's subscription reads the same one)
    frames: (ctx, id, after, signal) =>
      runEventsOp.stream!(
        operationContext(ctx, runEventsOp as never, apiKeyCaller(ctx.principal!)),
        { id, after: String(after) },
        signal,
      ),
  });
}
