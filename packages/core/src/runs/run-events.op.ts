// GET /v1/runs/{id}/events: Server-Sent Events (served by apps/api/src/http/runs-events.ts; the console
// receives the same frames as a tRPC subscription generated from this definition).

import { CoreError } from "@cua/base/errors";
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { streamRunEvents } from "./run-events.ts";
import { RunId } from "./schemas.ts";

export const RunEventFrameSchema = z.object({
  seq: z.number().int().describe("monotonic per run; the SSE `id:`"),
  event: z.string().describe("status, step, awaiting_human, billing or terminal"),
  data: z.unknown().describe("the frame's JSON"),
  created_at: z.string().describe("ISO 8601 timestamp"),
});

export const runEventsOp = defineOperation({
  id: "runs.events",
  method: "GET",
  path: "/runs/{id}/events",
  scope: "runs:read",
  transport: "sse",
  input: z.object({
    id: RunId,
    after: z.string().optional().describe("replay frames with seq > after (or send Last-Event-ID)"),
  }),
  output: RunEventFrameSchema,
  requestHeaders: [{ name: "Last-Event-ID", description: "the id of the last frame received (same as after)" }],
  errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND", "INVALID_CURSOR"],
  docs: {
    tags: ["Runs"],
    summary: "Stream a task run's events",
    description:
      "Server-Sent Events. Each frame: `id: <seq>` (monotonic per run), `event:` status | step | awaiting_human | billing | terminal, `data:` JSON — status `{run_id, status, note?}`, step `{run_id, step, action, actions, reasoning}`, awaiting_human `{run_id, reason}`, billing `{run_id, step, credits_charged, total_credits_charged}`, terminal `{run_id, status, result, error}`. Every frame is persisted; reconnect with `Last-Event-ID: <seq>` or `?after=<seq>` for an ordered replay after that cursor. `: ping` comments every 15 s. The stream closes after the terminal frame (also for a client that connects after the end: replay, then close). The run resource (GET /v1/runs/{id}) is authoritative.",
  },
  console: "shared",
  stream: (ctx, input, signal) => {
    const raw = input.after ?? "";
    if (raw !== "" && !/^\d{1,10}$/.test(raw.trim())) {
      throw new CoreError("INVALID_CURSOR", "after / Last-Event-ID must be a non-negative integer event seq.");
    }
    return streamRunEvents(ctx.deps, ctx.caller, input.id, raw === "" ? 0 : Number(raw.trim()), signal);
  },
});
