// The /v1/schedules operations (SPEC.md "Schedules and triggers" table; DECISIONS.md "Schedules and triggers",
// Compatibility amendments: lists, health endpoints, MCP schedule tools).
import { z } from "zod";
import { callContext } from "../operations/call-context.ts";
import { defineOperation } from "../operations/define.ts";
import { fireNow } from "./fire.ts";
import { toHistoryRecord } from "./schedule-record.ts";
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  getScheduleRun,
  listScheduleRuns,
  listSchedules,
  loadSchedule,
  pauseSchedule,
  resumeSchedule,
  updateSchedule,
  walletGate,
} from "./schedules.ts";
import {
  CreateScheduleBody,
  DeletedSchedule,
  GetScheduleRunInput,
  HealthAnswer,
  HistoryRecordSchema,
  ListScheduleRunsQuery,
  ListSchedulesQuery,
  ScheduleIdInput,
  ScheduleList,
  ScheduleRecordSchema,
  ScheduleRunList,
  UpdateScheduleBody,
} from "./schemas.ts";

const tags = ["Schedules"];
const gateNote =
  "Managed live schedules need a wallet balance of 20 credits (402 INSUFFICIENT_CREDITS); BYOK and test keys bypass the gate.";

export const schedulesHealthOp = defineOperation({
  id: "schedules.health",
  method: "GET",
  path: "/schedules/health",
  auth: "public",
  input: z.void(),
  output: HealthAnswer,
  docs: { tags, summary: "Schedules health", description: "Public: `{status, service, api_version, time}`." },
  handler: (ctx) => ({
    status: "ok" as const,
    service: "schedules",
    api_version: "v1",
    time: ctx.deps.clock.now().toISOString(),
  }),
});

export const triggersHealthOp = defineOperation({
  id: "triggers.health",
  method: "GET",
  path: "/triggers/health",
  auth: "public",
  input: z.void(),
  output: HealthAnswer,
  docs: {
    tags: ["Triggers"],
    summary: "Triggers health",
    description: "Public: `{status, service, api_version, time}`.",
  },
  handler: (ctx) => ({
    status: "ok" as const,
    service: "triggers",
    api_version: "v1",
    time: ctx.deps.clock.now().toISOString(),
  }),
});

export const createScheduleOp = defineOperation({
  id: "schedules.create",
  method: "POST",
  path: "/schedules",
  scope: "schedules:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: CreateScheduleBody,
  output: ScheduleRecordSchema,
  billing: "free to create (wallet gate 20 credits); each fire: 10 credits per minute, 20 minimum, 6-hour cap",
  errors: [
    "INVALID_MACHINE_ID",
    "MACHINE_NOT_FOUND",
    "LLM_PROVIDER_UNSUPPORTED",
    "SCHEDULE_LIMIT_REACHED",
    "TEST_SCHEDULE_LIMIT",
    "INSUFFICIENT_CREDITS",
  ],
  docs: {
    tags,
    summary: "Create a schedule",
    description: `A recurring (frequency preset, or custom 5/6-field cron, evaluated in the IANA timezone) or one-shot (run_at) schedule that fires a task run on the machine. Slots per tier: free 3, starter 5, professional 10, enterprise 50 (429 SCHEDULE_LIMIT_REACHED); test keys 10 (429 TEST_SCHEDULE_LIMIT). ${gateNote}`,
  },
  console: "shared",
  mcp: { tool: "create_schedule", group: "schedules" },
  handler: (ctx, input) => createSchedule(ctx.deps, callContext(ctx), input),
});

export const listSchedulesOp = defineOperation({
  id: "schedules.list",
  method: "GET",
  path: "/schedules",
  scope: "schedules:read",
  input: ListSchedulesQuery,
  output: ScheduleList,
  errors: ["INVALID_LIMIT", "INVALID_STATUS_FILTER", "INVALID_CURSOR"],
  docs: {
    tags,
    summary: "List schedules",
    description: "Newest first; filter by status and machine_id; cursor-paginated.",
  },
  console: "shared",
  mcp: { tool: "list_schedules", group: "schedules" },
  handler: (ctx, input) => listSchedules(ctx.deps, ctx.caller, input),
});

export const getScheduleOp = defineOperation({
  id: "schedules.get",
  method: "GET",
  path: "/schedules/{id}",
  scope: "schedules:read",
  input: ScheduleIdInput,
  output: ScheduleRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND"],
  docs: { tags, summary: "Get a schedule", description: "The schedule with its next_run_at and state." },
  console: "shared",
  handler: (ctx, input) => getSchedule(ctx.deps, ctx.caller, input.id),
});

export const updateScheduleOp = defineOperation({
  id: "schedules.update",
  method: "PATCH",
  path: "/schedules/{id}",
  scope: "schedules:write",
  input: UpdateScheduleBody,
  output: ScheduleRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "EMPTY_UPDATE", "INVALID_MACHINE_ID", "MACHINE_NOT_FOUND"],
  docs: {
    tags,
    summary: "Update a schedule",
    description:
      "name, task_prompt, machine_id, frequency, time, timezone, day_of_week, day_of_month, cron, run_at, max_consecutive_failures, metadata; next_run_at is recomputed. No fields: 400 EMPTY_UPDATE. The LLM preference cannot change (422; delete and recreate).",
  },
  console: "shared",
  handler: (ctx, input) => updateSchedule(ctx.deps, callContext(ctx), input),
});

export const deleteScheduleOp = defineOperation({
  id: "schedules.delete",
  method: "DELETE",
  path: "/schedules/{id}",
  scope: "schedules:write",
  input: ScheduleIdInput,
  output: DeletedSchedule,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND"],
  docs: {
    tags,
    summary: "Delete a schedule",
    description: "Soft delete: no further fires, its triggers are removed, later reads are 404 SCHEDULE_NOT_FOUND.",
  },
  console: "shared",
  handler: (ctx, input) => deleteSchedule(ctx.deps, ctx.caller, input.id),
});

export const pauseScheduleOp = defineOperation({
  id: "schedules.pause",
  method: "POST",
  path: "/schedules/{id}/pause",
  scope: "schedules:write",
  input: ScheduleIdInput,
  output: ScheduleRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND"],
  docs: {
    tags,
    summary: "Pause a schedule",
    description: "No future fires (paused_reason user); pausing a paused schedule answers it unchanged.",
  },
  console: "shared",
  mcp: { tool: "pause_schedule", group: "schedules" },
  handler: (ctx, input) => pauseSchedule(ctx.deps, ctx.caller, input.id),
});

export const resumeScheduleOp = defineOperation({
  id: "schedules.resume",
  method: "POST",
  path: "/schedules/{id}/resume",
  scope: "schedules:write",
  input: ScheduleIdInput,
  output: ScheduleRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "INVALID_STATE"],
  docs: {
    tags,
    summary: "Resume a schedule",
    description:
      "Active again: next_run_at is computed from now (missed slots are not replayed) and the failure count resets. A one-shot whose run_at passed: 409 INVALID_STATE.",
  },
  console: "shared",
  mcp: { tool: "resume_schedule", group: "schedules" },
  handler: (ctx, input) => resumeSchedule(ctx.deps, ctx.caller, input.id),
});

export const runScheduleNowOp = defineOperation({
  id: "schedules.run",
  method: "POST",
  path: "/schedules/{id}/run",
  scope: "schedules:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: ScheduleIdInput,
  output: HistoryRecordSchema,
  billing: "10 credits per minute of the run, 20 minimum, 6-hour cap (live managed); wallet gate 20",
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "INSUFFICIENT_CREDITS"],
  docs: {
    tags,
    summary: "Run a schedule now",
    description: `Fires the schedule once (trigger manual), paused or not; answers its history entry with the task run's id (or the reason no run started). ${gateNote}`,
  },
  console: "shared",
  mcp: { tool: "run_schedule_now", group: "schedules" },
  handler: async (ctx, input) => {
    const s = await loadSchedule(ctx.deps, ctx.caller, input.id);
    await walletGate(ctx.deps, s, s.llmProvider);
    return toHistoryRecord(await fireNow(ctx.deps, s, "manual", { requestId: ctx.requestId }));
  },
});

export const listScheduleRunsOp = defineOperation({
  id: "schedules.runs",
  method: "GET",
  path: "/schedules/{id}/runs",
  scope: "schedules:read",
  input: ListScheduleRunsQuery,
  output: ScheduleRunList,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "INVALID_LIMIT", "INVALID_STATUS_FILTER", "INVALID_CURSOR"],
  docs: {
    tags,
    summary: "A schedule's run history",
    description:
      "Newest first, at most 100 kept; filter by status and trigger; cursor-paginated. Omits LLM attribution and credentials.",
  },
  console: "shared",
  handler: (ctx, input) => listScheduleRuns(ctx.deps, ctx.caller, input),
});

export const getScheduleRunOp = defineOperation({
  id: "schedules.runsGet",
  method: "GET",
  path: "/schedules/{id}/runs/{run_id}",
  scope: "schedules:read",
  input: GetScheduleRunInput,
  output: HistoryRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "INVALID_RUN_ID", "RUN_NOT_FOUND"],
  docs: {
    tags,
    summary: "One schedule run",
    description: "By history id (srun_...) or by the task run id it started.",
  },
  console: "shared",
  handler: (ctx, input) => getScheduleRun(ctx.deps, ctx.caller, input.id, input.run_id),
});
