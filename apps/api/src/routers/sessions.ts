import {
  SessionCreateBody,
  SessionInfo,
  SessionPredictBody,
  SessionPredictResponse,
  UsageSchema,
} from "@cua/core/predict/schemas";
import {
  createSession,
  deleteSession,
  getSession,
  listSessions,
  resetSession,
  sessionPredict,
} from "@cua/core/predict/sessions";
import { z } from "zod";
import { idempotent } from "../trpc/idempotent.ts";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";
import { billed, callContext } from "./predict-helpers.ts";

const SessionId = z.object({ session_id: z.string().describe("ses_<24 hex>") });
const meta = (method: "GET" | "POST" | "DELETE", path: `/${string}`, summary: string, description: string) => ({
  scope: "session" as const,
  openapi: { method, path, tags: ["Sessions"], summary, description },
});

export const sessionsRouter = router({
  create: apiProcedure
    .meta({
      ...meta(
        "POST",
        "/sessions",
        "Create a session",
        "10 credits (0 with BYOK or a test key); no inference call. Concurrent sessions per tier: free 2, starter 5, professional 20, enterprise 100.",
      ),
      idempotent: true,
      successStatus: 201,
      errors: [
        "INPUT_TOO_LARGE",
        "INSUFFICIENT_CREDITS",
        "SESSION_LIMIT_REACHED",
        "LLM_KEY_NOT_CONFIGURED",
        "LLM_PROVIDER_UNSUPPORTED",
        "IDEMPOTENCY_IN_FLIGHT",
        "IDEMPOTENCY_KEY_REUSED",
        "INVALID_IDEMPOTENCY_KEY",
      ],
    })
    .input(SessionCreateBody)
    .output(SessionInfo.extend({ usage: UsageSchema }))
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => billed(ctx, await createSession(ctx.deps, callContext(ctx), input), 201)),
    ),
  list: apiProcedure
    .meta(meta("GET", "/sessions", "List sessions", "Active sessions of the calling key."))
    .input(z.void())
    .output(z.object({ sessions: z.array(SessionInfo) }))
    .query(({ ctx }) => listSessions(ctx.deps, ctx.principal)),
  get: apiProcedure
    .meta({
      ...meta("GET", "/sessions/{session_id}", "Get a session", "Unknown or expired: 404 SESSION_NOT_FOUND."),
      errors: ["SESSION_NOT_FOUND"],
    })
    .input(SessionId)
    .output(SessionInfo)
    .query(({ ctx, input }) => getSession(ctx.deps, ctx.principal, input.session_id)),
  delete: apiProcedure
    .meta({
      ...meta("DELETE", "/sessions/{session_id}", "Delete a session", "Frees the concurrent-session slot."),
      errors: ["SESSION_NOT_FOUND"],
    })
    .input(SessionId)
    .output(z.object({ session_id: z.string(), deleted: z.literal(true) }))
    .mutation(({ ctx, input }) => deleteSession(ctx.deps, ctx.principal, input.session_id)),
  reset: apiProcedure
    .meta({
      ...meta(
        "POST",
        "/sessions/{session_id}/reset",
        "Reset a session",
        "Clears the trajectory and restarts the idle TTL.",
      ),
      errors: ["SESSION_NOT_FOUND"],
    })
    .input(SessionId)
    .output(z.object({ session_id: z.string(), reset: z.literal(true), step_count: z.literal(0) }))
    .mutation(({ ctx, input }) => resetSession(ctx.deps, ctx.principal, input.session_id)),
  predict: apiProcedure
    .meta({
      ...meta(
        "POST",
        "/sessions/{session_id}/predict",
        "Predict within a session",
        "4 credits base plus surcharges (trajectory images after compaction); inherits provider and key from session creation. `Accept: text/event-stream` streams.",
      ),
      idempotent: true,
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
        "IDEMPOTENCY_IN_FLIGHT",
        "IDEMPOTENCY_KEY_REUSED",
        "INVALID_IDEMPOTENCY_KEY",
      ],
    })
    .input(SessionPredictBody.extend(SessionId.shape))
    .output(SessionPredictResponse)
    .mutation(({ ctx, input }) => {
      const { session_id, ...body } = input;
      return idempotent(ctx, input, async () =>
        billed(ctx, await sessionPredict(ctx.deps, callContext(ctx, false), session_id, body)),
      );
    }),
});
