// The schedules group of the MCP server (DECISIONS "Compatibility amendments", bullet "MCP server") before
// schedules exist (a separate issue builds them). These are ordinary operation definitions with their SPEC
// method, path, scope and input ("Schedules and triggers"; DECISIONS "Schedules and triggers" and the
// amendments' "Schedules"), flagged `planned` and given no handler: they are NOT in core's registry (the /v1
// generator would serve them), so the MCP server lists them and forwards a call to their REST path, which
// answers what it answers today (404 NOT_FOUND, unknown route). When the schedules issue adds its
// definitions with the same `mcp.tool` names to the registry, those replace these (./operations.ts);
// then delete this file.
import { defineOperation } from "@cua/core/operations/define";
import { z } from "zod";

const ScheduleId = z.string().describe("schedule id: a UUID, or sch_test_<hex> for a test key's schedule");

const FREQUENCIES = [
  "every_15_minutes",
  "every_30_minutes",
  "hourly",
  "every_6_hours",
  "every_12_hours",
  "daily",
  "weekly",
  "monthly",
  "custom",
] as const;

const NOT_YET = "Schedules are not served yet: the call answers what the REST route answers (404 NOT_FOUND).";

export const plannedListSchedules = defineOperation({
  id: "schedules.list",
  method: "GET",
  path: "/schedules",
  scope: "schedules:read",
  input: z.strictObject({
    limit: z.number().int().min(1).max(200).optional().describe("1 to 200 (default 20)"),
    cursor: z.string().optional().describe("next_cursor of the previous page"),
    status: z.enum(["active", "paused"]).optional().describe("only active or only paused schedules"),
  }),
  output: z.unknown(),
  docs: { summary: "List schedules", description: `Cursor-paginated. ${NOT_YET}`, tags: ["Schedules"] },
  mcp: { tool: "list_schedules", group: "schedules" },
});

export const plannedCreateSchedule = defineOperation({
  id: "schedules.create",
  method: "POST",
  path: "/schedules",
  scope: "schedules:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: z.strictObject({
    name: z.string().describe("schedule name"),
    task_prompt: z.string().describe("the task an agent run performs at each fire"),
    machine_id: z.string().optional().describe("machine the runs use"),
    frequency: z
      .enum(FREQUENCIES)
      .optional()
      .describe("a preset (daily = 0 9 * * *, weekly = 0 9 * * 1, ...) or custom with `cron`; never with run_at"),
    cron: z.string().optional().describe("5- or 6-field cron (frequency custom)"),
    time: z.string().optional().describe("HH:MM for daily, weekly, monthly"),
    timezone: z.string().optional().describe("IANA zone name (default UTC)"),
    day_of_week: z.number().int().min(0).max(6).optional().describe("0-6, 0 = Sunday (weekly)"),
    day_of_month: z.number().int().min(1).max(31).optional().describe("1-31 (monthly)"),
    run_at: z.string().optional().describe("one shot: ISO 8601 UTC time in the future; never with frequency"),
    max_consecutive_failures: z.number().int().min(1).max(50).optional().describe("auto-pause after (default 5)"),
    metadata: z.record(z.string(), z.string()).optional().describe("your own string keys"),
    llm: z
      .strictObject({ provider: z.string(), model: z.string().optional() })
      .optional()
      .describe("model provider and model"),
  }),
  output: z.unknown(),
  billing: "managed: a wallet balance of 20 credits (gate); runs bill per minute",
  docs: {
    summary: "Create a schedule",
    description: `Cron, preset or one-shot agent runs. ${NOT_YET}`,
    tags: ["Schedules"],
  },
  mcp: { tool: "create_schedule", group: "schedules" },
});

const idOnly = z.strictObject({ id: ScheduleId });

export const plannedPauseSchedule = defineOperation({
  id: "schedules.pause",
  method: "POST",
  path: "/schedules/{id}/pause",
  scope: "schedules:write",
  input: idOnly,
  output: z.unknown(),
  docs: { summary: "Pause a schedule", description: `No future fires. ${NOT_YET}`, tags: ["Schedules"] },
  mcp: { tool: "pause_schedule", group: "schedules" },
});

export const plannedResumeSchedule = defineOperation({
  id: "schedules.resume",
  method: "POST",
  path: "/schedules/{id}/resume",
  scope: "schedules:write",
  input: idOnly,
  output: z.unknown(),
  docs: { summary: "Resume a schedule", description: `Fires again. ${NOT_YET}`, tags: ["Schedules"] },
  mcp: { tool: "resume_schedule", group: "schedules" },
});

export const plannedRunScheduleNow = defineOperation({
  id: "schedules.run",
  method: "POST",
  path: "/schedules/{id}/run",
  scope: "schedules:write",
  idempotency: "reserve-and-replay",
  input: idOnly,
  output: z.unknown(),
  billing: "as a fire",
  docs: { summary: "Run a schedule now", description: `One manual fire. ${NOT_YET}`, tags: ["Schedules"] },
  mcp: { tool: "run_schedule_now", group: "schedules" },
});

export const PLANNED_SCHEDULE_OPERATIONS = [
  plannedListSchedules,
  plannedCreateSchedule,
  plannedPauseSchedule,
  plannedResumeSchedule,
  plannedRunScheduleNow,
] as const;
