// Shapes of the /v1/runs routes (SPEC.md "Run", "Runs"; DECISIONS.md "Runs"). Path and query values
// SPEC gives a 400 code (run id, limit, status filter) carry it on their zod issue, so they answer 400
// before any 422 of the body.
import { ActionPolicySchema } from "@cua/core/policy/action-policy";
import { CuaVersionSchema } from "@cua/core/predict/schemas";
import { isValidRunId, MAX_ITERATIONS_LIMIT, MAX_STEPS_LIMIT, RUN_STATUSES } from "@cua/core/runs/run-record";
import { z } from "zod";
import { NullableTimestamp, Timestamp } from "./common.types.ts";

const coded = (errorCode: string, message: string) => ({ message, params: { errorCode } });

export const RunId = z
  .string()
  .refine(isValidRunId, coded("INVALID_RUN_ID", "must be 1 to 128 characters of [A-Za-z0-9_-]"))
  .describe("run id: run_<24 hex> (live) or run_test_<24 hex> (test)");

export const RunIdInput = z.object({ id: RunId });

export const CreateRunBody = z.strictObject({
  machine_id: z
    .string()
    .min(1)
    .max(128)
    .describe("the machine to drive: a UUID (live key) or mch_test_<hex> (test key)"),
  task: z
    .string()
    .min(1)
    .max(16_000)
    .describe(
      "what the agent should do, in plain language (test keys: sandbox directives #steps=N, #fail, #human, #slow=MS, #timeout)",
    ),
  cua_version: CuaVersionSchema.optional(),
  max_steps: z
    .number()
    .int()
    .min(1)
    .max(MAX_STEPS_LIMIT)
    .optional()
    .describe("1 to 1000 (default 50): completed steps before the run fails with MAX_STEPS_EXCEEDED"),
  on_awaiting_human: z
    .enum(["pause", "fail", "cancel"])
    .optional()
    .describe("when the agent needs a human: pause (default), fail, or cancel"),
  webhook_url: z
    .string()
    .max(2048)
    .optional()
    .describe("https URL for run callbacks; must not resolve to loopback, private, link-local or metadata addresses"),
  budget_cents: z
    .number()
    .int()
    .min(0)
    .max(100_000_000)
    .optional()
    .describe(
      "0 (default) = no budget guard; otherwise the run fails with BUDGET_EXCEEDED before a step that would push cost_cents past it",
    ),
  max_iterations: z
    .number()
    .int()
    .min(1)
    .max(MAX_ITERATIONS_LIMIT)
    .optional()
    .describe(
      "at most 1000 (default 2 x max_steps): agent iterations (engine calls and pauses) before the run fails with MAX_ITERATIONS_EXCEEDED",
    ),
  action_policy: ActionPolicySchema.optional().describe(
    "optional action policy enforced on every step (a violation fails the run with ACTION_POLICY_VIOLATION)",
  ),
});

export const ResumeRunBody = z.strictObject({
  note: z.string().max(10_000).optional().describe("recorded in the run's status frame"),
});

export const ListRunsQuery = z.object({
  status: z
    .string()
    .optional()
    .refine(
      (v) => v === undefined || (RUN_STATUSES as readonly string[]).includes(v),
      coded("INVALID_STATUS_FILTER", `one of ${RUN_STATUSES.join(", ")}`),
    )
    .describe(`filter: ${RUN_STATUSES.join(", ")}`),
  limit: z
    .string()
    .optional()
    .refine(
      (v) => v === undefined || (/^\d{1,3}$/.test(v) && Number(v) >= 1 && Number(v) <= 200),
      coded("INVALID_LIMIT", "an integer from 1 to 200"),
    )
    .describe("1 to 200 (default 50)"),
  cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
});

const RunErrorSchema = z
  .object({ code: z.string().describe("stable run error code"), message: z.string().describe("human text") })
  .catchall(z.unknown())
  .describe("why the run failed, was cancelled by policy or timed out");

const CallbackAttemptSchema = z.object({
  attempt: z.number().int().describe("1 to 3"),
  at: Timestamp,
  status_code: z.number().int().nullable().describe("HTTP status of the answer, null when none came"),
  error: z.string().nullable().describe("why the attempt failed, null when delivered"),
  duration_ms: z.number().int().describe("time to the answer"),
});

const CallbackSchema = z.object({
  id: z.string().describe("dlv_<hex>: the stable delivery id (body.id and Service-Delivery-Id)"),
  event: z.string().describe("run.awaiting_human, run.succeeded, run.failed, run.cancelled or run.timed_out"),
  status: z.enum(["pending", "delivered", "failed"]).describe("delivery state"),
  attempts: z.array(CallbackAttemptSchema).describe("recorded attempts (at most 3)"),
  created_at: Timestamp,
  delivered_at: NullableTimestamp,
});

export const RunRecordSchema = z
  .object({
    id: z.string().describe("run id"),
    status: z.enum(RUN_STATUSES).describe("queued, running, awaiting_human, succeeded, failed, cancelled or timed_out"),
    machine_id: z.string().describe("the machine the run drives"),
    task: z.string().describe("the task"),
    cua_version: z.string().describe("engine strategy"),
    max_steps: z.number().int().describe("step limit"),
    max_iterations: z.number().int().describe("iteration limit"),
    on_awaiting_human: z.enum(["pause", "fail", "cancel"]).describe("what happens when the agent needs a human"),
    budget_cents: z.number().int().describe("0 = no budget guard"),
    webhook_url: z.string().nullable().describe("callback target"),
    webhook_secret: z
      .string()
      .nullable()
      .describe("whsec_<64 hex>: only in the create response and its exact replay; null elsewhere"),
    step_count: z.number().int().describe("completed (billed) steps"),
    iteration_count: z.number().int().describe("agent iterations so far"),
    awaiting_human_reason: z
      .string()
      .nullable()
      .describe("why the run waits for a human (e.g. stalled, human_requested)"),
    result: z.unknown().describe("the outcome of a succeeded run ({reasoning, steps}), else null"),
    error: RunErrorSchema.nullable(),
    usage: z
      .object({
        credits_charged: z.number().int().describe("credits billed so far"),
        cost_cents: z.number().int().describe("the same in cents"),
      })
      .describe("billing so far"),
    llm: z
      .object({
        provider: z.string().describe("managed, anthropic or openai"),
        model: z.string().nullable().describe("engine model"),
        billed_to: z.enum(["platform", "provider"]).describe("provider = BYOK (0 platform credits)"),
      })
      .describe("engine attribution"),
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: NullableTimestamp,
    finished_at: NullableTimestamp,
    deadline_at: Timestamp.describe("the run times out at this instant (86400 s after creation)"),
    callbacks: z.array(CallbackSchema).describe("callback delivery history"),
  })
  .describe("A task run");

export const RunList = z.object({
  runs: z.array(RunRecordSchema).describe("newest first"),
  next_cursor: z.string().nullable().describe("pass as cursor for the next page"),
  has_more: z.boolean().describe("whether another page exists"),
});
