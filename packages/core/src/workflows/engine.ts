// The step bodies of the durable workflow function (inngest/src/functions/workflows.ts): each is one core
// call inside a memoized step, so a crash re-runs at most the body whose result was not committed, and each
// body is idempotent (keyed by the run, the step id and its iteration path). The function walks the pinned
// definition; these bodies read and write the database and check the guards (deadline_seconds,
// max_iterations, budget_cents -> GUARD_EXCEEDED; SPEC.md "Workflows", DECISIONS.md "Workflows").
import type { Tx } from "@cua/db/client";
import { Prisma, type WorkflowRun } from "@cua/db/generated";
import type { Principal } from "../keys/authenticate-key.ts";
import { createRun } from "../runs/create-run.ts";
import { isTerminal } from "../runs/run-record.ts";
import { queueWorkflowCallback } from "./callbacks.ts";
import type { Definition } from "./definition.ts";
import type { WorkflowsDeps } from "./ports.ts";
import { appendWorkflowEvents, cancelChildRuns, finishWorkflowRunInTx, sendCallbacks } from "./workflow-runs.ts";

export interface RunFailure {
  code: string;
  message: string;
  step_id?: string;
}

/** What a step body answers: go on, stop (the run is terminal already), or fail the run. */
export type Gate = { ok: true } | { ok: false; stop: true } | { ok: false; stop?: false; fail: RunFailure };

const STOP: Gate = { ok: false, stop: true };
const guard = (message: string, stepId?: string): Exclude<Gate, { ok: true }> => ({
  ok: false,
  fail: { code: "GUARD_EXCEEDED", message, ...(stepId ? { step_id: stepId } : {}) },
});

async function gate(deps: WorkflowsDeps, run: WorkflowRun | null, stepId?: string): Promise<Gate> {
  if (!run || isTerminal(run.status)) return STOP;
  if (deps.clock.now() >= run.deadlineAt) return guard("deadline_seconds passed", stepId);
  return { ok: true };
}

const load = (deps: WorkflowsDeps, id: string) => deps.db.workflowRun.findUnique({ where: { id } });

export interface Begun {
  started: boolean;
  definition: Definition;
  inputs: Record<string, unknown>;
  maxIterations: number;
}

/** queued -> running; the pinned definition and the inputs. started false: the run is terminal already. */
export async function beginWorkflowRun(deps: WorkflowsDeps, runId: string): Promise<Begun> {
  const now = deps.clock.now();
  const run = await deps.db.$transaction(async (tx) => {
    const upd = await tx.workflowRun.updateMany({
      where: { id: runId, status: "queued" },
      data: { status: "running", startedAt: now },
    });
    if (upd.count > 0)
      await appendWorkflowEvents(tx, runId, [{ event: "status", data: { run_id: runId, status: "running" } }]);
    return tx.workflowRun.findUnique({ where: { id: runId } });
  });
  return {
    started: Boolean(run && !isTerminal(run.status)),
    definition: (run?.definition ?? { steps: [] }) as unknown as Definition,
    inputs: (run?.inputs ?? {}) as Record<string, unknown>,
    maxIterations: run?.maxIterations ?? 0,
  };
}

export interface StepMark {
  stepId: string;
  type: string;
  /** iteration path ("" at the top; "loop.2/retry.1" inside containers) */
  iteration: string;
}

/**
 * What the function observed since its last effect: steps entered and left (the steps without effects,
 * assert/if/loop/retry/parallel/succeed/fail, run inside the function and are recorded in batches), and the
 * iterations used so far. Written by the next effect's body, in its transaction.
 */
export interface StepRecord extends StepMark {
  kind: "enter" | "leave";
  status?: "succeeded" | "failed" | "skipped";
  output?: unknown;
  error?: RunFailure | null;
  /** ISO time the function saw it */
  at: string;
}

export interface Pending {
  records: StepRecord[];
  iterations: number;
}

/** Writes a batch: one upsert per step (its final state in the batch), the frames in order, iterations_used. */
export async function writeRecords(tx: Tx, runId: string, pending: Pending): Promise<void> {
  if (pending.iterations > 0)
    await tx.$executeRaw`UPDATE workflow_runs SET iterations_used = GREATEST(iterations_used, ${pending.iterations}) WHERE id = ${runId}`;
  if (pending.records.length === 0) return;
  const rows = new Map<
    string,
    {
      step_id: string;
      type: string;
      status: string;
      iteration: string;
      output: unknown;
      error: unknown;
      started_at: string | null;
      finished_at: string | null;
    }
  >();
  for (const r of pending.records) {
    const prev = rows.get(r.stepId);
    if (r.kind === "enter")
      rows.set(r.stepId, {
        step_id: r.stepId,
        type: r.type,
        status: "running",
        iteration: r.iteration,
        output: null,
        error: null,
        started_at: r.at,
        finished_at: null,
      });
    else
      rows.set(r.stepId, {
        step_id: r.stepId,
        type: r.type,
        status: r.status ?? "succeeded",
        iteration: r.iteration,
        output: r.output ?? null,
        error: r.error ?? null,
        started_at: prev?.started_at ?? null,
        finished_at: r.at,
      });
  }
  // a step entered in another iteration starts afresh (no child run); a leave keeps its start and child
  await tx.$executeRaw`
    INSERT INTO workflow_run_steps (run_id, step_id, type, status, iteration, output, error, started_at, finished_at)
    SELECT ${runId}, x.step_id, x.type, x.status, x.iteration, x.output, x.error, x.started_at, x.finished_at
      FROM jsonb_to_recordset(${JSON.stringify([...rows.values()])}::jsonb)
        AS x(step_id text, type text, status text, iteration text, output jsonb, error jsonb, started_at timestamptz, finished_at timestamptz)
    ON CONFLICT (run_id, step_id) DO UPDATE SET
      type = EXCLUDED.type,
      status = EXCLUDED.status,
      output = EXCLUDED.output,
      error = EXCLUDED.error,
      child_run_id = CASE WHEN EXCLUDED.iteration = workflow_run_steps.iteration THEN workflow_run_steps.child_run_id ELSE NULL END,
      decision = CASE WHEN EXCLUDED.iteration = workflow_run_steps.iteration THEN workflow_run_steps.decision ELSE NULL END,
      iteration = EXCLUDED.iteration,
      started_at = COALESCE(EXCLUDED.started_at, workflow_run_steps.started_at),
      finished_at = EXCLUDED.finished_at`;
  await appendWorkflowEvents(
    tx,
    runId,
    pending.records.map((r) =>
      r.kind === "enter"
        ? { event: "step_started", data: { run_id: runId, step_id: r.stepId, type: r.type, iteration: r.iteration } }
        : {
            event: "step_finished",
            data: {
              run_id: runId,
              step_id: r.stepId,
              type: r.type,
              iteration: r.iteration,
              status: r.status ?? "succeeded",
              output: r.output ?? null,
              error: r.error ?? null,
            },
          },
    ),
  );
}

/** One step's end, written now (approvals). */
async function leaveNow(
  deps: WorkflowsDeps,
  runId: string,
  r: StepMark & { status: "succeeded" | "failed"; output?: unknown; error?: RunFailure | null },
): Promise<void> {
  const at = deps.clock.now().toISOString();
  await deps.db.$transaction((tx) =>
    writeRecords(tx, runId, { records: [{ ...r, kind: "leave", at }], iterations: 0 }),
  );
}

/** Writes a batch unless the run is terminal (then nothing more is recorded). */
async function flush(deps: WorkflowsDeps, runId: string, pending: Pending): Promise<WorkflowRun | null> {
  return deps.db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT 1 FROM workflow_runs WHERE id = ${runId} FOR UPDATE`;
    const run = await tx.workflowRun.findUnique({ where: { id: runId } });
    if (!run || isTerminal(run.status)) return run;
    await writeRecords(tx, runId, pending);
    return run;
  });
}

export interface TaskFields {
  task: string;
  machine_id: string | null;
  cua_version?: "v5" | "v4" | "v3" | "v1";
  instructions?: string;
  system_prompt?: string;
  max_steps?: number;
  on_awaiting_human?: "pause" | "fail" | "cancel";
}

export type TaskStarted = { ok: true; runId: string } | Exclude<Gate, { ok: true }>;

/**
 * A task step starts a real task run (the run function drives it; billed as a run). Idempotent: a step
 * whose row already names a child run of this iteration answers that run.
 */
export async function startTaskStep(
  deps: WorkflowsDeps,
  runId: string,
  m: StepMark,
  fields: TaskFields,
  pending: Pending,
): Promise<TaskStarted> {
  // the batch holds this step's own enter record: a row of this iteration means it was written already
  // (this body runs again after a crash)
  const before = await deps.db.workflowRunStep.findUnique({ where: { runId_stepId: { runId, stepId: m.stepId } } });
  if (!(before && before.iteration === m.iteration)) await flush(deps, runId, pending);
  const run = await load(deps, runId);
  const g = await gate(deps, run, m.stepId);
  if (!g.ok) return g as Exclude<Gate, { ok: true }>;
  const row = await deps.db.workflowRunStep.findUnique({ where: { runId_stepId: { runId, stepId: m.stepId } } });
  if (row?.childRunId && row.iteration === m.iteration && row.status === "running")
    return { ok: true, runId: row.childRunId };
  if (run!.budgetCents > 0 && run!.spentCents >= run!.budgetCents)
    return guard(`budget_cents (${run!.budgetCents}) spent`, m.stepId);
  const machineId = fields.machine_id ?? run!.machineId;
  if (!machineId) return { ok: false, fail: { code: "STEP_FAILED", message: "no machine_id", step_id: m.stepId } };
  const principal: Principal = {
    keyId: run!.apiKeyId,
    accountId: run!.accountId,
    mode: run!.mode,
    scopes: [],
    tier: "free",
    keyKind: run!.mode,
  };
  let child: { id: string };
  try {
    child = await createRun(
      deps,
      { principal, requestId: `wf:${runId}`, llm: {} },
      {
        machine_id: machineId,
        task: fields.task,
        ...(fields.cua_version ? { cua_version: fields.cua_version } : {}),
        ...(fields.instructions ? { instructions: fields.instructions } : {}),
        ...(fields.system_prompt ? { system_prompt: fields.system_prompt } : {}),
        ...(fields.max_steps ? { max_steps: fields.max_steps } : {}),
        on_awaiting_human: fields.on_awaiting_human ?? "pause",
        ...(run!.budgetCents > 0 ? { budget_cents: run!.budgetCents - run!.spentCents } : {}),
        deadline_seconds: Math.max(1, Math.ceil((run!.deadlineAt.getTime() - deps.clock.now().getTime()) / 1000)),
        ...(run!.llm ? { llm: run!.llm as { provider: string; model?: string } } : {}),
        metadata: { workflow_run_id: runId, workflow_step_id: m.stepId },
      },
    );
  } catch (e) {
    const code = (e as { code?: string }).code ?? "STEP_FAILED";
    const message = (e as Error).message;
    return {
      ok: false,
      fail: { code: "STEP_FAILED", message: `the task run could not start: ${code}: ${message}`, step_id: m.stepId },
    };
  }
  await deps.db.workflowRunStep.update({
    where: { runId_stepId: { runId, stepId: m.stepId } },
    data: { childRunId: child.id },
  });
  return { ok: true, runId: child.id };
}

/** The binding of a task step: `{status, passed, result, run_id, steps, error}`. */
export interface TaskBinding {
  status: string;
  passed: boolean;
  result: unknown;
  run_id: string;
  steps: number;
  error: unknown;
}

export type TaskChecked =
  | { done: false; deadlineAt: string }
  | { done: true; binding: TaskBinding; fail: RunFailure | null }
  | { done: true; stop: true };

/**
 * Reads the child run. Terminal: its cost is added to spent_cents (once: the step row leaves `running` in
 * the same transaction), the step binds its result, and a run that did not succeed fails the step
 * (STEP_FAILED; a budget stop is GUARD_EXCEEDED). Past the deadline the child is cancelled (GUARD_EXCEEDED).
 */
export async function checkTaskStep(
  deps: WorkflowsDeps,
  runId: string,
  m: StepMark,
  childRunId: string,
): Promise<TaskChecked> {
  const run = await load(deps, runId);
  if (!run || isTerminal(run.status)) return { done: true, stop: true };
  let child = await deps.db.run.findUniqueOrThrow({ where: { id: childRunId } });
  if (!isTerminal(child.status) && deps.clock.now() >= run.deadlineAt) {
    await cancelChildRuns(deps, run);
    child = await deps.db.run.findUniqueOrThrow({ where: { id: childRunId } });
  }
  if (!isTerminal(child.status)) {
    if (child.status !== "running" && child.status !== "queued") {
      await deps.db.workflowRunStep.updateMany({
        where: { runId, stepId: m.stepId, status: { in: ["running", "awaiting_human"] } },
        data: { status: child.status === "awaiting_human" ? "awaiting_human" : "running" },
      });
    }
    return { done: false, deadlineAt: run.deadlineAt.toISOString() };
  }
  const result = (child.result ?? null) as { passed?: boolean } | null;
  const binding: TaskBinding = {
    status: child.status,
    passed: child.status === "succeeded" && (result?.passed ?? true),
    result,
    run_id: child.id,
    steps: child.stepCount,
    error: child.error ?? null,
  };
  const childError = child.error as { code?: string; message?: string } | null;
  let fail: RunFailure | null = null;
  // the answer to the task run's wait for a human was "rejected" (resume with approved: false, child-runs.ts)
  const step = await deps.db.workflowRunStep.findUnique({ where: { runId_stepId: { runId, stepId: m.stepId } } });
  const decision =
    step?.childRunId === childRunId ? (step.decision as { approved?: boolean; note?: string } | null) : null;
  if (child.status !== "succeeded" && decision?.approved === false) {
    fail = {
      code: "APPROVAL_REJECTED",
      message: `task step "${m.stepId}" was rejected while its run waited for a human${decision.note ? `: ${decision.note}` : ""}`,
      step_id: m.stepId,
    };
  } else if (child.status !== "succeeded") {
    const budget = childError?.code === "BUDGET_EXCEEDED";
    const overDeadline = deps.clock.now() >= run.deadlineAt;
    fail = {
      code: budget || overDeadline ? "GUARD_EXCEEDED" : "STEP_FAILED",
      message: budget
        ? `budget_cents (${run.budgetCents}) would be exceeded by task step "${m.stepId}"`
        : overDeadline
          ? "deadline_seconds passed"
          : `task step "${m.stepId}": run ${child.id} ${child.status}${childError?.message ? `: ${childError.message}` : ""}`,
      step_id: m.stepId,
    };
  }
  const now = deps.clock.now();
  await deps.db.$transaction(async (tx) => {
    const upd = await tx.workflowRunStep.updateMany({
      where: { runId, stepId: m.stepId, childRunId, status: { in: ["running", "awaiting_human"] } },
      data: {
        status: fail ? "failed" : "succeeded",
        output: binding as object,
        error: fail ? (fail as object) : undefined,
        finishedAt: now,
      },
    });
    if (upd.count === 0) return; // recorded by an earlier attempt of this body
    if (child.creditsCharged > 0)
      await tx.workflowRun.update({ where: { id: runId }, data: { spentCents: { increment: child.creditsCharged } } });
    await appendWorkflowEvents(tx, runId, [
      {
        event: "step_finished",
        data: {
          run_id: runId,
          step_id: m.stepId,
          type: "task",
          iteration: m.iteration,
          status: fail ? "failed" : "succeeded",
          output: binding,
          error: fail,
        },
      },
    ]);
  });
  if (!fail && run.budgetCents > 0) {
    const after = await load(deps, runId);
    if (after && after.spentCents > after.budgetCents)
      fail = { code: "GUARD_EXCEEDED", message: `budget_cents (${run.budgetCents}) exceeded`, step_id: m.stepId };
  }
  return { done: true, binding, fail };
}

export type ApprovalOpened = { ok: true; deadlineAt: string } | Exclude<Gate, { ok: true }>;

/** A human_approval step: the run waits (awaiting_human) with the message as its reason. */
export async function openApproval(
  deps: WorkflowsDeps,
  runId: string,
  m: StepMark,
  message: string,
  timeoutSeconds: number | null,
  pending: Pending,
): Promise<ApprovalOpened> {
  const run = await load(deps, runId);
  const g = await gate(deps, run, m.stepId);
  if (!g.ok) return g as Exclude<Gate, { ok: true }>;
  const now = deps.clock.now();
  const until = Math.min(
    run!.deadlineAt.getTime(),
    timeoutSeconds ? now.getTime() + timeoutSeconds * 1000 : Number.POSITIVE_INFINITY,
  );
  const deliveries: string[] = [];
  await deps.db.$transaction(async (tx) => {
    const row = await tx.workflowRunStep.findUnique({ where: { runId_stepId: { runId, stepId: m.stepId } } });
    if (row && row.iteration === m.iteration && row.status === "awaiting_human") return; // re-run of this body
    await tx.$queryRaw`SELECT 1 FROM workflow_runs WHERE id = ${runId} FOR UPDATE`;
    const cur = await tx.workflowRun.findUnique({ where: { id: runId } });
    if (cur?.status !== "running") return;
    await writeRecords(tx, runId, pending);
    const upd = await tx.workflowRun.updateMany({
      where: { id: runId, status: "running" },
      data: { status: "awaiting_human", awaitingHumanReason: message, awaitingStepId: m.stepId },
    });
    if (upd.count === 0) return;
    const ordinal = await tx.workflowRunStep.count({ where: { runId } });
    const data = {
      status: "awaiting_human",
      iteration: m.iteration,
      startedAt: now,
      finishedAt: null,
      output: { message, expires_at: new Date(until).toISOString() },
    };
    await tx.workflowRunStep.upsert({
      where: { runId_stepId: { runId, stepId: m.stepId } },
      create: { runId, stepId: m.stepId, type: "human_approval", ordinal, ...data },
      update: { ...data, decision: Prisma.DbNull, error: Prisma.DbNull },
    });
    await appendWorkflowEvents(tx, runId, [
      {
        event: "step_started",
        data: { run_id: runId, step_id: m.stepId, type: "human_approval", iteration: m.iteration },
      },
      { event: "status", data: { run_id: runId, status: "awaiting_human" } },
      { event: "awaiting_human", data: { run_id: runId, step_id: m.stepId, reason: message } },
    ]);
    const paused = await tx.workflowRun.findUniqueOrThrow({ where: { id: runId } });
    const d = await queueWorkflowCallback(
      tx,
      paused,
      "workflow.awaiting_human",
      `workflow.awaiting_human#${paused.resumeCount + 1}`,
      now,
    );
    if (d) deliveries.push(d);
  });
  await sendCallbacks(deps, deliveries);
  const row = await deps.db.workflowRunStep.findUnique({ where: { runId_stepId: { runId, stepId: m.stepId } } });
  const expires = (row?.output as { expires_at?: string } | null)?.expires_at ?? new Date(until).toISOString();
  return { ok: true, deadlineAt: expires };
}

export type ApprovalChecked =
  | { pending: true; deadlineAt: string }
  | { pending: false; approved: boolean; note: string | null; fail: RunFailure | null }
  | { pending: false; stop: true };

/** Reads the answer written by resume; past the approval's timeout (or the run's deadline) the step fails. */
export async function checkApproval(deps: WorkflowsDeps, runId: string, m: StepMark): Promise<ApprovalChecked> {
  const run = await load(deps, runId);
  if (!run || isTerminal(run.status)) return { pending: false, stop: true };
  const row = await deps.db.workflowRunStep.findUniqueOrThrow({ where: { runId_stepId: { runId, stepId: m.stepId } } });
  const decision = row.decision as { approved: boolean; note: string | null } | null;
  const now = deps.clock.now();
  if (decision) {
    const fail = decision.approved
      ? null
      : {
          code: "APPROVAL_REJECTED",
          message: `human_approval "${m.stepId}" was rejected${decision.note ? `: ${decision.note}` : ""}`,
          step_id: m.stepId,
        };
    await leaveNow(deps, runId, {
      ...m,
      status: fail ? "failed" : "succeeded",
      output: { approved: decision.approved, note: decision.note ?? null },
      error: fail,
    });
    return { pending: false, approved: decision.approved, note: decision.note ?? null, fail };
  }
  const expires = new Date((row.output as { expires_at: string }).expires_at);
  if (now < expires) return { pending: true, deadlineAt: expires.toISOString() };
  // timed out: the run leaves awaiting_human (a late resume finds it running: 409 NOT_AWAITING_HUMAN)
  const overDeadline = now >= run.deadlineAt;
  const fail: RunFailure = overDeadline
    ? { code: "GUARD_EXCEEDED", message: "deadline_seconds passed", step_id: m.stepId }
    : { code: "APPROVAL_TIMEOUT", message: `nobody answered human_approval "${m.stepId}" in time`, step_id: m.stepId };
  const moved = await deps.db.workflowRun.updateMany({
    where: { id: runId, status: "awaiting_human", awaitingStepId: m.stepId },
    data: { status: "running", awaitingHumanReason: null, awaitingStepId: null },
  });
  if (moved.count === 0) {
    // an answer won the race: read it next time
    return { pending: true, deadlineAt: now.toISOString() };
  }
  await leaveNow(deps, runId, { ...m, status: "failed", output: { approved: null, note: null }, error: fail });
  return { pending: false, approved: false, note: null, fail };
}

/** The run ends (once): succeeded with its output, or failed with its error; failures cancel child runs. */
export async function finishWorkflowRun(
  deps: WorkflowsDeps,
  runId: string,
  outcome: { status: "succeeded"; output: unknown } | { status: "failed"; error: RunFailure },
  pending: Pending,
): Promise<string> {
  const now = deps.clock.now();
  const deliveries: string[] = [];
  const after = await deps.db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT 1 FROM workflow_runs WHERE id = ${runId} FOR UPDATE`;
    const cur = await tx.workflowRun.findUnique({ where: { id: runId } });
    if (!cur || isTerminal(cur.status)) return null;
    await writeRecords(tx, runId, pending);
    return outcome.status === "succeeded"
      ? finishWorkflowRunInTx(tx, runId, "succeeded", { output: outcome.output ?? null }, now, deliveries)
      : finishWorkflowRunInTx(tx, runId, "failed", { error: outcome.error }, now, deliveries);
  });
  await sendCallbacks(deps, deliveries);
  const run = after ?? (await load(deps, runId));
  if (run && outcome.status === "failed") await cancelChildRuns(deps, run);
  return run?.status ?? "failed";
}
