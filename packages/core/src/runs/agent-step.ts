// One agent step, one call per Inngest step (inngest/src/functions/run-task.ts):
//   guards (deadline, max_steps, max_iterations, budget) -> reserve the step's price (WALLET_EXHAUSTED)
//   -> screenshot -> engine -> action policy -> stall guard / human -> execute on the machine
//   -> commit (step + billing frames, terminal transition when the engine said done or fail) -> capture.
// The step row's phase makes a retried call (after a crash or an error) resume where the last one
// stopped: a committed step is never executed or billed again; a prediction already recorded is not
// asked again; a step whose execution started but was not recorded is not executed again (at most
// once: the agent sees the real screen at its next step, which is safer than repeating input).

import type { Action } from "@cua/base/actions/action";
import { CoreError, ERROR_CODES, isCoreError } from "@cua/base/errors";
import type { Tx } from "@cua/db/client";
import type { Machine, Run, RunStep } from "@cua/db/generated";
import { SANDBOX_MODEL_ID } from "@cua/engines/models";
import type { DecodedImage } from "@cua/engines/types";
import { type RunnableMachine, runnableMachine } from "../machines-service/machine-access.ts";
import type { ActionPolicy } from "../policy/action-policy.ts";
import type { EngineChoice } from "../predict/resolve-engine.ts";
import { predictWith } from "../predict/run-engine.ts";
import { toMachineCommands } from "./actions-to-commands.ts";
import type { RunsDeps } from "./ports.ts";
import { isTerminal, type RunError, type RunStatus } from "./run-record.ts";
import { openRunSecret } from "./run-secrets.ts";
import { parseRunDirectives, sandboxInstruction } from "./sandbox-agent.ts";
import { digestActions, digestBytes, isStalled, STALLED_REASON } from "./stall-guard.ts";
import { reserveStep, runStepPrice, settleRunReservations } from "./step-billing.ts";
import { appendEvents, applyEffects, type Effects, finishInTx, newEffects, pauseInTx, withRun } from "./transitions.ts";

export type StepOutcome =
  | { kind: "continue"; step: number }
  | { kind: "awaiting_human"; reason: string; deadlineAt: string }
  | { kind: "terminal"; status: RunStatus };

/** prior steps the engine sees (the stateless trajectory limit) */
const TRAJECTORY_STEPS = 19;
/**
 * Actions one step may take. The built-in local engine (an instruction interpreter) takes one action per
 * step, so that every action is grounded on a fresh screenshot; model engines answer in batches.
 */
const maxActionsFor = (engineId: string): number => (engineId === "local" ? 1 : 10);
export const HUMAN_REQUESTED_REASON = "human_requested";

const round = (ms: number): number => Math.round(ms * 100) / 100;

const runError = (code: string, message: string, extra: Record<string, unknown> = {}): RunError => ({
  code,
  message,
  ...extra,
});

type OutcomeFields = Pick<Run, "status" | "awaitingHumanReason" | "deadlineAt" | "stepCount"> &
  Partial<Pick<Run, "awaitingHumanSince" | "awaitingHumanTimeoutSeconds">>;

/** When the current human wait ends: the run's deadline, or sooner with awaiting_human_timeout_seconds. */
export function humanWaitEndsAt(run: OutcomeFields): { at: Date; byTimeout: boolean } {
  if (run.awaitingHumanSince && run.awaitingHumanTimeoutSeconds) {
    const t = new Date(run.awaitingHumanSince.getTime() + run.awaitingHumanTimeoutSeconds * 1000);
    if (t < run.deadlineAt) return { at: t, byTimeout: true };
  }
  return { at: run.deadlineAt, byTimeout: false };
}

function outcomeOf(run: OutcomeFields): StepOutcome {
  if (isTerminal(run.status)) return { kind: "terminal", status: run.status as RunStatus };
  if (run.status === "awaiting_human") {
    // the executor's wait re-checks by this instant at the latest (checkHumanWait ends the wait)
    const deadlineAt = humanWaitEndsAt(run).at.toISOString();
    return { kind: "awaiting_human", reason: run.awaitingHumanReason ?? "", deadlineAt };
  }
  return { kind: "continue", step: run.stepCount };
}

async function finish(
  deps: RunsDeps,
  runId: string,
  to: "succeeded" | "failed" | "cancelled" | "timed_out",
  error: RunError | null,
  result?: unknown,
): Promise<StepOutcome> {
  return withRun(deps, runId, async (tx, run, fx) => {
    if (!run) return { kind: "terminal", status: "failed" } as StepOutcome;
    const after = await finishInTx(tx, run, to, { error, result }, fx, deps.clock.now());
    return outcomeOf(after ?? run);
  });
}

/** The agent needs a human: on_awaiting_human decides (pause, or fail / cancel without pausing). */
async function needHuman(deps: RunsDeps, runId: string, reason: string, message: string): Promise<StepOutcome> {
  return withRun(deps, runId, async (tx, run, fx) => {
    if (!run) return { kind: "terminal", status: "failed" } as StepOutcome;
    const now = deps.clock.now();
    if (run.onAwaitingHuman === "pause") {
      const after = await pauseInTx(tx, run, reason, fx, now);
      return outcomeOf(after ?? run);
    }
    const code = reason === STALLED_REASON ? "STALLED" : "HUMAN_REQUIRED";
    const to = run.onAwaitingHuman === "cancel" ? "cancelled" : "failed";
    const after = await finishInTx(tx, run, to, { error: runError(code, message, { reason }) }, fx, now);
    return outcomeOf(after ?? run);
  });
}

function engineFor(deps: RunsDeps, run: Run): EngineChoice {
  if (run.mode === "test")
    return { kind: "sandbox", engine: deps.engines.sandbox(), provider: "managed", model: SANDBOX_MODEL_ID };
  if (run.llmProvider === "managed")
    return { kind: "managed", engine: deps.engines.managed(), provider: "managed", model: deps.engines.managedModel() };
  if (!run.llmKeySealed) throw new CoreError("LLM_KEY_NOT_CONFIGURED", "The run's provider key snapshot is gone.");
  const apiKey = openRunSecret(deps.kek, run.id, "llm", run.llmKeySealed);
  const provider = run.llmProvider as "anthropic" | "openai";
  const engine = deps.engines.provider(provider, apiKey, run.llmModel ?? undefined);
  return { kind: "byok", engine, provider, model: run.llmModel ?? engine.id, apiKey };
}

/** Errors that end the run at once (anything else is thrown: the step is retried, then the run fails). */
function fatalError(e: unknown): RunError | null {
  if (!isCoreError(e)) return null;
  if (e.code === "MACHINE_NOT_FOUND" || e.code === "NOT_FOUND")
    return runError("MACHINE_NOT_FOUND", "The run's machine no longer exists.");
  if (e.code === "INVALID_STATE") {
    return runError("MACHINE_NOT_RUNNING", e.message, { current_state: e.extras.current_state ?? null });
  }
  if (ERROR_CODES[e.code].retryable) return null;
  return runError(e.code, e.message);
}

/**
 * A step error that does not end the run (the step is retried): recorded on the run and sent as an `error`
 * frame (DECISIONS.md "Compatibility amendments": run events).
 */
async function recordStepError(deps: RunsDeps, runId: string, step: number, e: unknown): Promise<void> {
  const err = isCoreError(e)
    ? runError(e.code, e.message)
    : runError("INTERNAL_ERROR", "The step failed unexpectedly.");
  await withRun(deps, runId, async (tx, run, fx) => {
    if (!run || isTerminal(run.status)) return;
    await tx.run.update({ where: { id: runId }, data: { lastStepError: err as object } });
    await appendEvents(tx, runId, [{ event: "error", data: { run_id: runId, step, error: err, retrying: true } }], fx);
  }).catch((x) => deps.logger.warn("step error not recorded", { run_id: runId, err: String(x) }));
}

/** Starts a fresh iteration for step n: counts it, creates or resets the step row. */
async function beginIteration(
  deps: RunsDeps,
  run: Run,
  n: number,
): Promise<{ row: RunStep } | { outcome: StepOutcome }> {
  // fast path, one statement: a conditional update counts the iteration (the run is running and has
  // iterations left) and only then creates the step row, or resets the one a pause or a discard left
  const begun = await deps.db.$queryRaw<{ exec_attempts: number; created_at: Date }[]>`
    WITH counted AS (
      UPDATE runs SET iteration_count = iteration_count + 1, updated_at = now()
      WHERE id = ${run.id} AND status = 'running' AND iteration_count < max_iterations
      RETURNING id
    )
    INSERT INTO run_steps (run_id, step, phase, exec_attempts, credits_charged, created_at)
    SELECT id, ${n}::int, 'started', 0, 0, now() FROM counted
    ON CONFLICT (run_id, step) DO UPDATE SET
      phase = 'started', screenshot_digest = NULL, actions_digest = NULL, actions = NULL, reasoning = NULL,
      engine_status = NULL, usage = NULL, results = NULL, credits_charged = 0, committed_at = NULL
    RETURNING exec_attempts, created_at`;
  const b = begun[0];
  if (b) return { row: startedRow(run.id, n, Number(b.exec_attempts), new Date(b.created_at)) };
  // why not: the run stopped running, or it is out of iterations
  return withRun(deps, run.id, async (tx, locked, fx) => {
    if (locked?.status !== "running") return { outcome: outcomeOf(locked ?? run) };
    if (locked.iterationCount >= locked.maxIterations) {
      const after = await finishInTx(
        tx,
        locked,
        "failed",
        {
          error: runError(
            "MAX_ITERATIONS_EXCEEDED",
            `The run used its ${locked.maxIterations} iterations without finishing.`,
          ),
        },
        fx,
        deps.clock.now(),
      );
      return { outcome: outcomeOf(after ?? locked) };
    }
    // iterations were left after all (a concurrent change): the next call counts it
    return { outcome: outcomeOf(locked) };
  });
}

function decoded(png: Buffer, width: number, height: number): DecodedImage {
  return { bytes: png, mime: "image/png", width, height };
}

const camelKeys = new Map<string, string>();
const camelKey = (k: string): string => {
  let c = camelKeys.get(k);
  if (c === undefined) {
    c = k.replace(/_([a-z])/g, (_, x: string) => x.toUpperCase());
    if (camelKeys.size < 1000) camelKeys.set(k, c);
  }
  return c;
};

/** A row of json_agg / to_jsonb (snake_case keys, timestamps as text) as the Prisma model's object. */
function fromJsonRow<T>(row: Record<string, unknown>, dates: readonly string[]): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[camelKey(k)] = v;
  for (const d of dates) if (typeof out[d] === "string") out[d] = new Date(out[d] as string);
  return out as T;
}

const STEP_DATES = ["createdAt", "committedAt"] as const;
const MACHINE_DATES = [
  "expiresAt",
  "deviceTokenRevokedAt",
  "lastHeartbeatAt",
  "billedThrough",
  "opLockedUntil",
  "createdAt",
  "updatedAt",
  "terminatedAt",
] as const;

/** The fresh step row a step begins with (what beginIteration's statement inserted or reset). */
function startedRow(runId: string, step: number, execAttempts: number, createdAt: Date): RunStep {
  return {
    runId,
    step,
    phase: "started",
    screenshotDigest: null,
    actionsDigest: null,
    actions: null,
    reasoning: null,
    engineStatus: null,
    usage: null,
    results: null,
    execAttempts,
    creditsCharged: 0,
    createdAt,
    committedAt: null,
  };
}

/**
 * What a step reads, in one statement (issue 16: it was three): the run; step n = step_count + 1 (if any)
 * and the committed steps before it, newest first (the trajectory; rows before n are committed: a paused
 * row is reused by its step, a discarded one ends the run; a few more in case); and the run's machine,
 * scoped to the run's account and mode like every machine read (null when there is none).
 *
 * With `begin`, the same statement also begins step n when nothing else has to be decided first
 * (issue 16: one statement fewer per step): the run is running, before its deadline (`begin.now`), under
 * max_steps and max_iterations, step n has no row or a paused or discarded one, and the run is not a
 * sandbox run whose task holds a #human directive (runAgentStep asks for the human itself). Then the
 * iteration is counted and the row created or reset, exactly as beginIteration does, and returned as
 * `begun`; the run is the row as read before that update, with the iteration counted. In every other case
 * nothing is written and runAgentStep decides as before.
 * Exported for tests: the same objects as the Prisma reads of the three.
 */
export async function loadStepState(
  deps: Pick<RunsDeps, "db">,
  runId: string,
  begin?: { now: Date },
): Promise<{ run: Run; latest: RunStep[]; machine: Machine | null; begun: RunStep | null } | null> {
  const rows = await deps.db.$queryRaw<Record<string, unknown>[]>`
    WITH counted AS (
      UPDATE runs SET iteration_count = iteration_count + 1, updated_at = now()
      WHERE ${begin !== undefined}::boolean AND id = ${runId} AND status = 'running'
        AND iteration_count < max_iterations AND step_count < max_steps
        AND deadline_at > ${begin?.now ?? new Date(0)}::timestamptz
        AND NOT (mode = 'test' AND position('#human' in lower(task)) > 0)
        AND NOT EXISTS (
          SELECT 1 FROM run_steps s WHERE s.run_id = runs.id AND s.step = runs.step_count + 1
            AND s.phase NOT IN ('paused', 'discarded'))
      RETURNING id, step_count
    ),
    begun AS (
      INSERT INTO run_steps (run_id, step, phase, exec_attempts, credits_charged, created_at)
      SELECT id, step_count + 1, 'started', 0, 0, now() FROM counted
      ON CONFLICT (run_id, step) DO UPDATE SET
        phase = 'started', screenshot_digest = NULL, actions_digest = NULL, actions = NULL, reasoning = NULL,
        engine_status = NULL, usage = NULL, results = NULL, credits_charged = 0, committed_at = NULL
      RETURNING step, exec_attempts, created_at
    )
    SELECT r.*,
      COALESCE((
        SELECT json_agg(s ORDER BY s.step DESC) FROM (
          SELECT * FROM run_steps WHERE run_id = r.id AND step <= r.step_count + 1
          ORDER BY step DESC LIMIT ${TRAJECTORY_STEPS + 3}::int
        ) s
      ), '[]'::json) AS step_state_latest,
      (SELECT to_jsonb(m) FROM machines m WHERE m.id = r.machine_id AND m.account_id = r.account_id AND m.mode = r.mode)
        AS step_state_machine,
      (SELECT to_jsonb(b) FROM begun b) AS step_state_begun
    FROM runs r WHERE r.id = ${runId}`;
  const row = rows[0];
  if (!row) return null;
  const { step_state_latest: latest, step_state_machine: machine, step_state_begun: b, ...fields } = row;
  const run = fromJsonRow<Run>(fields, []);
  const began = b as { step: number; exec_attempts: number; created_at: string } | null;
  if (began) run.iterationCount += 1;
  return {
    run,
    // the row step n had before it was begun is not the step's any more
    latest: (latest as Record<string, unknown>[])
      .map((s) => fromJsonRow<RunStep>(s, STEP_DATES))
      .filter((s) => !began || s.step !== began.step),
    machine: machine ? fromJsonRow<Machine>(machine as Record<string, unknown>, MACHINE_DATES) : null,
    begun: began ? startedRow(runId, began.step, Number(began.exec_attempts), new Date(began.created_at)) : null,
  };
}

/** The newest committed steps before `n` (at most the trajectory limit), oldest first. */
function recentOf(latest: RunStep[], n: number) {
  return latest
    .filter((r) => r.phase === "committed" && r.step < n)
    .slice(0, TRAJECTORY_STEPS)
    .reverse();
}

interface ExecResult {
  action_index: number;
  command: string;
  success: boolean;
  error: string | null;
  duration_ms: number;
}

async function execute(machine: RunnableMachine, actions: Action[]): Promise<ExecResult[]> {
  const out: ExecResult[] = [];
  for (const [i, a] of actions.entries()) {
    for (const c of toMachineCommands(a)) {
      const started = performance.now();
      try {
        const r = await machine.execute(c.command, c.parameters);
        out.push({
          action_index: i,
          command: c.command,
          success: r.success,
          error: r.error?.message ?? null,
          duration_ms: r.duration_ms,
        });
        if (!r.success) return out; // later actions assumed this one worked
      } catch (e) {
        if (!isCoreError(e) || ERROR_CODES[e.code].status !== 422) throw e;
        out.push({
          action_index: i,
          command: c.command,
          success: false,
          error: e.message,
          duration_ms: Math.round(performance.now() - started),
        });
        return out;
      }
    }
  }
  return out;
}

/**
 * Commits a step: `results` (null when already recorded) and the execution time are written with it.
 * A run that stopped meanwhile (cancel, deadline) matches nothing: the step is discarded, not billed.
 */
async function commitStep(
  deps: RunsDeps,
  run: Run,
  row: RunStep,
  price: number,
  results: unknown[] | null,
  executeMs?: number,
): Promise<StepOutcome> {
  const fx: Effects = newEffects(run.id);
  const u = (row.usage ?? {}) as { timings?: Record<string, number> };
  const usage =
    executeMs !== undefined ? { ...u, timings: { ...(u.timings ?? {}), execute_ms: round(executeMs) } } : undefined;
  const actions = (row.actions ?? []) as Action[];
  const stepFrame = {
    run_id: run.id,
    step: row.step,
    action: actions[0] ?? null,
    actions,
    reasoning: row.reasoning ?? "",
  };
  if (row.engineStatus !== "done" && row.engineStatus !== "fail") {
    // the common step, in one statement: the same conditional update of the run as below, then the step row
    // and its `step` and `billing` frames (the terminal steps, and a run that stopped, take the transaction)
    const counted = await deps.db.$queryRaw<{ event_seq: number }[]>`
      WITH c AS (
        UPDATE runs SET step_count = ${row.step}::int, credits_charged = credits_charged + ${price}::int,
          last_step_error = NULL, event_seq = event_seq + 2, updated_at = now()
        WHERE id = ${run.id} AND status = 'running' AND step_count = ${row.step - 1}::int
        RETURNING event_seq, credits_charged
      ),
      s AS (
        UPDATE run_steps SET phase = 'committed', credits_charged = ${price}::int, committed_at = ${deps.clock.now()}::timestamptz,
          results = COALESCE(${results === null ? null : JSON.stringify(results)}::jsonb, results),
          usage = COALESCE(${usage === undefined ? null : JSON.stringify(usage)}::jsonb, usage)
        FROM c WHERE run_id = ${run.id} AND step = ${row.step}::int
        RETURNING 1
      ),
      e AS (
        INSERT INTO run_events (run_id, seq, event, data, created_at)
        SELECT ${run.id}::text, c.event_seq - 1, 'step', ${JSON.stringify(stepFrame)}::jsonb, now() FROM c
        UNION ALL
        SELECT ${run.id}::text, c.event_seq, 'billing',
          jsonb_build_object('run_id', ${run.id}::text, 'step', ${row.step}::int, 'credits_charged', ${price}::int,
                             'total_credits_charged', c.credits_charged),
          now()
        FROM c
      )
      SELECT event_seq FROM c`;
    if (counted[0]) {
      fx.notify = true;
      if (price > 0)
        await settleRunReservations(deps, run.id, row.step, { accountId: run.accountId, committedCharge: price });
      await applyEffects(deps, fx);
      return outcomeOf({
        status: "running",
        awaitingHumanReason: null,
        deadlineAt: run.deadlineAt,
        stepCount: row.step,
      });
    }
  }
  const outcome = await deps.db.$transaction(async (tx: Tx) => {
    // one conditional update: the run is still running at the previous step (a cancel or the deadline
    // that committed first makes it match nothing), counts the step and its charge, reserves two seqs
    const counted = await tx.$queryRaw<{ event_seq: number; credits_charged: number }[]>`
      UPDATE runs SET step_count = ${row.step}, credits_charged = credits_charged + ${price},
        last_step_error = NULL, event_seq = event_seq + 2, updated_at = now()
      WHERE id = ${run.id} AND status = 'running' AND step_count = ${row.step - 1}
      RETURNING event_seq, credits_charged`;
    const c = counted[0];
    if (!c) {
      // cancelled (or ended) while the step ran: the step does not count and is not billed
      await tx.runStep.update({
        where: { runId_step: { runId: run.id, step: row.step } },
        data: { phase: "discarded", ...(results !== null ? { results: results as object } : {}) },
      });
      fx.settle = true;
      return outcomeOf(await tx.run.findUniqueOrThrow({ where: { id: run.id } }));
    }
    const now = deps.clock.now();
    await tx.runStep.update({
      where: { runId_step: { runId: run.id, step: row.step } },
      data: {
        phase: "committed",
        creditsCharged: price,
        committedAt: now,
        ...(results !== null ? { results: results as object } : {}),
        ...(usage !== undefined ? { usage: usage as object } : {}),
      },
    });
    const seq = Number(c.event_seq);
    await tx.runEvent.createMany({
      data: [
        {
          runId: run.id,
          seq: seq - 1,
          event: "step",
          data: stepFrame as object,
        },
        {
          runId: run.id,
          seq,
          event: "billing",
          data: {
            run_id: run.id,
            step: row.step,
            credits_charged: price,
            total_credits_charged: Number(c.credits_charged),
          },
        },
      ],
    });
    fx.notify = true;
    const live = { status: "running", awaitingHumanReason: null, deadlineAt: run.deadlineAt, stepCount: row.step };
    if (row.engineStatus !== "done" && row.engineStatus !== "fail") return outcomeOf(live);
    const updated = await tx.run.findUniqueOrThrow({ where: { id: run.id } });
    if (row.engineStatus === "done") {
      const after = await finishInTx(
        tx,
        updated,
        "succeeded",
        { result: { reasoning: row.reasoning ?? "", steps: row.step } },
        fx,
        now,
      );
      return outcomeOf(after ?? updated);
    }
    if (row.engineStatus === "fail") {
      const fail = actions.find((a) => a.action_type === "fail");
      const params = (fail?.params ?? {}) as { code?: string; message?: string };
      const error = runError(
        params.code ?? "TASK_FAILED",
        params.message ?? row.reasoning ?? "The agent reported that the task cannot be done.",
      );
      const after = await finishInTx(tx, updated, "failed", { error }, fx, now);
      return outcomeOf(after ?? updated);
    }
    return outcomeOf(updated);
  });
  if (price > 0) await settleRunReservations(deps, run.id, row.step, { accountId: run.accountId });
  await applyEffects(deps, fx);
  return outcome;
}

export async function runAgentStep(deps: RunsDeps, runId: string): Promise<StepOutcome> {
  const now = deps.clock.now();
  // the common step begins in the read itself (loadStepState `begin`); otherwise what follows decides
  const state = await loadStepState(deps, runId, { now });
  if (!state) return { kind: "terminal", status: "failed" };
  const { run, latest } = state;
  if (run.status !== "running") return outcomeOf(run);
  if (now >= run.deadlineAt) {
    return finish(deps, runId, "timed_out", runError("DEADLINE_EXCEEDED", "The run's deadline passed."));
  }
  const n = run.stepCount + 1;
  if (n > run.maxSteps) {
    return finish(
      deps,
      runId,
      "failed",
      runError("MAX_STEPS_EXCEEDED", `The run used its ${run.maxSteps} steps without finishing.`),
    );
  }
  const directives = run.mode === "test" ? parseRunDirectives(run.task) : null;
  let row: RunStep | null = latest[0]?.step === n ? latest[0] : null;
  if (state.begun) row = state.begun;
  else if (!row || row.phase === "paused" || row.phase === "discarded") {
    // the sandbox's #human: ask for a human before the last step, once
    if (directives?.human && n >= directives.steps && run.resumeCount === 0) {
      return needHuman(
        deps,
        runId,
        HUMAN_REQUESTED_REASON,
        "The sandbox #human directive asks for a human before the last step.",
      );
    }
    const begun = await beginIteration(deps, run, n);
    if ("outcome" in begun) return begun.outcome;
    row = begun.row;
  }

  const price = runStepPrice(run);
  if (row.phase !== "committed") {
    if (run.budgetCents > 0 && run.creditsCharged + price > run.budgetCents) {
      return finish(
        deps,
        runId,
        "failed",
        runError(
          "BUDGET_EXCEEDED",
          `The next step (${price} credits) would bring the run's cost to ${run.creditsCharged + price} cents, past its budget of ${run.budgetCents}.`,
          {
            budget_cents: run.budgetCents,
            cost_cents: run.creditsCharged,
          },
        ),
      );
    }
    try {
      await reserveStep(deps, run, n, price);
    } catch (e) {
      if (isCoreError(e) && e.code === "INSUFFICIENT_CREDITS") {
        return finish(
          deps,
          runId,
          "failed",
          runError("WALLET_EXHAUSTED", `The wallet cannot pay step ${n} (${price} credits).`, {
            required: e.extras.required,
            balance: e.extras.balance,
          }),
        );
      }
      throw e;
    }
  }

  try {
    let machine: RunnableMachine | null = null;
    const principal = { accountId: run.accountId, mode: run.mode };
    if (row.phase === "started") {
      machine = runnableMachine(deps, principal, run.machineId, state.machine);
      const t0 = performance.now();
      const shot = await machine.screenshot();
      const screenshotMs = performance.now() - t0;
      const choice = engineFor(deps, run);
      // one read of the recent committed steps: the engine's trajectory and the stall guard's history
      const recent = recentOf(latest, n);
      const t1 = performance.now();
      const instruction = directives ? sandboxInstruction(run.task, directives, n) : run.task;
      const prediction = await predictWith(
        deps.logger,
        choice,
        {
          screenshot: decoded(shot.png, shot.width, shot.height),
          instruction,
          cuaVersion: run.cuaVersion as "v5",
          maxActions: maxActionsFor(choice.engine.id),
          systemPrompt: run.systemPrompt ?? undefined,
          instructions: run.instructions ?? undefined,
          trajectory: recent.map((r) => ({
            screenshot: null,
            actions: (r.actions ?? []) as Action[],
            reasoning: r.reasoning ?? undefined,
          })),
        },
        (run.actionPolicy ?? null) as ActionPolicy | null,
      );
      const engineMs = performance.now() - t1;
      const predicted = {
        screenshotDigest: digestBytes(shot.png),
        actionsDigest: digestActions(prediction.actions),
        actions: prediction.actions as object,
        reasoning: prediction.reasoning,
        engineStatus: prediction.status,
        usage: {
          ...prediction.usage,
          model: prediction.model,
          safety_checks: prediction.safety_checks ?? [],
          // where the step's time went (docs/runs.md; bench/runs.ts subtracts these)
          timings: { screenshot_ms: round(screenshotMs), engine_ms: round(engineMs) },
        } as object,
      };
      const since = recent.filter((r) => r.step > run.resumedAtStep);
      const stalled = prediction.status === "continue" && isStalled(since, predicted);
      const safety = prediction.safety_checks?.[0];
      // an engine that cannot go on but says a human could: a run that may pause asks for one (issue 15)
      const offer =
        prediction.status === "fail" && run.onAwaitingHuman === "pause" ? (prediction.needs_human ?? null) : null;
      if (stalled || (safety && prediction.status === "continue") || offer) {
        await deps.db.runStep.update({
          where: { runId_step: { runId, step: n } },
          data: { ...predicted, phase: "paused" },
        });
        await settleRunReservations(deps, runId, n, { accountId: run.accountId }); // the step did not complete: its hold is released
        if (offer) return needHuman(deps, runId, offer.reason.slice(0, 500), prediction.reasoning);
        return stalled
          ? needHuman(
              deps,
              runId,
              STALLED_REASON,
              "The agent repeated the same action on an unchanged screen three times.",
            )
          : needHuman(deps, runId, `safety_check: ${safety!.message}`.slice(0, 500), safety!.message);
      }
      // record the prediction and claim the execution in one write, only while the run is still running
      // (a cancel or the deadline that committed first wins; the commit then discards the step)
      // (raw SQL: the ORM's updateMany compiled this query at every step, issue 16)
      const claimed = await deps.db.$executeRaw`
        UPDATE run_steps SET phase = 'executing', exec_attempts = exec_attempts + 1,
          screenshot_digest = ${predicted.screenshotDigest}, actions_digest = ${predicted.actionsDigest},
          actions = ${JSON.stringify(predicted.actions)}::jsonb, reasoning = ${predicted.reasoning},
          engine_status = ${predicted.engineStatus}, usage = ${JSON.stringify(predicted.usage)}::jsonb
        WHERE run_id = ${runId} AND step = ${n}::int AND phase = 'started'
          AND EXISTS (SELECT 1 FROM runs WHERE id = ${runId} AND status = 'running')`;
      row = { ...row, ...predicted, phase: "executing", execAttempts: row.execAttempts + 1 } as RunStep;
      if (claimed === 0) return await commitStep(deps, run, row, price, []);
      const actions = prediction.actions;
      let results: ExecResult[] = [];
      const t2 = performance.now();
      if (actions.some((a) => toMachineCommands(a).length > 0)) results = await execute(machine, actions);
      return await commitStep(deps, run, row, price, results, performance.now() - t2);
    }
    if (row.phase === "predicted") {
      // (a prediction recorded by an earlier version of this code): execute it now
      const claimed = await deps.db.runStep.updateMany({
        where: { runId, step: n, phase: "predicted", run: { status: "running" } },
        data: { phase: "executing", execAttempts: { increment: 1 } },
      });
      if (claimed.count === 0) return await commitStep(deps, run, row, price, []);
      machine = runnableMachine(deps, principal, run.machineId, state.machine);
      const actions = (row.actions ?? []) as Action[];
      const t2 = performance.now();
      const results = actions.some((a) => toMachineCommands(a).length > 0) ? await execute(machine, actions) : [];
      return await commitStep(deps, run, row, price, results, performance.now() - t2);
    }
    if (row.phase === "executing") {
      // a crash hit the execution window: never execute again (at most once); commit what is known
      return await commitStep(deps, run, row, price, [{ interrupted: true }]);
    }
    if (row.phase === "executed") return await commitStep(deps, run, row, price, null);
    if (row.phase === "committed") {
      await settleRunReservations(deps, runId, n, { accountId: run.accountId });
      const latest = await deps.db.run.findUniqueOrThrow({ where: { id: runId } });
      return outcomeOf(latest);
    }
    return outcomeOf(run);
  } catch (e) {
    const fatal = fatalError(e);
    if (fatal) return finish(deps, runId, "failed", fatal);
    await recordStepError(deps, runId, n, e);
    throw e;
  }
}

/** After the step's retries ran out: the run fails with the last step error. */
export async function failRunAfterError(deps: RunsDeps, runId: string, message: string): Promise<StepOutcome> {
  const run = await deps.db.run.findUnique({ where: { id: runId } });
  if (!run) return { kind: "terminal", status: "failed" };
  const last = (run.lastStepError ?? null) as RunError | null;
  return finish(deps, runId, "failed", last ?? runError("INTERNAL_ERROR", message.slice(0, 500)));
}

/** The deadline passed (the run-deadline function's sleep ended, or a human wait timed out). */
export async function expireRun(deps: RunsDeps, runId: string): Promise<StepOutcome> {
  const run = await deps.db.run.findUnique({ where: { id: runId } });
  if (!run) return { kind: "terminal", status: "failed" };
  if (isTerminal(run.status)) return outcomeOf(run);
  if (deps.clock.now() < run.deadlineAt) return outcomeOf(run);
  return finish(deps, runId, "timed_out", runError("DEADLINE_EXCEEDED", "The run's deadline passed."));
}

/** While the function waits for a human: resumed already, still waiting, or over (deadline, cancel). */
export async function checkHumanWait(deps: RunsDeps, runId: string): Promise<StepOutcome> {
  const run = await deps.db.run.findUnique({ where: { id: runId } });
  if (!run) return { kind: "terminal", status: "failed" };
  if (run.status === "awaiting_human" && deps.clock.now() >= run.deadlineAt) return expireRun(deps, runId);
  if (run.status === "awaiting_human") {
    const ends = humanWaitEndsAt(run);
    // awaiting_human_timeout_seconds passed: the on_awaiting_human fallback, failed (DECISIONS amendments: runs)
    if (ends.byTimeout && deps.clock.now() >= ends.at) {
      return withRun(deps, runId, async (tx, locked, fx) => {
        if (locked?.status !== "awaiting_human") return outcomeOf(locked ?? run);
        const error = runError(
          "AWAITING_HUMAN_TIMEOUT",
          `No human resumed the run within ${locked.awaitingHumanTimeoutSeconds} seconds.`,
          { reason: locked.awaitingHumanReason },
        );
        const after = await finishInTx(tx, locked, "failed", { error }, fx, deps.clock.now());
        return outcomeOf(after ?? locked);
      });
    }
  }
  return outcomeOf(run);
}
