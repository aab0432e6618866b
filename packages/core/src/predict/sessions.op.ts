// Sessions: a server-side trajectory for multi-step prediction (SPEC "Sessions").
import { z } from "zod";
import { billed, callContext } from "../operations/call-context.ts";
import { defineOperation } from "../operations/define.ts";
import { limitQuery, listOf } from "../operations/list.ts";
import { SessionCreateBody, SessionInfo, SessionPredictBody, SessionPredictResponse, UsageSchema } from "./schemas.ts";
import { createSession, deleteSession, getSession, listSessions, resetSession, sessionPredict } from "./sessions.ts";

const SessionId = z.object({ session_id: z.string().describe("ses_<24 hex>") });
const tags = ["Sessions"];

export const createSessionOp = defineOperation({
  id: "sessions.create",
  method: "POST",
  path: "/sessions",
  scope: "session",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: SessionCreateBody,
  output: SessionInfo.extend({ usage: UsageSchema }),
  billing: "10 credits; 0 with BYOK or a test key",
  errors: [
    "INPUT_TOO_LARGE",
    "INSUFFICIENT_CREDITS",
    "SESSION_LIMIT_REACHED",
    "LLM_KEY_NOT_CONFIGURED",
    "LLM_PROVIDER_UNSUPPORTED",
  ],
  docs: {
    tags,
    summary: "Create a session",
    description:
      "10 credits (0 with BYOK or a test key); no inference call. Concurrent sessions per tier: free 2, starter 5, professional 20, enterprise 100.",
  },
  mcp: { tool: "create_session", group: "predict" },
  handler: async (ctx, input) => billed(ctx, await createSession(ctx.deps, callContext(ctx), input)),
});

export const listSessionsOp = defineOperation({
  id: "sessions.list",
  method: "GET",
  path: "/sessions",
  scope: "session",
  input: z
    .object({
      limit: limitQuery(),
      cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
    })
    .optional(),
  output: listOf(SessionInfo, "active sessions of the calling key, newest first", {
    sessions: z.array(SessionInfo).describe("the same array as data (SPEC's name)"),
  }),
  errors: ["INVALID_LIMIT", "INVALID_CURSOR"],
  docs: {
    tags,
    summary: "List sessions",
    description: "Active sessions of the calling key, newest first; `sessions` repeats `data` (SPEC's name).",
  },
  handler: (ctx, input) => listSessions(ctx.deps, ctx.caller, input ?? {}),
});

export const getSessionOp = defineOperation({
  id: "sessions.get",
  method: "GET",
  path: "/sessions/{session_id}",
  scope: "session",
  input: SessionId,
  output: SessionInfo,
  errors: ["SESSION_NOT_FOUND"],
  docs: { tags, summary: "Get a session", description: "Unknown or expired: 404 SESSION_NOT_FOUND." },
  handler: (ctx, input) => getSession(ctx.deps, ctx.caller, input.session_id),
});

export const deleteSessionOp = defineOperation({
  id: "sessions.delete",
  method: "DELETE",
  path: "/sessions/{session_id}",
  scope: "session",
  input: SessionId,
  output: z.object({ status: z.literal("ok"), session_id: z.string(), deleted: z.literal(true) }),
  errors: ["SESSION_NOT_FOUND"],
  docs: { tags, summary: "Delete a session", description: "Frees the concurrent-session slot." },
  mcp: { tool: "end_session", group: "predict" },
  handler: (ctx, input) => deleteSession(ctx.deps, ctx.caller, input.session_id),
});

export const resetSessionOp = defineOperation({
  id: "sessions.reset",
  method: "POST",
  path: "/sessions/{session_id}/reset",
  scope: "session",
  input: SessionId,
  output: z.object({
    status: z.literal("ok"),
    session_id: z.string(),
    reset: z.literal(true),
    step_count: z.literal(0).describe("steps the trajectory holds; the next predict's `step` goes on counting"),
  }),
  errors: ["SESSION_NOT_FOUND"],
  docs: { tags, summary: "Reset a session", description: "Clears the trajectory and restarts the idle TTL." },
  handler: (ctx, input) => resetSession(ctx.deps, ctx.caller, input.session_id),
});

export const sessionPredictOp = defineOperation({
  id: "sessions.predict",
  method: "POST",
  path: "/sessions/{session_id}/predict",
  scope: "session",
  idempotency: "reserve-and-replay",
  input: SessionPredictBody.extend(SessionId.shape),
  output: SessionPredictResponse,
  billing: "4 credits base plus surcharges; 0 with BYOK or a test key",
  errors: [
    "SESSION_NOT_FOUND",
    "INVALID_SCREENSHOT",
    "INSUFFICIENT_CREDITS",
    "LLM_KEY_NOT_CONFIGURED",
    "LLM_KEY_INVALID",
    "PREDICTION_FAILED",
    "UPSTREAM_UNAVAILABLE",
    "UPSTREAM_TIMEOUT",
    "BILLING_UNAVAILABLE",
  ],
  docs: {
    tags,
    summary: "Predict within a session",
    description:
      "4 credits base plus surcharges (trajectory images after compaction); inherits provider and key from session creation. `Accept: text/event-stream` streams.",
  },
  alsoServes: ["text/event-stream"],
  mcp: { tool: "session_predict", group: "predict" },
  handler: async (ctx, input) => {
    const { session_id, ...body } = input;
    return billed(ctx, await sessionPredict(ctx.deps, callContext(ctx, false), session_id, body));
  },
});
