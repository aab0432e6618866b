// The schedule use cases (SPEC.md "Schedule", "States and transitions / Schedule", "Schedules and triggers",
// "Limits"; DECISIONS.md "Tiers and numeric limits", "Schedules and triggers", Compatibility amendments).
// Check order (DECISIONS "Cross-cutting rules"): 400 path/query -> 422 body -> 404 (schedule, machine) ->
// 429 slots -> 402 wallet gate -> 409 state. Every query is scoped by account and mode.

import { CoreError, validationError } from "@cua/base/errors";
import type { Prisma, Schedule } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { loadMachine } from "../machines-service/record.ts";
import { type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import { type LlmChoiceInput, withModelChoice } from "../predict/model-choice.ts";
import { type LlmRequest, readLlmIntent } from "../predict/resolve-engine.ts";
import { SCHEDULE_PRICING } from "../pricing/pricing.ts";
import { getBalance } from "../wallet/wallet.ts";
import type { SchedulesPort } from "./ports.ts";
import {
  checkScheduleId,
  decodeCursor,
  encodeCursor,
  type HistoryRecord,
  isHistoryIdForm,
  newScheduleId,
  notFound,
  type ScheduleRecord,
  TX_OPTIONS,
  toHistoryRecord,
  toScheduleRecord,
} from "./schedule-record.ts";
import {
  checkRunAt,
  checkTimezone,
  dayOfWeekNumber,
  effectiveCron,
  type Frequency,
  nextCronFire,
} from "./schedule-time.ts";

/** DECISIONS.md "Tiers and numeric limits": schedule slots per tier (live); SPEC "Limits": 10 test schedules. */
export const TIER_SCHEDULE_SLOTS = { free: 3, starter: 5, professional: 10, enterprise: 50 } as const;
export const TEST_SCHEDULE_SLOTS = 10;
/** SPEC "Limits": wallet gate for managed schedule create, run-now and webhook fire */
export const SCHEDULE_WALLET_GATE = SCHEDULE_PRICING.wallet_gate_credits;

export type SchedulesDeps = CoreDeps & { schedules?: SchedulesPort };

export interface TimingFields {
  frequency?: Frequency;
  cron?: string;
  time?: string;
  timezone?: string;
  day_of_week?: number | string;
  day_of_month?: number;
  run_at?: string;
}

export interface CreateScheduleInput extends TimingFields {
  name: string;
  machine_id: string;
  task_prompt: string;
  max_consecutive_failures?: number;
  metadata?: Record<string, string>;
  model?: string;
  llm?: LlmChoiceInput;
}

interface Timing {
  frequency: string | null;
  cron: string | null;
  time: string | null;
  timezone: string;
  dayOfWeek: number | null;
  dayOfMonth: number | null;
  runAt: Date | null;
  nextRunAt: Date | null;
}

/** The stored timing of a schedule from request fields (422 on any inconsistency), and its next fire. */
function resolveTiming(t: TimingFields, now: Date): Timing {
  const timezone = t.timezone !== undefined ? checkTimezone(t.timezone) : "UTC";
  if (t.run_at !== undefined) {
    if (t.frequency !== undefined) throw validationError("body.run_at", "give either frequency or run_at, not both.");
    for (const k of ["cron", "time", "day_of_week", "day_of_month"] as const)
      if (t[k] !== undefined) throw validationError(`body.${k}`, "does not apply to a one-shot run_at schedule.");
    const runAt = checkRunAt(t.run_at, now);
    return {
      frequency: null,
      cron: null,
      time: null,
      timezone,
      dayOfWeek: null,
      dayOfMonth: null,
      runAt,
      nextRunAt: runAt,
    };
  }
  const cron = effectiveCron(t);
  return {
    frequency: t.frequency ?? "custom",
    cron,
    time: t.time ?? null,
    timezone,
    dayOfWeek: t.day_of_week !== undefined ? dayOfWeekNumber(t.day_of_week) : null,
    dayOfMonth: t.day_of_month ?? null,
    runAt: null,
    nextRunAt: nextCronFire(cron, timezone, now),
  };
}

/** BYOK intent of a create: provider header, body `llm`/`model` (422 on a test key: SPEC "Authentication" 4). */
function llmPreference(p: Principal, llm: LlmRequest, body: { model?: string; llm?: LlmChoiceInput }) {
  const intent = readLlmIntent(withModelChoice(llm, body));
  const byok = (intent.provider !== null && intent.provider !== "managed") || Boolean(intent.apiKey);
  if (byok && p.mode === "test")
    throw new CoreError(
      "LLM_PROVIDER_UNSUPPORTED",
      "Test-mode schedules are deterministic sandbox runs; BYOK needs a live key.",
    );
  // the provider header is validation only: every fire resolves the current stored key (SPEC)
  const provider = byok && intent.provider && intent.provider !== "managed" ? intent.provider : "managed";
  return { provider, model: intent.model ?? null };
}

/** 402 INSUFFICIENT_CREDITS unless the wallet holds the 20-credit gate (live managed only). */
export async function walletGate(deps: CoreDeps, p: { accountId: string; mode: string }, provider: string) {
  if (p.mode === "test" || provider !== "managed") return;
  const balance = await getBalance(deps, p.accountId);
  if (balance < SCHEDULE_WALLET_GATE)
    throw new CoreError(
      "INSUFFICIENT_CREDITS",
      `Managed schedules need a wallet balance of ${SCHEDULE_WALLET_GATE} credits; the wallet holds ${balance}.`,
      { required: SCHEDULE_WALLET_GATE, balance, suggestion: "Top up the wallet, then retry." },
    );
}

export async function createSchedule(
  deps: SchedulesDeps,
  ctx: { principal: Principal; llm: LlmRequest },
  input: CreateScheduleInput,
): Promise<ScheduleRecord> {
  const p = ctx.principal;
  const now = deps.clock.now();
  if (input.frequency === undefined && input.run_at === undefined && input.cron === undefined)
    throw validationError("body.frequency", "either frequency or run_at is required.");
  const timing = resolveTiming(input, now);
  const llm = llmPreference(p, ctx.llm, input);
  const machine = await loadMachine(deps, p, input.machine_id); // 400 INVALID_MACHINE_ID / 404
  const id = newScheduleId(p.mode);
  const row = await deps.db.$transaction(async (tx) => {
    // one creator at a time per account and mode: the slot count cannot be overrun concurrently
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`schedules:${p.accountId}:${p.mode}`}))`;
    const used = await tx.schedule.count({ where: { accountId: p.accountId, mode: p.mode, deletedAt: null } });
    if (p.mode === "test" && used >= TEST_SCHEDULE_SLOTS)
      throw new CoreError("TEST_SCHEDULE_LIMIT", `A test key may hold at most ${TEST_SCHEDULE_SLOTS} mock schedules.`);
    const slots = TIER_SCHEDULE_SLOTS[p.tier];
    if (p.mode === "live" && used >= slots)
      throw new CoreError("SCHEDULE_LIMIT_REACHED", `The ${p.tier} tier holds ${slots} schedules; delete one first.`, {
        limit: slots,
      });
    await walletGate(deps, p, llm.provider);
    return tx.schedule.create({
      data: {
        id,
        accountId: p.accountId,
        mode: p.mode,
        apiKeyId: p.keyId,
        name: input.name,
        machineId: machine.id,
        taskPrompt: input.task_prompt,
        ...timing,
        maxConsecutiveFailures: input.max_consecutive_failures ?? 5,
        llmProvider: llm.provider,
        llmModel: llm.model,
        metadata: input.metadata ?? {},
        createdAt: now,
        updatedAt: now,
      },
    });
  }, TX_OPTIONS);
  await arm(deps, row);
  return toScheduleRecord(row);
}

/** Asks the durable executor to sleep until the schedule's next fire (a timer of an older generation is void). */
export async function arm(deps: SchedulesDeps, s: Pick<Schedule, "id" | "generation">): Promise<void> {
  try {
    await deps.schedules?.jobs.armed(s.id, s.generation);
  } catch (e) {
    // the schedule sweeper re-arms schedules whose timer event was lost
    deps.logger.warn("schedule timer not armed", { schedule_id: s.id, err: String(e) });
  }
}

export async function loadSchedule(
  deps: Pick<CoreDeps, "db">,
  p: { accountId: string; mode: string },
  id: string,
): Promise<Schedule> {
  checkScheduleId(id);
  const s = await deps.db.schedule.findFirst({
    where: { id, accountId: p.accountId, mode: p.mode as "live" | "test", deletedAt: null },
  });
  if (!s) throw notFound();
  return s;
}

export async function getSchedule(deps: CoreDeps, p: Principal, id: string): Promise<ScheduleRecord> {
  return toScheduleRecord(await loadSchedule(deps, p, id));
}

export async function listSchedules(
  deps: CoreDeps,
  p: Principal,
  q: { status?: string; limit?: string | number; cursor?: string; machine_id?: string },
): Promise<ListBody<ScheduleRecord> & { schedules: ScheduleRecord[] }> {
  const limit = parseListLimit(q.limit);
  const cur = q.cursor !== undefined ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.schedule.findMany({
    where: {
      accountId: p.accountId,
      mode: p.mode,
      deletedAt: null,
      ...(q.status ? { status: q.status } : {}),
      ...(q.machine_id ? { machineId: q.machine_id } : {}),
      ...(cur
        ? { OR: [{ createdAt: { lt: new Date(cur.c) } }, { createdAt: new Date(cur.c), id: { lt: cur.i } }] }
        : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const data = page.map(toScheduleRecord);
  return listBody(
    data,
    { has_more: hasMore, next_cursor: hasMore ? encodeCursor(page.at(-1)!.createdAt, page.at(-1)!.id) : null },
    { schedules: data },
  );
}

export interface UpdateScheduleInput extends TimingFields {
  id: string;
  name?: string;
  task_prompt?: string;
  machine_id?: string;
  max_consecutive_failures?: number;
  metadata?: Record<string, string>;
  llm?: unknown;
  model?: unknown;
  llm_provider?: unknown;
  llm_model?: unknown;
}

const TIMING_KEYS = ["frequency", "cron", "time", "timezone", "day_of_week", "day_of_month", "run_at"] as const;

/** PATCH: 400 EMPTY_UPDATE without fields; the LLM preference is immutable (422); timing changes recompute
 * next_run_at and re-arm the timer. */
export async function updateSchedule(
  deps: SchedulesDeps,
  ctx: { principal: Principal; llm: LlmRequest },
  input: UpdateScheduleInput,
): Promise<ScheduleRecord> {
  const p = ctx.principal;
  const { id, ...fields } = input;
  checkScheduleId(id);
  const given = Object.entries(fields).filter(([, v]) => v !== undefined);
  if (given.length === 0) throw new CoreError("EMPTY_UPDATE", "The update carries no fields.");
  for (const k of ["llm", "model", "llm_provider", "llm_model"] as const)
    if (fields[k] !== undefined)
      throw validationError(`body.${k}`, "the LLM preference cannot change; delete the schedule and create it again.");
  const s = await loadSchedule(deps, p, id);
  if (ctx.llm.headerProvider && ctx.llm.headerProvider !== s.llmProvider)
    throw validationError(
      "headers.x-llm-provider",
      "the LLM preference cannot change; delete the schedule and create it again.",
    );
  const now = deps.clock.now();
  const data: Prisma.ScheduleUpdateInput = {};
  if (fields.name !== undefined) data.name = fields.name;
  if (fields.task_prompt !== undefined) data.taskPrompt = fields.task_prompt;
  if (fields.max_consecutive_failures !== undefined) data.maxConsecutiveFailures = fields.max_consecutive_failures;
  if (fields.metadata !== undefined) data.metadata = fields.metadata;
  if (fields.machine_id !== undefined) data.machineId = (await loadMachine(deps, p, fields.machine_id)).id;
  const timingChanged = TIMING_KEYS.some((k) => fields[k] !== undefined);
  if (timingChanged) {
    // merge: a new frequency or run_at replaces the whole timing; otherwise the overrides apply to the current one
    const base: TimingFields =
      fields.run_at !== undefined || fields.frequency !== undefined
        ? { timezone: s.timezone }
        : s.runAt
          ? { run_at: s.runAt.toISOString(), timezone: s.timezone }
          : {
              frequency: (s.frequency ?? "custom") as Frequency,
              ...(s.frequency === "custom" && s.cron ? { cron: s.cron } : {}),
              ...(s.time !== null ? { time: s.time } : {}),
              ...(s.dayOfWeek !== null ? { day_of_week: s.dayOfWeek } : {}),
              ...(s.dayOfMonth !== null ? { day_of_month: s.dayOfMonth } : {}),
              timezone: s.timezone,
            };
    const merged: TimingFields = { ...base };
    for (const k of TIMING_KEYS) if (fields[k] !== undefined) (merged as Record<string, unknown>)[k] = fields[k];
    const t = resolveTiming(merged, now);
    Object.assign(data, t);
    if (s.status === "paused") data.nextRunAt = null;
  }
  const row = await deps.db.schedule.update({
    where: { id: s.id },
    data: { ...data, generation: { increment: 1 }, updatedAt: now },
  });
  if (row.status === "active") await arm(deps, row);
  return toScheduleRecord(row);
}

export async function deleteSchedule(
  deps: SchedulesDeps,
  p: Principal,
  id: string,
): Promise<{ object: "schedule"; id: string; deleted: true }> {
  const s = await loadSchedule(deps, p, id);
  const now = deps.clock.now();
  await deps.db.$transaction([
    deps.db.schedule.update({
      where: { id: s.id },
      data: { deletedAt: now, nextRunAt: null, generation: { increment: 1 }, updatedAt: now },
    }),
    deps.db.scheduleTrigger.updateMany({
      where: { OR: [{ scheduleId: s.id }, { sourceScheduleId: s.id }], deletedAt: null },
      data: { deletedAt: now },
    }),
  ]);
  return { object: "schedule", id: s.id, deleted: true };
}

/** pause: no future fires (idempotent on a paused schedule). */
export async function pauseSchedule(
  deps: SchedulesDeps,
  p: Principal,
  id: string,
  reason = "user",
): Promise<ScheduleRecord> {
  const s = await loadSchedule(deps, p, id);
  if (s.status === "paused") return toScheduleRecord(s);
  const row = await deps.db.schedule.update({
    where: { id: s.id },
    data: {
      status: "paused",
      pausedReason: reason,
      nextRunAt: null,
      generation: { increment: 1 },
      updatedAt: deps.clock.now(),
    },
  });
  return toScheduleRecord(row);
}

/** resume: the next fire from now (idempotent on an active schedule); a one-shot whose run_at passed: 409. */
export async function resumeSchedule(deps: SchedulesDeps, p: Principal, id: string): Promise<ScheduleRecord> {
  const s = await loadSchedule(deps, p, id);
  if (s.status === "active") return toScheduleRecord(s);
  const now = deps.clock.now();
  let next: Date | null;
  if (s.runAt) {
    if (s.runAt.getTime() <= now.getTime())
      throw new CoreError(
        "INVALID_STATE",
        "This one-shot schedule's run_at has passed; PATCH a new run_at first, or use run now.",
        { current_state: "paused", allowed_from: ["paused with a future run_at"] },
      );
    next = s.runAt;
  } else next = s.cron ? nextCronFire(s.cron, s.timezone, now) : null;
  const row = await deps.db.schedule.update({
    where: { id: s.id },
    data: {
      status: "active",
      pausedReason: null,
      consecutiveFailures: 0,
      nextRunAt: next,
      generation: { increment: 1 },
      updatedAt: now,
    },
  });
  await arm(deps, row);
  return toScheduleRecord(row);
}

// --- run history ------------------------------------------------------------------------------------

export async function listScheduleRuns(
  deps: CoreDeps,
  p: Principal,
  q: { id: string; status?: string; trigger?: string; limit?: string | number; cursor?: string },
): Promise<ListBody<HistoryRecord> & { runs: HistoryRecord[] }> {
  const s = await loadSchedule(deps, p, q.id);
  const limit = parseListLimit(q.limit);
  const cur = q.cursor !== undefined ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.scheduleRun.findMany({
    where: {
      scheduleId: s.id,
      ...(q.status ? { status: q.status } : {}),
      ...(q.trigger ? { trigger: q.trigger } : {}),
      ...(cur
        ? { OR: [{ executedAt: { lt: new Date(cur.c) } }, { executedAt: new Date(cur.c), id: { lt: cur.i } }] }
        : {}),
    },
    orderBy: [{ executedAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const data = page.map(toHistoryRecord);
  return listBody(
    data,
    { has_more: hasMore, next_cursor: hasMore ? encodeCursor(page.at(-1)!.executedAt, page.at(-1)!.id) : null },
    { runs: data },
  );
}

/** One history entry, by its id (srun_...) or by the task run id it started. */
export async function getScheduleRun(deps: CoreDeps, p: Principal, id: string, runId: string): Promise<HistoryRecord> {
  if (!isHistoryIdForm(runId)) throw new CoreError("INVALID_RUN_ID");
  const s = await loadSchedule(deps, p, id);
  const r = await deps.db.scheduleRun.findFirst({
    where: { scheduleId: s.id, OR: [{ id: runId }, { runId }] },
  });
  if (!r) throw new CoreError("RUN_NOT_FOUND", "The schedule run does not exist.");
  return toHistoryRecord(r);
}
