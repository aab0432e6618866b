// Shapes of the /v1/runs routes (SPEC.md "Run", "Runs"; DECISIONS.md "Runs"). Path and query values
// SPEC gives a 400 code (run id, limit, status filter) carry it on their zod issue, so they answer 400
// before any 422 of the body.

import { z } from "zod";
import { NullableTimestamp, Timestamp } from "../operations/common-schemas.ts";
import { limitQuery, listOf, statusQuery } from "../operations/list.ts";
import { ActionPolicySchema } from "../policy/action-policy.ts";
import { LlmChoice, ModelField } from "../predict/model-choice.ts";
import { CuaVersionSchema } from "../predict/schemas.ts";
import { isValidRunId, MAX_ITERATIONS_LIMIT, MAX_STEPS_LIMIT, RUN_STATUSES } from "./run-record.ts";

const coded = (errorCode: string, message: string) => ({ message, params: { errorCode } });

export const RunId = z
  .string()
  .refine(isValidRunId, coded("INVALID_RUN_ID", "must be 1 to 128 characters of [A-Za-z0-9_-]"))
  .describe("run id: run_<24 hex> (live) or run_test_<24 hex> (test)");

export const RunIdInput = z.object({ id: RunId });

export const RunMetadata = z
  .record(z.string().min(1).max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .describe("your own string key/value pairs (at most 50 keys; keys up to 64, values up to 512 characters)");

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
  // DECISIONS.md "Compatibility amendments (2026-11-25)": runs
  instructions: z
    .string()
    .max(16_000)
    .optional()
    .describe("added to the engine's base prompt; shares the 32,000-character budget with system_prompt"),
  system_prompt: z
    .string()
    .max(32_000)
    .optional()
    .describe("replaces the engine's base prompt; system_prompt plus instructions over 32,000 is 400 INPUT_TOO_LARGE"),
  model: ModelField.optional(),
  llm: LlmChoice.optional(),
  deadline_seconds: z
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .describe("1 to 86,400 (default 86,400): the run is timed_out this many seconds after creation"),
  awaiting_human_timeout_seconds: z
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .describe("a pause for a human longer than this fails the run (error AWAITING_HUMAN_TIMEOUT)"),
  metadata: RunMetadata.optional(),
});

export const ResumeRunBody = z.strictObject({
  note: z.string().max(10_000).optional().describe("recorded in the run's status frame"),
});

export const ListRunsQuery = z.object({
  status: statusQuery(RUN_STATUSES, `filter: ${RUN_STATUSES.join(", ")}`),
  limit: limitQuery(),
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

const RunResultSchema = z
  .object({
    passed: z.boolean().describe("true when the run succeeded"),
    status: z.enum(RUN_STATUSES).describe("the run's terminal status"),
    summary: z.string().describe("what happened, in words (the agent's last reasoning, or the error message)"),
    verdict: z.string().optional().describe("pass or fail"),
    reasoning: z.string().optional().describe("the agent's last reasoning (succeeded runs)"),
    steps: z.number().int().optional().describe("completed steps"),
  })
  .catchall(z.unknown())
  .describe("the outcome of a terminal run; null while the run is active");

export const RunRecordSchema = z
  .object({
    object: z.literal("agent.run").describe("always agent.run"),
    id: z.string().describe("run id"),
    status: z.enum(RUN_STATUSES).describe("queued, running, awaiting_human, succeeded, failed, cancelled or timed_out"),
    machine_id: z.string().describe("the machine the run drives"),
    task: z.string().describe("the task"),
    instructions: z.string().nullable().describe("added to the base prompt"),
    system_prompt: z.string().nullable().describe("replaces the base prompt"),
    metadata: z.record(z.string(), z.string()).describe("your key/value pairs ({} when none)"),
    cua_version: z.string().describe("engine strategy"),
    max_steps: z.number().int().describe("step limit"),
    max_iterations: z.number().int().describe("iteration limit"),
    on_awaiting_human: z.enum(["pause", "fail", "cancel"]).describe("what happens when the agent needs a human"),
    awaiting_human_timeout_seconds: z
      .number()
      .int()
      .nullable()
      .describe("a longer pause fails the run; null = until the deadline"),
    budget_cents: z.number().int().describe("0 = no budget guard"),
    webhook_url: z.string().nullable().describe("callback target"),
    webhook_secret: z
      .string()
      .nullable()
      .describe("whsec_<64 hex>: only in the create response and its exact replay; null elsewhere"),
    step_count: z.number().int().describe("completed (billed) steps"),
    steps_completed: z.number().int().describe("= step_count"),
    iteration_count: z.number().int().describe("agent iterations so far"),
    awaiting_human_reason: z
      .string()
      .nullable()
      .describe("why the run waits for a human (e.g. stalled, human_requested)"),
    awaiting_human_since: NullableTimestamp.describe("when the current pause began; null when not paused"),
    result: RunResultSchema.nullable(),
    error: RunErrorSchema.nullable(),
    usage: z
      .object({
        credits_charged: z.number().int().describe("credits billed so far"),
        cost_cents: z.number().int().describe("the same in cents"),
      })
      .describe("billing so far"),
    credits_charged: z.number().int().describe("= usage.credits_charged"),
    cost_cents: z.number().int().describe("= usage.cost_cents"),
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

export const RunList = listOf(RunRecordSchema, "runs, newest first");
