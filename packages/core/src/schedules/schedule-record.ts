// Schedule, schedule run and trigger records and ids (SPEC.md "Schedule", "Trigger", "Schedules and
// triggers"; DECISIONS.md "Schedules and triggers" and its Compatibility amendment).

import { CoreError } from "@cua/base/errors";
import { hex, newUuid } from "@cua/base/ids";
import type { Schedule, ScheduleRun, ScheduleTrigger } from "@cua/db/generated";
import type { KeyMode } from "../keys/scopes.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TEST_ID_RE = /^sch_test_[0-9a-f]{8,64}$/;
export const TRIGGER_ID_RE = /^trg_[0-9a-f]{8,64}$/;
export const WEBHOOK_ID_RE = /^whk_[0-9a-f]{8,64}$/;
const HISTORY_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

/** A schedule id is a UUID (live) or sch_test_<hex> (test) (SPEC.md "Errors": INVALID_SCHEDULE_ID). */
export const isScheduleIdForm = (id: string): boolean => UUID_RE.test(id) || TEST_ID_RE.test(id);
export const isTriggerIdForm = (id: string): boolean => TRIGGER_ID_RE.test(id);
export const isHistoryIdForm = (id: string): boolean => HISTORY_ID_RE.test(id);

export const newScheduleId = (mode: KeyMode): string => (mode === "test" ? `sch_test_${hex(12)}` : newUuid());
export const newTriggerId = (): string => `trg_${hex(12)}`;
export const newWebhookId = (): string => `whk_${hex(16)}`;
export const newHistoryId = (): string => `srun_${hex(12)}`;

/** Schedule run (history) statuses, DECISIONS.md Compatibility amendments. */
export const HISTORY_STATUSES = [
  "queued",
  "running",
  "completed",
  "failed",
  "skipped",
  "cancelled",
  "insufficient_credits",
] as const;
export type HistoryStatus = (typeof HISTORY_STATUSES)[number];
export const HISTORY_TRIGGERS = ["cron", "manual", "triggered", "webhook", "run_at"] as const;
export type HistoryTrigger = (typeof HISTORY_TRIGGERS)[number];

export const SCHEDULE_STATUSES = ["active", "paused"] as const;

/** Interactive transactions here may wait on an advisory lock (slots, chains, a webhook's deliveries): under
 * load that wait outlasts Prisma's 5 s default, which would fail the request instead of serialising it. */
export const TX_OPTIONS = { maxWait: 10_000, timeout: 20_000 } as const;

export function notFound(): CoreError {
  return new CoreError("SCHEDULE_NOT_FOUND", "The schedule does not exist.");
}

export function checkScheduleId(id: string): string {
  if (!isScheduleIdForm(id)) throw new CoreError("INVALID_SCHEDULE_ID");
  return id;
}

export interface ScheduleRecord {
  object: "schedule";
  id: string;
  name: string;
  machine_id: string;
  task_prompt: string;
  frequency: string | null;
  time: string | null;
  timezone: string;
  day_of_week: number | null;
  day_of_month: number | null;
  cron: string | null;
  run_at: string | null;
  next_run_at: string | null;
  status: "active" | "paused";
  enabled: boolean;
  paused_reason: string | null;
  max_consecutive_failures: number;
  consecutive_failures: number;
  run_count: number;
  last_run_at: string | null;
  llm_provider: string;
  is_test: boolean;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function toScheduleRecord(s: Schedule): ScheduleRecord {
  return {
    object: "schedule",
    id: s.id,
    name: s.name,
    machine_id: s.machineId,
    task_prompt: s.taskPrompt,
    frequency: s.frequency,
    time: s.time,
    timezone: s.timezone,
    day_of_week: s.dayOfWeek,
    day_of_month: s.dayOfMonth,
    cron: s.cron,
    run_at: iso(s.runAt),
    next_run_at: iso(s.nextRunAt),
    status: s.status === "paused" ? "paused" : "active",
    enabled: s.status !== "paused",
    paused_reason: s.pausedReason,
    max_consecutive_failures: s.maxConsecutiveFailures,
    consecutive_failures: s.consecutiveFailures,
    run_count: s.runCount,
    last_run_at: iso(s.lastRunAt),
    llm_provider: s.llmProvider,
    is_test: s.mode === "test",
    metadata: (s.metadata ?? {}) as Record<string, string>,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

export interface HistoryRecord {
  object: "schedule.run";
  id: string;
  schedule_id: string;
  run_id: string | null;
  status: HistoryStatus;
  trigger: HistoryTrigger;
  duration_seconds: number | null;
  /** SPEC's name for duration_seconds */
  duration: number | null;
  credits_charged: number;
  /** SPEC's name for credits_charged */
  credits: number;
  error: { code: string; message: string } | null;
  scheduled_for: string | null;
  executed_at: string;
}

/** Run history omits LLM attribution and credentials (SPEC.md "Schedules and triggers"). */
export function toHistoryRecord(r: ScheduleRun): HistoryRecord {
  return {
    object: "schedule.run",
    id: r.id,
    schedule_id: r.scheduleId,
    run_id: r.runId,
    status: r.status as HistoryStatus,
    trigger: r.trigger as HistoryTrigger,
    duration_seconds: r.durationSeconds,
    duration: r.durationSeconds,
    credits_charged: r.creditsCharged,
    credits: r.creditsCharged,
    error: (r.error as { code: string; message: string } | null) ?? null,
    scheduled_for: iso(r.scheduledFor),
    executed_at: r.executedAt.toISOString(),
  };
}

export interface TriggerRecord {
  object: "trigger";
  id: string;
  schedule_id: string;
  kind: "webhook" | "chain";
  enabled: boolean;
  created_at: string;
  webhook_url: string | null;
  /** only in the create answer (and its exact replay) */
  webhook_secret?: string;
  rate_limit_per_minute: number | null;
  source_schedule_id: string | null;
  event: string | null;
  pass_output: boolean | null;
}

export function toTriggerRecord(t: ScheduleTrigger, baseUrl: string, secret?: string): TriggerRecord {
  const webhook = t.kind === "webhook";
  return {
    object: "trigger",
    id: t.id,
    schedule_id: t.scheduleId,
    kind: webhook ? "webhook" : "chain",
    enabled: t.enabled,
    created_at: t.createdAt.toISOString(),
    webhook_url: webhook && t.webhookId ? `${baseUrl}/v1/triggers/webhook/${t.webhookId}` : null,
    ...(secret !== undefined ? { webhook_secret: secret } : {}),
    rate_limit_per_minute: webhook ? t.rateLimitPerMinute : null,
    source_schedule_id: t.sourceScheduleId,
    event: t.event,
    pass_output: webhook ? null : t.passOutput,
  };
}

export interface Cursor {
  c: string;
  i: string;
}

export function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify({ c: createdAt.toISOString(), i: id } satisfies Cursor)).toString("base64url");
}

export function decodeCursor(raw: string): Cursor {
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as Partial<Cursor>;
    if (typeof v.c === "string" && typeof v.i === "string" && !Number.isNaN(Date.parse(v.c))) return v as Cursor;
  } catch {}
  throw new CoreError("INVALID_CURSOR");
}
