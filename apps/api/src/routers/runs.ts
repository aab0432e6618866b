import { cancelRun } from "@cua/core/runs/cancel-run";
import { createRun } from "@cua/core/runs/create-run";
import { getRun, listRuns } from "@cua/core/runs/get-run";
import { resumeRun } from "@cua/core/runs/resume-run";
import { idempotent } from "../trpc/idempotent.ts";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";
import { callContext } from "./predict-helpers.ts";
import { CreateRunBody, ListRunsQuery, ResumeRunBody, RunIdInput, RunList, RunRecordSchema } from "./runs.types.ts";

const meta = (
  method: "GET" | "POST",
  path: `/${string}`,
  scope: "runs:read" | "runs:write",
  summary: string,
  description: string,
) => ({
  scope,
  openapi: { method, path, tags: ["Runs"], summary, description },
});

export const runsRouter = router({
  create: apiProcedure
    .meta({
      ...meta(
        "POST",
        "/runs",
        "runs:write",
        "Create a task run",
        "Starts an agent on a machine (status queued). The wallet must cover one step (5 credits v3/v4/v5, 8 v1; 0 with BYOK or a test key); each completed step is billed once. `webhook_secret` is in this response and its exact replay only. BYOK: X-LLM-Provider / X-LLM-Api-Key (live keys; a test key gets 422 LLM_PROVIDER_UNSUPPORTED).",
      ),
      idempotent: true,
      successStatus: 201,
      errors: [
        "INVALID_MACHINE_ID",
        "NOT_FOUND",
        "INSUFFICIENT_CREDITS",
        "INVALID_STATE",
        "LLM_PROVIDER_UNSUPPORTED",
        "LLM_KEY_NOT_CONFIGURED",
        "IDEMPOTENCY_IN_FLIGHT",
        "IDEMPOTENCY_KEY_REUSED",
        "INVALID_IDEMPOTENCY_KEY",
      ],
    })
    .input(CreateRunBody)
    .output(RunRecordSchema)
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => {
        const run = await createRun(ctx.deps, callContext(ctx), input);
        ctx.res.status = 201;
        return run;
      }),
    ),
  list: apiProcedure
    .meta({
      ...meta("GET", "/runs", "runs:read", "List task runs", "Newest first; filter by status; cursor-paginated."),
      errors: ["INVALID_LIMIT", "INVALID_STATUS_FILTER", "INVALID_CURSOR"],
    })
    .input(ListRunsQuery)
    .output(RunList)
    .query(({ ctx, input }) =>
      listRuns(ctx.deps, ctx.principal, {
        status: input.status,
        limit: input.limit === undefined ? undefined : Number(input.limit),
        cursor: input.cursor,
      }),
    ),
  get: apiProcedure
    .meta({
      ...meta(
        "GET",
        "/runs/{id}",
        "runs:read",
        "Get a task run",
        "The authoritative run record, with its callback delivery history.",
      ),
      errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND"],
    })
    .input(RunIdInput)
    .output(RunRecordSchema)
    .query(({ ctx, input }) => getRun(ctx.deps, ctx.principal, input.id)),
  cancel: apiProcedure
    .meta({
      ...meta(
        "POST",
        "/runs/{id}/cancel",
        "runs:write",
        "Cancel a task run",
        "Any non-terminal state -> cancelled. A terminal run: 409 INVALID_STATE with current_state.",
      ),
      errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND", "INVALID_STATE"],
    })
    .input(RunIdInput)
    .output(RunRecordSchema)
    .mutation(({ ctx, input }) => cancelRun(ctx.deps, ctx.principal, input.id)),
  resume: apiProcedure
    .meta({
      ...meta(
        "POST",
        "/runs/{id}/resume",
        "runs:write",
        "Resume a task run",
        "awaiting_human -> running, with an optional note. Another state: 409 NOT_AWAITING_HUMAN; a resume that lost a race: 409 RESUME_CONFLICT.",
      ),
      errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND", "NOT_AWAITING_HUMAN", "RESUME_CONFLICT"],
    })
    .input(ResumeRunBody.extend(RunIdInput.shape))
    .output(RunRecordSchema)
    .mutation(({ ctx, input }) => resumeRun(ctx.deps, ctx.principal, input.id, input.note ?? null)),
});
