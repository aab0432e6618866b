// Every hold ends captured, refunded or released (issue 10 "the wallet holds under any load").
//
// settleConfirmed: settles a hold with retries and says what the ledger shows afterwards. A settlement is
// one conditional UPDATE (status = 'reserved'), so a retry can never settle twice: an attempt whose
// COMMIT went through but whose answer was lost is found by the next attempt as "already <status>".
//
// sweepStaleHolds: settles holds that outlived their request (a process killed with holds in flight, a
// capture that could not reach the database). The rule, from what the ledger proves:
//   - a billed call returns its result only after its capture committed (withCharge), so a hold still
//     `reserved` once it is older than the hold TTL never produced a delivered result: it is released;
//   - a run step's hold (request id `run:<id>:step:<n>`) is settled by the step's record: a committed
//     step with a charge captures it, any other step releases it, and only once the step is committed or
//     the run is finished (a live run settles its own holds);
//   - every settlement is the same conditional UPDATE, so sweepers in several processes, or a sweeper
//     racing a late capture, settle each hold exactly once.
import type { CoreDeps } from "../deps.ts";
import { isTerminal } from "../runs/run-record.ts";
import { settleRunReservations } from "../runs/step-billing.ts";
import { capture, refund, release } from "./wallet.ts";

export type HoldStatus = "captured" | "refunded" | "released";

export type SettleOutcome =
  /** this call settled the hold */
  | { kind: "settled"; status: HoldStatus; balance: number }
  /** the hold was settled already (by an earlier attempt whose answer was lost, or by the sweeper) */
  | { kind: "found"; status: string; balance: number | null }
  /** no attempt reached the database: the hold is left for the sweeper */
  | { kind: "unconfirmed"; error: unknown };

const SETTLE = { captured: capture, refunded: refund, released: release } as const;

/** Backoff between attempts; the whole sequence stays within a few seconds of the client's wait. */
export const SETTLE_BACKOFF_MS = [150, 600, 1500];

export async function settleConfirmed(
  deps: CoreDeps,
  reservationId: string,
  to: HoldStatus,
  backoffMs: number[] = SETTLE_BACKOFF_MS,
): Promise<SettleOutcome> {
  let error: unknown = null;
  for (let attempt = 0; attempt <= backoffMs.length; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, backoffMs[attempt - 1]));
    try {
      const s = await SETTLE[to](deps, reservationId);
      if (s) return { kind: "settled", status: to, balance: s.balance };
      const row = await deps.db.reservation.findUnique({
        where: { id: reservationId },
        select: { status: true, account: { select: { balanceCredits: true } } },
      });
      return { kind: "found", status: row?.status ?? "missing", balance: row?.account.balanceCredits ?? null };
    } catch (e) {
      error = e;
      deps.logger.warn("wallet settlement attempt failed", {
        reservation: reservationId,
        to,
        attempt: attempt + 1,
        err: e instanceof Error ? e.message : String(e),
      });
    }
  }
  return { kind: "unconfirmed", error };
}

/** Holds older than this are settled by the sweeper. It must exceed the longest billed call (engine deadline 120 s). */
export const DEFAULT_HOLD_TTL_SECONDS = 900;

export interface SweepReport {
  released: number;
  /** run-step holds handed to the step's settlement (captured or released by its record) */
  runSteps: number;
  /** run-step holds of runs still working (their executor settles them) */
  left: number;
}

/** One pass over stale holds (oldest first, at most `limit`). Safe to run in several processes at once. */
export async function sweepStaleHolds(
  deps: CoreDeps,
  opts: { holdTtlSeconds?: number; limit?: number } = {},
): Promise<SweepReport> {
  const ttl = opts.holdTtlSeconds ?? DEFAULT_HOLD_TTL_SECONDS;
  const before = new Date(deps.clock.now().getTime() - ttl * 1000);
  const stale = await deps.db.reservation.findMany({
    where: { status: "reserved", createdAt: { lt: before } },
    select: { id: true, requestId: true, amount: true, endpoint: true },
    orderBy: { createdAt: "asc" },
    take: opts.limit ?? 500,
  });
  const report: SweepReport = { released: 0, runSteps: 0, left: 0 };
  const runSteps = new Map<string, Set<number>>();
  for (const h of stale) {
    const m = /^run:(.+):step:(\d+)$/.exec(h.requestId ?? "");
    if (m) {
      const steps = runSteps.get(m[1]!) ?? new Set<number>();
      steps.add(Number(m[2]));
      runSteps.set(m[1]!, steps);
      continue;
    }
    if (await release(deps, h.id)) {
      report.released += 1;
      deps.logger.warn("stale hold released", {
        reservation: h.id,
        request_id: h.requestId,
        endpoint: h.endpoint,
        amount: h.amount,
      });
    }
  }
  for (const [runId, steps] of runSteps) {
    const run = await deps.db.run.findUnique({ where: { id: runId }, select: { status: true } });
    const committed = new Set(
      (
        await deps.db.runStep.findMany({
          where: { runId, step: { in: [...steps] }, phase: "committed" },
          select: { step: true },
        })
      ).map((s) => s.step),
    );
    for (const step of steps) {
      const ready = !run || isTerminal(run.status) || committed.has(step);
      if (!ready) {
        report.left += 1;
        continue;
      }
      if (run) await settleRunReservations(deps, runId, step);
      else {
        // the run is gone (its account deleted the row): nothing proves the step completed
        const holds = await deps.db.reservation.findMany({
          where: { requestId: `run:${runId}:step:${step}`, status: "reserved" },
          select: { id: true },
        });
        for (const h of holds) await release(deps, h.id);
      }
      report.runSteps += 1;
      deps.logger.warn("stale run-step hold settled", { run_id: runId, step });
    }
  }
  return report;
}

export interface HoldSweeper {
  /** one pass now (tests and the bench call it) */
  tick(): Promise<SweepReport | null>;
  stop(): Promise<void>;
}

/** Runs the sweeper once at start and then every `intervalMs` (the machine background's habit). */
export function startHoldSweeper(deps: CoreDeps, opts: { intervalMs: number; holdTtlSeconds: number }): HoldSweeper {
  let running: Promise<SweepReport | null> | null = null;
  let stopped = false;
  const tick = () => {
    if (running) return running;
    running = sweepStaleHolds(deps, { holdTtlSeconds: opts.holdTtlSeconds })
      .then((r) => {
        if (r.released + r.runSteps > 0) deps.logger.info("wallet sweep", { ...r });
        return r;
      })
      .catch((e) => {
        deps.logger.warn("wallet sweep failed", { err: e instanceof Error ? e.message : String(e) });
        return null;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void tick();
  }, opts.intervalMs);
  timer.unref();
  void tick();
  return {
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
