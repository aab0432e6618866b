// Firing a schedule (SPEC.md "States and transitions / Schedule", "Schedules and triggers" credits;
// DECISIONS.md "Schedules and triggers"). A fire creates a task run on the schedule's machine with its task
// prompt (the runs' own createRun) and records a history entry; when the run ends, its entry is settled:
// status, duration, the schedule meter (10 credits per started minute, 20-credit minimum, 6-hour cap; live
// managed only: test keys and BYOK bill 0 platform credits), the failure count (max_consecutive_failures
// pauses the schedule) and chain triggers.
//
// Timer fires are claimed by a conditional update of the schedule row (its generation and next_run_at), so
// two executors, or a timer that fires late after a restart, fire a due slot once; missed slots collapse
// into that one fire (the next fire is computed from now).

import { isCoreError } from "@cua/base/errors";
import type { Schedule, ScheduleRun } from "@cua/db/generated";
import type { Principal } from "../keys/authenticate-key.ts";
import { SCHEDULE_PRICING } from "../pricing/pricing.ts";
import { createRun } from "../runs/create-run.ts";
import type { RunsDeps } from "../runs/ports.ts";
import { isTerminal, TERMINAL_STATUSES } from "../runs/run-record.ts";
import { addChargeTx } from "../usage/usage.ts";
import { getBalance } from "../wallet/wallet.ts";
import type { SchedulesPort } from "./ports.ts";
import { type HistoryTrigger, newHistoryId, TX_OPTIONS } from "./schedule-record.ts";
import { nextCronFire } from "./schedule-time.ts";
import { arm, SCHEDULE_WALLET_GATE } from "./schedules.ts";

export type FireDeps = RunsDeps & { schedules?: SchedulesPort };

/** SPEC "Schedules and triggers": execution meter (GET /v1/models pricing.schedules reads the same values). */
export const SCHEDULE_CREDITS_PER_MINUTE = SCHEDULE_PRICING.credits_per_minute;
export const SCHEDULE_START_MINIMUM = SCHEDULE_PRICING.start_minimum_credits;
export const SCHEDULE_CAP_HOURS = SCHEDULE_PRICING.cap_hours;
/** SPEC "Limits": history retained per schedule; chain depth */
export const HISTORY_RETAINED = 100;
export const MAX_CHAIN_DEPTH = 5;
export const SCHEDULE_METERING_ENDPOINT = "schedules (metering)";
const TASK_MAX = 16_000;

/** Credits for a scheduled execution of `seconds` (live, managed, non-Unlimited). */
export function meterCredits(seconds: number): number {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  return Math.min(
    Math.max(SCHEDULE_START_MINIMUM, minutes * SCHEDULE_CREDITS_PER_MINUTE),
    SCHEDULE_CAP_HOURS * 60 * SCHEDULE_CREDITS_PER_MINUTE,
  );
}

/** What a durable timer needs: the instant to sleep until, or null when this generation has nothing to fire. */
export async function timerTarget(deps: FireDeps, scheduleId: string, generation: number): Promise<string | null> {
  const s = await deps.db.schedule.findUnique({ where: { id: scheduleId } });
  if (!s || s.deletedAt || s.status !== "active" || s.generation !== generation || !s.nextRunAt) return null;
  return s.nextRunAt.toISOString();
}

/**
 * The timer woke: fire the schedule if this generation's slot is due. Returns the history entry id, or null
 * when nothing was due (a stale timer, a paused or deleted schedule, a clock that has not reached it).
 */
export async function fireDue(deps: FireDeps, scheduleId: string, generation: number): Promise<string | null> {
  const now = deps.clock.now();
  const claimed = await deps.db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM schedules WHERE id = ${scheduleId} AND generation = ${generation} AND status = 'active'
        AND deleted_at IS NULL AND next_run_at IS NOT NULL AND next_run_at <= ${now} FOR UPDATE`;
    if (!rows[0]) return null;
    const s = await tx.schedule.findUniqueOrThrow({ where: { id: scheduleId } });
    const oneShot = s.runAt !== null;
    const next = oneShot || !s.cron ? null : nextCronFire(s.cron, s.timezone, now);
    const updated = await tx.schedule.update({
      where: { id: s.id },
      data: {
        generation: { increment: 1 },
        nextRunAt: next,
        ...(oneShot ? { status: "paused", pausedReason: "one_shot_complete" } : {}),
      },
    });
    const entry = await tx.scheduleRun.create({
      data: {
        id: newHistoryId(),
        scheduleId: s.id,
        status: "queued",
        trigger: oneShot ? "run_at" : "cron",
        scheduledFor: s.nextRunAt,
        executedAt: now,
      },
    });
    return { schedule: updated, entry };
  }, TX_OPTIONS);
  if (!claimed) return null;
  if (claimed.schedule.status === "active") await arm(deps, claimed.schedule);
  await startEntry(deps, claimed.schedule, claimed.entry, { gate: true });
  return claimed.entry.id;
}

/** The principal a fire acts as: the schedule's account and mode (the creating key's id for attribution). */
async function schedulePrincipal(deps: FireDeps, s: Schedule): Promise<Principal> {
  const acct = await deps.db.account.findUnique({ where: { id: s.accountId }, select: { tier: true } });
  return {
    keyId: s.apiKeyId,
    accountId: s.accountId,
    mode: s.mode,
    scopes: ["runs:write"],
    tier: acct?.tier ?? "free",
    keyKind: s.mode,
  };
}

/**
 * A manual, webhook or chain fire: records its history entry and starts the run. The caller has applied the
 * wallet gate where the fire answers a request (run-now and webhook answer 402 themselves).
 */
export async function fireNow(
  deps: FireDeps,
  s: Schedule,
  trigger: HistoryTrigger,
  opts: { chainDepth?: number; extraTask?: string; requestId?: string; gate?: boolean } = {},
): Promise<ScheduleRun> {
  const now = deps.clock.now();
  const entry = await deps.db.$transaction(async (tx) => {
    const e = await tx.scheduleRun.create({
      data: {
        id: newHistoryId(),
        scheduleId: s.id,
        status: "queued",
        trigger,
        chainDepth: opts.chainDepth ?? 0,
        scheduledFor: now,
        executedAt: now,
      },
    });
    return e;
  }, TX_OPTIONS);
  return startEntry(deps, s, entry, { gate: opts.gate ?? false, extraTask: opts.extraTask, requestId: opts.requestId });
}

/** Starts the task run of a history entry; a refusal is recorded on the entry (and may pause the schedule). */
async function startEntry(
  deps: FireDeps,
  s: Schedule,
  entry: ScheduleRun,
  opts: { gate: boolean; extraTask?: string; requestId?: string },
): Promise<ScheduleRun> {
  const now = deps.clock.now();
  await deps.db.schedule.update({ where: { id: s.id }, data: { runCount: { increment: 1 }, lastRunAt: now } });
  await trimHistory(deps, s.id);
  // the 20-credit gate of a timer fire: a managed live schedule without it is paused (insufficient_credits)
  if (opts.gate && s.mode === "live" && s.llmProvider === "managed") {
    const balance = await getBalance(deps, s.accountId);
    if (balance < SCHEDULE_WALLET_GATE) {
      await deps.db.schedule.updateMany({
        where: { id: s.id, deletedAt: null },
        data: { status: "paused", pausedReason: "insufficient_credits", nextRunAt: null, generation: { increment: 1 } },
      });
      return deps.db.scheduleRun.update({
        where: { id: entry.id },
        data: {
          status: "insufficient_credits",
          settledAt: now,
          error: {
            code: "INSUFFICIENT_CREDITS",
            message: `The wallet holds ${balance} credits; scheduled runs need ${SCHEDULE_WALLET_GATE}.`,
          },
        },
      });
    }
  }
  const task = opts.extraTask ? `${s.taskPrompt}\n\n${opts.extraTask}`.slice(0, TASK_MAX) : s.taskPrompt;
  try {
    const run = await createRun(
      deps,
      {
        principal: await schedulePrincipal(deps, s),
        requestId: opts.requestId ?? `sched_${entry.id}`,
        llm: s.llmProvider !== "managed" ? { headerProvider: s.llmProvider } : {},
      },
      { machine_id: s.machineId, task, metadata: { schedule_id: s.id, schedule_run_id: entry.id } },
    );
    return deps.db.scheduleRun.update({ where: { id: entry.id }, data: { runId: run.id, status: "running" } });
  } catch (e) {
    const error = isCoreError(e)
      ? { code: e.code, message: e.message }
      : { code: "INTERNAL_ERROR", message: (e as Error).message.slice(0, 500) };
    deps.logger.warn("schedule fire: run not started", { schedule_id: s.id, ...error });
    const failed = await deps.db.scheduleRun.update({
      where: { id: entry.id },
      data: { status: "failed", error, settledAt: now, durationSeconds: 0 },
    });
    await countOutcome(deps, s.id, "failed");
    return failed;
  }
}

/** Keeps the newest 100 history entries of a schedule (SPEC "Limits"). */
async function trimHistory(deps: FireDeps, scheduleId: string): Promise<void> {
  await deps.db.$executeRaw`
    DELETE FROM schedule_runs WHERE schedule_id = ${scheduleId} AND id IN (
      SELECT id FROM schedule_runs WHERE schedule_id = ${scheduleId}
      ORDER BY executed_at DESC, id DESC OFFSET ${HISTORY_RETAINED})`;
}

/** consecutive_failures: reset by a success; max_consecutive_failures failures in a row pause the schedule. */
async function countOutcome(deps: FireDeps, scheduleId: string, outcome: "completed" | "failed"): Promise<void> {
  if (outcome === "completed") {
    await deps.db.schedule.update({ where: { id: scheduleId }, data: { consecutiveFailures: 0 } });
    return;
  }
  const s = await deps.db.schedule.update({
    where: { id: scheduleId },
    data: { consecutiveFailures: { increment: 1 } },
  });
  if (s.consecutiveFailures >= s.maxConsecutiveFailures && s.status === "active" && !s.deletedAt) {
    await deps.db.schedule.update({
      where: { id: scheduleId },
      data: {
        status: "paused",
        pausedReason: "max_consecutive_failures",
        nextRunAt: null,
        generation: { increment: 1 },
      },
    });
  }
}

const HISTORY_OF_RUN: Record<string, "completed" | "failed" | "cancelled"> = {
  succeeded: "completed",
  failed: "failed",
  timed_out: "failed",
  cancelled: "cancelled",
};

/**
 * A task run ended: settle the history entry that started it (once): status, duration, the schedule meter,
 * the failure count, then fire the chain triggers listening on its schedule. Runs no schedule started: no-op.
 */
export async function settleRun(deps: FireDeps, runId: string): Promise<{ settled: boolean; chained: string[] }> {
  const entry = await deps.db.scheduleRun.findUnique({ where: { runId } });
  const run = await deps.db.run.findUnique({ where: { id: runId } });
  if (!entry || entry.settledAt || !run || !isTerminal(run.status)) return { settled: false, chained: [] };
  const s = await deps.db.schedule.findUnique({ where: { id: entry.scheduleId } });
  if (!s) return { settled: false, chained: [] };
  const now = deps.clock.now();
  const started = run.startedAt ?? run.createdAt;
  const ended = run.finishedAt ?? now;
  const seconds = Math.max(0, Math.round((ended.getTime() - started.getTime()) / 1000));
  const status = HISTORY_OF_RUN[run.status] ?? "failed";
  const error = (run.error as { code?: string; message?: string } | null) ?? null;
  // SPEC "Schedules and triggers": Unlimited accounts bypass the credit meter
  const unlimited =
    (await deps.db.account.findUnique({ where: { id: s.accountId }, select: { unlimited: true } }))?.unlimited === true;
  const billable = s.mode === "live" && s.llmProvider === "managed" && status !== "cancelled" && !unlimited;
  // The execution costs the meter's amount. The run's own steps were billed as they ran (the runs' step
  // billing knows nothing of schedules); they count toward it, and only the rest is charged here.
  const stepCredits = run.creditsCharged;
  const due = billable ? Math.max(0, meterCredits(seconds) - stepCredits) : 0;
  const settled = await deps.db.$transaction(async (tx) => {
    const claimed = await tx.scheduleRun.updateMany({
      where: { id: entry.id, settledAt: null },
      data: {
        status,
        settledAt: now,
        durationSeconds: seconds,
        creditsCharged: stepCredits,
        error: error ? { code: error.code ?? "RUN_FAILED", message: error.message ?? "" } : undefined,
      },
    });
    if (claimed.count !== 1) return false;
    if (due > 0) {
      const acct = await tx.$queryRaw<{ balance_credits: number }[]>`
        SELECT balance_credits FROM accounts WHERE id = ${s.accountId}::uuid FOR UPDATE`;
      const charged = Math.max(0, Math.min(acct[0]?.balance_credits ?? 0, due));
      if (charged > 0) {
        const upd = await tx.$queryRaw<{ balance_credits: number }[]>`
          UPDATE accounts SET balance_credits = balance_credits - ${charged}
          WHERE id = ${s.accountId}::uuid RETURNING balance_credits`;
        await tx.walletEntry.create({
          data: {
            accountId: s.accountId,
            kind: "charge",
            delta: -charged,
            amount: charged,
            balanceAfter: upd[0]!.balance_credits,
            note: `schedule ${s.id}: run ${runId}, ${seconds} s`,
          },
        });
        await addChargeTx(tx, {
          accountId: s.accountId,
          endpoint: SCHEDULE_METERING_ENDPOINT,
          credits: charged,
          at: now,
        });
        await tx.scheduleRun.update({ where: { id: entry.id }, data: { creditsCharged: stepCredits + charged } });
      }
    }
    return true;
  }, TX_OPTIONS);
  if (!settled) return { settled: false, chained: [] };
  if (status !== "cancelled") await countOutcome(deps, s.id, status);
  const chained = await fireChains(deps, s, entry, run.status, run.result);
  return { settled: true, chained };
}

const EVENT_MATCHES: Record<string, (runStatus: string) => boolean> = {
  on_complete: (st) => st === "succeeded",
  on_failure: (st) => st === "failed" || st === "timed_out",
  on_any: () => true,
};

/** Chain triggers on `source`: each matching, enabled one fires its schedule one level deeper (at most 5). */
async function fireChains(
  deps: FireDeps,
  source: Schedule,
  entry: ScheduleRun,
  runStatus: string,
  result: unknown,
): Promise<string[]> {
  const depth = entry.chainDepth + 1;
  if (depth > MAX_CHAIN_DEPTH) return [];
  const triggers = await deps.db.scheduleTrigger.findMany({
    where: { sourceScheduleId: source.id, kind: "chain", enabled: true, deletedAt: null },
    include: { schedule: true },
    orderBy: { createdAt: "asc" },
  });
  const fired: string[] = [];
  for (const t of triggers) {
    const target = t.schedule;
    if (target.deletedAt || target.status !== "active") continue;
    if (!(EVENT_MATCHES[t.event ?? "on_complete"] ?? (() => false))(runStatus)) continue;
    const extra = t.passOutput
      ? `Output of the previous run (schedule ${source.id}, ${runStatus}):\n${JSON.stringify(result ?? null)}`
      : undefined;
    const e = await fireNow(deps, target, "triggered", { chainDepth: depth, extraTask: extra, gate: true });
    fired.push(e.id);
  }
  return fired;
}

/** Entries whose run ended without a run/finished event (a cancelled run): settled by the sweeper. */
export async function settleStragglers(deps: FireDeps): Promise<number> {
  const open = await deps.db.scheduleRun.findMany({
    where: { settledAt: null, runId: { not: null } },
    select: { runId: true },
    take: 1000,
    orderBy: { executedAt: "asc" },
  });
  const ended = await deps.db.run.findMany({
    where: { id: { in: open.map((e) => e.runId!) }, status: { in: [...TERMINAL_STATUSES] } },
    select: { id: true },
  });
  let n = 0;
  for (const r of ended) if ((await settleRun(deps, r.id)).settled) n++;
  return n;
}

/** A start's check: active schedules whose timer is due (lost events, a crash before arming) are re-armed. */
export async function rearmOverdue(deps: FireDeps): Promise<number> {
  const now = deps.clock.now();
  const overdue = await deps.db.schedule.findMany({
    where: { status: "active", deletedAt: null, nextRunAt: { lt: new Date(now.getTime() - 60_000) } },
    select: { id: true, generation: true },
    take: 500,
  });
  for (const s of overdue) {
    // a new generation: the old timer (if it still exists) becomes void, the new one fires at once
    const r = await deps.db.schedule.updateMany({
      where: { id: s.id, generation: s.generation },
      data: { generation: { increment: 1 } },
    });
    if (r.count === 1) await arm(deps, { id: s.id, generation: s.generation + 1 });
  }
  return overdue.length;
}
