// The run state machine (SPEC.md "States and transitions / Run"). Every transition is a conditional
// UPDATE under the run's row lock, in one transaction with the events it emits (numbered by the run's
// event_seq) and the callbacks it queues; terminal states are immutable (a transition out of one matches
// no row). After the commit: callbacks are handed to the job port, open step reservations are settled,
// and event streams in this process are woken.
import type { Tx } from "@cua/db/client";
import type { Run } from "@cua/db/generated";
import { childAwaitingHumanInTx, childLeftHumanWaitInTx, workflowOf } from "../workflows/child-runs.ts";
import type { WorkflowsPort } from "../workflows/ports.ts";
import { queueCallback } from "./callbacks.ts";
import type { RunsDeps } from "./ports.ts";
import { ACTIVE_STATUSES, type RunError, type RunStatus, runResultOf, toRunRecord } from "./run-record.ts";
import { runStepPrice, settleRunReservations } from "./step-billing.ts";

export interface EventFrame {
  /** SPEC's names plus `resumed` and `error` (DECISIONS.md "Compatibility amendments": run events) */
  event: "status" | "step" | "awaiting_human" | "billing" | "terminal" | "resumed" | "error";
  data: Record<string, unknown>;
}

/** What to do once the transaction committed. */
export interface Effects {
  runId: string;
  deliveries: string[];
  /** callbacks of the workflow run this run is a task step of (workflows/child-runs.ts) */
  workflowDeliveries: string[];
  settle: boolean;
  /**
   * Set with `settle` when the run is known: its account (no read to find it), and whether its steps are
   * priced at all (a run whose steps cost 0, test keys and BYOK, never holds anything: nothing to settle)
   */
  settleRun?: { accountId: string; priced: boolean };
  notify: boolean;
}

export const newEffects = (runId: string): Effects => ({
  runId,
  deliveries: [],
  workflowDeliveries: [],
  settle: false,
  notify: false,
});

export async function lockRun(tx: Tx, runId: string): Promise<Run | null> {
  await tx.$queryRaw`SELECT 1 FROM runs WHERE id = ${runId} FOR UPDATE`;
  return tx.run.findUnique({ where: { id: runId } });
}

/** Appends frames with the next seqs of the run (the caller's transaction holds or takes the row lock). */
export async function appendEvents(tx: Tx, runId: string, frames: EventFrame[], fx?: Effects): Promise<number[]> {
  if (frames.length === 0) return [];
  const rows = await tx.$queryRaw<{ event_seq: number }[]>`
    UPDATE runs SET event_seq = event_seq + ${frames.length} WHERE id = ${runId} RETURNING event_seq`;
  const last = Number(rows[0]!.event_seq);
  const first = last - frames.length + 1;
  await tx.runEvent.createMany({
    data: frames.map((f, i) => ({ runId, seq: first + i, event: f.event, data: f.data as object })),
  });
  if (fx) fx.notify = true;
  return frames.map((_, i) => first + i);
}

export type TerminalStatus = "succeeded" | "failed" | "cancelled" | "timed_out";

/**
 * Moves an active run to a terminal state, once: emits `status` and the durable `terminal` frame,
 * queues the run.<status> callback, scrubs the provider-key snapshot. Null when the run was already
 * terminal (nothing changes).
 */
export async function finishInTx(
  tx: Tx,
  run: Run,
  to: TerminalStatus,
  outcome: { result?: unknown; error?: RunError | null },
  fx: Effects,
  now: Date,
): Promise<Run | null> {
  const result = outcome.result ?? null;
  const error = outcome.error ?? null;
  const upd = await tx.run.updateMany({
    where: { id: run.id, status: { in: [...ACTIVE_STATUSES] } },
    data: {
      status: to,
      finishedAt: now,
      result: result === null ? undefined : (result as object),
      error: error === null ? undefined : (error as object),
      awaitingHumanReason: null,
      awaitingHumanSince: null,
      llmKeySealed: null, // SPEC: a terminal transition scrubs the stored provider-key snapshot
    },
  });
  if (upd.count === 0) return null;
  const after = await tx.run.findUniqueOrThrow({ where: { id: run.id } });
  await appendEvents(
    tx,
    run.id,
    [
      { event: "status", data: { run_id: run.id, status: to } },
      { event: "terminal", data: { run_id: run.id, status: to, result: runResultOf(after), error } },
    ],
    fx,
  );
  const d = await queueCallback(tx, after, `run.${to}`, `run.${to}`, now);
  if (d) fx.deliveries.push(d);
  fx.settle = true;
  fx.settleRun = { accountId: run.accountId, priced: runStepPrice(run) > 0 };
  // a task step's run that ended while it waited for a human: its workflow run stops waiting on it
  if (workflowOf(run)) await childLeftHumanWaitInTx(tx, run, null);
  return after;
}

/** running -> awaiting_human (on_awaiting_human = pause). Null when the run was not running. */
export async function pauseInTx(tx: Tx, run: Run, reason: string, fx: Effects, now: Date): Promise<Run | null> {
  const upd = await tx.run.updateMany({
    where: { id: run.id, status: "running" },
    data: {
      status: "awaiting_human",
      awaitingHumanReason: reason,
      awaitingHumanSince: now,
      iterationCount: { increment: 1 },
    },
  });
  if (upd.count === 0) return null;
  const after = await tx.run.findUniqueOrThrow({ where: { id: run.id } });
  await appendEvents(
    tx,
    run.id,
    [
      { event: "status", data: { run_id: run.id, status: "awaiting_human" } },
      { event: "awaiting_human", data: { run_id: run.id, reason } },
    ],
    fx,
  );
  // best-effort callback, one per pause
  const d = await queueCallback(tx, after, "run.awaiting_human", `run.awaiting_human#${after.resumeCount + 1}`, now);
  if (d) fx.deliveries.push(d);
  // a task step's run: its workflow run waits for the human too
  const wd = await childAwaitingHumanInTx(tx, after, reason, now);
  if (wd) fx.workflowDeliveries.push(wd);
  return after;
}

export async function applyEffects(deps: RunsDeps, fx: Effects): Promise<void> {
  if (fx.settle && fx.settleRun?.priced !== false) {
    try {
      await settleRunReservations(
        deps,
        fx.runId,
        undefined,
        fx.settleRun ? { accountId: fx.settleRun.accountId } : undefined,
      );
    } catch (e) {
      deps.logger.error("run reservations not settled", { run_id: fx.runId, err: String(e) });
    }
  }
  for (const id of fx.deliveries) {
    try {
      await deps.runJobs.callback(id);
    } catch (e) {
      // the sweeper re-sends it (event ids make that idempotent)
      deps.logger.warn("run callback not queued", { delivery_id: id, err: String(e) });
    }
  }
  const workflows = (deps as RunsDeps & { workflows?: WorkflowsPort }).workflows;
  for (const id of fx.workflowDeliveries) {
    try {
      await workflows?.jobs.callback(id);
    } catch (e) {
      // the workflow sweeper re-sends deliveries not yet attempted
      deps.logger.warn("workflow callback not queued", { delivery_id: id, err: String(e) });
    }
  }
  if (fx.notify) deps.runEvents?.notify(fx.runId);
}

/** One transaction on a locked run, then its effects. */
export async function withRun<T>(
  deps: RunsDeps,
  runId: string,
  fn: (tx: Tx, run: Run | null, fx: Effects) => Promise<T>,
): Promise<T> {
  const fx = newEffects(runId);
  const out = await deps.db.$transaction(async (tx) => fn(tx, await lockRun(tx, runId), fx));
  await applyEffects(deps, fx);
  return out;
}

/** Finishes a run unless it is terminal already; returns its status afterwards. */
export async function finishRun(
  deps: RunsDeps,
  runId: string,
  to: TerminalStatus,
  outcome: { result?: unknown; error?: RunError | null },
): Promise<RunStatus | null> {
  return withRun(deps, runId, async (tx, run, fx) => {
    if (!run) return null;
    const after = await finishInTx(tx, run, to, outcome, fx, deps.clock.now());
    return (after?.status ?? run.status) as RunStatus;
  });
}

export { toRunRecord };
