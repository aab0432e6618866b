// Shapes of the /v1/schedules and /v1/triggers routes (SPEC.md "Schedules and triggers"; DECISIONS.md
// "Schedules and triggers" and Compatibility amendments). Path and query values SPEC gives a 400 code carry
// it on their zod issue, so they answer 400 before any 422 of the body.
import { z } from "zod";
import { NullableTimestamp, Timestamp } from "../operations/common-schemas.ts";
import { limitQuery, listOf, statusQuery } from "../operations/list.ts";
import { LlmChoice, ModelField } from "../predict/model-choice.ts";
import {
  HISTORY_STATUSES,
  HISTORY_TRIGGERS,
  isHistoryIdForm,
  isScheduleIdForm,
  isTriggerIdForm,
  SCHEDULE_STATUSES,
} from "./schedule-record.ts";
import { FREQUENCIES } from "./schedule-time.ts";

const coded = (errorCode: string, message: string) => ({ message, params: { errorCode } });

export const ScheduleId = z
  .string()
  .refine(isScheduleIdForm, coded("INVALID_SCHEDULE_ID", "must be a UUID (live) or sch_test_<hex> (test)"))
  .describe("schedule id: a UUID (live) or sch_test_<hex> (test)");
export const TriggerId = z
  .string()
  .refine(isTriggerIdForm, coded("INVALID_TRIGGER_ID", "must be trg_<hex>"))
  .describe("trigger id: trg_<hex>");
export const HistoryRunId = z
  .string()
  .refine(isHistoryIdForm, coded("INVALID_RUN_ID", "must be 1 to 128 characters of [A-Za-z0-9_-]"))
  .describe("a history entry id (srun_<hex>) or the task run id it started");

export const ScheduleIdInput = z.object({ id: ScheduleId });

const Metadata = z
  .record(z.string().min(1).max(64), z.string().max(512))
  .refine((m) => Object.keys(m).length <= 50, { message: "at most 50 keys" })
  .describe("your own string key/value pairs (at most 50 keys)");

const timing = {
  frequency: z
    .enum(FREQUENCIES)
    .optional()
    .describe(
      "every_15_minutes, every_30_minutes, hourly, every_6_hours, every_12_hours, daily (0 9 * * *), weekly (0 9 * * 1), monthly (0 9 1 * *), custom (requires cron)",
    ),
  cron: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe("custom: 5 fields (minute hour day month weekday) or 6 (seconds first), in `timezone`"),
  time: z.string().max(5).optional().describe("HH:MM overriding daily, weekly and monthly presets"),
  timezone: z.string().min(1).max(64).optional().describe("IANA time zone name (default UTC)"),
  day_of_week: z
    .union([z.number().int(), z.string().max(9)])
    .optional()
    .describe("weekly: 0 (Sunday) to 6, or a day name"),
  day_of_month: z.number().int().optional().describe("monthly: 1 to 31 (31 fires only in months that have one)"),
  run_at: z
    .string()
    .max(64)
    .optional()
    .describe("one-shot: ISO 8601 UTC time in the future (60 s of slack); never together with frequency"),
};

export const CreateScheduleBody = z.strictObject({
  name: z.string().min(1).max(200).describe("a name for the schedule"),
  machine_id: z.string().min(1).max(128).describe("the machine its runs drive (UUID live, mch_test_<hex> test)"),
  task_prompt: z.string().min(1).max(16_000).describe("the task each fire gives the agent"),
  ...timing,
  max_consecutive_failures: z
    .number()
    .int()
    .min(1)
    .max(50)
    .optional()
    .describe("1 to 50 (default 5): failed runs in a row before the schedule pauses"),
  metadata: Metadata.optional(),
  model: ModelField.optional(),
  llm: LlmChoice.optional().describe("BYOK provider preference (live keys; fixed for the schedule's life)"),
});

export const UpdateScheduleBody = z.strictObject({
  id: ScheduleId,
  name: z.string().min(1).max(200).optional(),
  task_prompt: z.string().min(1).max(16_000).optional(),
  machine_id: z.string().min(1).max(128).optional(),
  ...timing,
  max_consecutive_failures: z.number().int().min(1).max(50).optional(),
  metadata: Metadata.optional(),
  // refused with 422: the LLM preference cannot change (SPEC "Schedules and triggers")
  model: z.unknown().optional().describe("refused: the LLM preference cannot change (delete and recreate)"),
  llm: z.unknown().optional().describe("refused: the LLM preference cannot change (delete and recreate)"),
  llm_provider: z.unknown().optional().describe("refused: the LLM preference cannot change"),
  llm_model: z.unknown().optional().describe("refused: the LLM preference cannot change"),
});

export const ScheduleRecordSchema = z
  .object({
    object: z.literal("schedule"),
    id: z.string(),
    name: z.string(),
    machine_id: z.string(),
    task_prompt: z.string(),
    frequency: z.string().nullable(),
    time: z.string().nullable(),
    timezone: z.string(),
    day_of_week: z.number().nullable(),
    day_of_month: z.number().nullable(),
    cron: z.string().nullable().describe("the effective cron expression (presets mapped); null for a one-shot"),
    run_at: NullableTimestamp,
    next_run_at: NullableTimestamp.describe("the next fire; null when paused or a completed one-shot"),
    status: z.enum(SCHEDULE_STATUSES),
    enabled: z.boolean().describe("status == active"),
    paused_reason: z
      .string()
      .nullable()
      .describe("user, one_shot_complete, insufficient_credits or max_consecutive_failures"),
    max_consecutive_failures: z.number(),
    consecutive_failures: z.number(),
    run_count: z.number(),
    last_run_at: NullableTimestamp,
    llm_provider: z.string().describe("managed, anthropic or openai (fixed at creation)"),
    is_test: z.boolean(),
    metadata: z.record(z.string(), z.string()),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .describe("A schedule");

export const ListSchedulesQuery = z.object({
  limit: limitQuery(),
  cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
  status: statusQuery(SCHEDULE_STATUSES, "active or paused"),
  machine_id: z.string().max(128).optional().describe("only this machine's schedules"),
});

export const ScheduleList = listOf(ScheduleRecordSchema, "schedules, newest first", {
  schedules: z.array(ScheduleRecordSchema).describe("the same array as data (SPEC's name)"),
});

export const HistoryRecordSchema = z
  .object({
    object: z.literal("schedule.run"),
    id: z.string(),
    schedule_id: z.string(),
    run_id: z.string().nullable().describe("the task run it started (GET /v1/runs/{id}); null when none started"),
    status: z.enum(HISTORY_STATUSES),
    trigger: z.enum(HISTORY_TRIGGERS),
    duration_seconds: z.number().nullable(),
    duration: z.number().nullable().describe("= duration_seconds"),
    credits_charged: z.number(),
    credits: z.number().describe("= credits_charged"),
    error: z.object({ code: z.string(), message: z.string() }).nullable(),
    scheduled_for: NullableTimestamp.describe("the instant the fire was due"),
    executed_at: Timestamp,
  })
  .describe("A schedule run (history entry)");

export const ListScheduleRunsQuery = z.object({
  id: ScheduleId,
  limit: limitQuery(),
  cursor: z.string().max(512).optional(),
  status: statusQuery(HISTORY_STATUSES, HISTORY_STATUSES.join(", ")),
  trigger: statusQuery(HISTORY_TRIGGERS, HISTORY_TRIGGERS.join(", ")),
});

export const ScheduleRunList = listOf(HistoryRecordSchema, "history entries, newest first", {
  runs: z.array(HistoryRecordSchema).describe("the same array as data"),
});

export const GetScheduleRunInput = z.object({ id: ScheduleId, run_id: HistoryRunId });

export const DeletedSchedule = z.object({ object: z.literal("schedule"), id: z.string(), deleted: z.literal(true) });

export const HealthAnswer = z.object({
  status: z.literal("ok"),
  service: z.string(),
  api_version: z.string(),
  time: Timestamp,
});

// --- triggers -------------------------------------------------------------------------------------------

export const CreateTriggerBody = z.strictObject({
  id: ScheduleId,
  kind: z.enum(["webhook", "chain"]).describe("webhook (signed POST) or chain (another schedule's runs)"),
  rate_limit_per_minute: z.number().int().min(1).max(600).optional().describe("webhook: 1 to 600 (default 60)"),
  source_schedule_id: z.string().min(1).max(128).optional().describe("chain: the schedule whose runs fire this one"),
  event: z
    .enum(["on_complete", "on_failure", "on_any"])
    .optional()
    .describe("chain: on_complete (default), on_failure or on_any"),
  pass_output: z.boolean().optional().describe("chain: append the source run's result to the task (default true)"),
  enabled: z.boolean().optional().describe("default true"),
});

export const TriggerRecordSchema = z
  .object({
    object: z.literal("trigger"),
    id: z.string(),
    schedule_id: z.string(),
    kind: z.enum(["webhook", "chain"]),
    enabled: z.boolean(),
    created_at: Timestamp,
    webhook_url: z.string().nullable(),
    webhook_secret: z.string().optional().describe("whsec_<64 hex>: only in the create answer"),
    rate_limit_per_minute: z.number().nullable(),
    source_schedule_id: z.string().nullable(),
    event: z.string().nullable(),
    pass_output: z.boolean().nullable(),
  })
  .describe("A trigger");

export const TriggerList = listOf(TriggerRecordSchema, "triggers, oldest first", {
  triggers: z.array(TriggerRecordSchema).describe("the same array as data"),
});

export const TriggerIdInput = z.object({ id: ScheduleId, trigger_id: TriggerId });
export const UpdateTriggerBody = z.strictObject({
  id: ScheduleId,
  trigger_id: TriggerId,
  enabled: z.boolean().describe("false disables (a webhook fire then answers 410 WEBHOOK_DISABLED)"),
});
export const DeletedTrigger = z.object({ object: z.literal("trigger"), id: z.string(), deleted: z.literal(true) });

export const WebhookFireInput = z.object({ webhook_id: z.string().max(128) });
export const WebhookFireAnswer = z.object({
  received: z.boolean(),
  schedule_id: z.string(),
  run_id: z.string().nullable(),
  deduplicated: z.boolean(),
  message: z.string(),
});
