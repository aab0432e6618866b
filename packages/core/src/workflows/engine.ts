// The step bodies of the durable workflow function (inngest/src/functions/workflows.ts): each is one core
// call inside a memoized step, so a crash re-runs at most the body whose result was not committed, and each
// body is idempotent (keyed by the run, the step id and its iteration path). The function walks the pinned
// definition; these bodies read and write the database and check the guards (deadline_seconds,
// max_iterations, budget_cents -> GUARD_EXCEEDED; SPEC.md "Workflows", DECISIONS.md "Workflows").
import { Prisma, type WorkflowRun } from "@cua/db/generated";
import type { Principal } from "../keys/authenticate-key.ts";
import { createRun } from "../runs/create-run.ts";
import { isTerminal } from "../runs/run-record.ts";
import type { Definition } from "./definition.ts";
import type { WorkflowsDeps } from "./ports.ts";
import { appendWorkflowEvents, cancelChildRuns, finishWorkflowRunInTx } from "./workflow-runs.ts";

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
  };
}

export interface StepMark {
  stepId: string;
  type: string;
  /** iteration path ("" at the top; "loop.2/retry.1" inside containers) */
  iteration: string;
}

/** A step starts: guards checked, its row running, a step_started frame. */
export async function enterStep(deps: WorkflowsDeps, runId: string, m: StepMark): Promise<Gate> {
  const g = await gate(deps, await load(deps, runId), m.stepId);
  if (!g.ok) return g;
  const now = deps.clock.now();
  await deps.db.$transaction(async (tx) => {
    const ordinal = await tx.workflowRunStep.count({ where: { runId } });
    await tx.workflowRunStep.upsert({
      where: { runId_stepId: { runId, stepId: m.stepId } },
      create: {
        runId,
        stepId: m.stepId,
        type: m.type,
        status: "running",
        iteration: m.iteration,
        ordinal,
        startedAt: now,
      },
      update: {
        status: "running",
        iteration: m.iteration,
        startedAt: now,
        finishedAt: null,
        output: Prisma.DbNull,
        error: Prisma.DbNull,
        childRunId: null,
      },
    });
    await appendWorkflowEvents(tx, runId, [
      { event: "step_started", data: { run_id: runId, step_id: m.stepId, type: m.type, iteration: m.iteration } },
    ]);
  });
  return { ok: true };
}

/** A step ends: its row and a step_finished frame. */
export async function leaveStep(
  deps: WorkflowsDeps,
  runId: string,
  m: StepMark & { status: "succeeded" | "failed" | "skipped"; output?: unknown; error?: RunFailure | null },
): Promise<void> {
  const now = deps.clock.now();
  await deps.db.$transaction(async (tx) => {
    await tx.workflowRunStep.upsert({
      where: { runId_stepId: { runId, stepId: m.stepId } },
      create: {
        runId,
        stepId: m.stepId,
        type: m.type,
        status: m.status,
        iteration: m.iteration,
        output: (m.output ?? undefined) as object | undefined,
        error: (m.error ?? undefined) as object | undefined,
        startedAt: now,
        finishedAt: now,
      },
      update: {
        status: m.status,
        output: (m.output ?? undefined) as object | undefined,
        error: (m.error ?? undefined) as object | undefined,
        finishedAt: now,
      },
    });
    await appendWorkflowEvents(tx, runId, [
      {
        event: "step_finished",
        data: {
          run_id: runId,
          step_id: m.stepId,
          type: m.type,
          iteration: m.iteration,
          status: m.status,
          output: m.output ?? null,
          error: m.error ?? null,
        },
      },
    ]);
  });
}

/** An instant step (assert, succeed, fail, and a container's end) in one body: enter and leave. */
export async function instantStep(
  deps: WorkflowsDeps,
  runId: string,
  m: StepMark & { status: "succeeded" | "failed"; output?: unknown; error?: RunFailure | null },
): Promise<Gate> {
  const g = await enterStep(deps, runId, m);
  if (!g.ok) return g;
  await leaveStep(deps, runId, m);
  return g;
}

/** One more loop iteration or retry attempt: counted against the run's max_iterations. */
export async function countIteration(deps: WorkflowsDeps, runId: string, stepId: string): Promise<Gate> {
  const run = await load(deps, runId);
  const g = await gate(deps, run, stepId);
  if (!g.ok) return g;
  const upd = await deps.db.workflowRun.updateMany({
    where: { id: runId, iterationsUsed: { lt: run!.maxIterations } },
    data: { iterationsUsed: { increment: 1 } },
  });
  if (upd.count === 0) return guard(`max_iterations (${run!.maxIterations}) used up`, stepId);
  return { ok: true };
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
): Promise<TaskStarted> {
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
  if (child.status !== "succeeded") {
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
): Promise<ApprovalOpened> {
  const run = await load(deps, runId);
  const g = await gate(deps, run, m.stepId);
  if (!g.ok) return g as Exclude<Gate, { ok: true }>;
  const now = deps.clock.now();
  const until = Math.min(
    run!.deadlineAt.getTime(),
    timeoutSeconds ? now.getTime() + timeoutSeconds * 1000 : Number.POSITIVE_INFINITY,
  );
  await deps.db.$transaction(async (tx) => {
    const row = await tx.workflowRunStep.findUnique({ where: { runId_stepId: { runId, stepId: m.stepId } } });
    if (row && row.iteration === m.iteration && row.status === "awaiting_human") return; // re-run of this body
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
  });
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
    await leaveStep(deps, runId, {
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
  await leaveStep(deps, runId, { ...m, status: "failed", output: { approved: null, note: null }, error: fail });
  return { pending: false, approved: false, note: null, fail };
}

/** The run ends (once): succeeded with its output, or failed with its error; failures cancel child runs. */
export async function finishWorkflowRun(
  deps: WorkflowsDeps,
  runId: string,
  outcome: { status: "succeeded"; output: unknown } | { status: "failed"; error: RunFailure },
): Promise<string> {
  const now = deps.clock.now();
  const after = await deps.db.$transaction((tx) =>
    outcome.status === "succeeded"
      ? finishWorkflowRunInTx(tx, runId, "succeeded", { output: outcome.output ?? null }, now)
      : finishWorkflowRunInTx(tx, runId, "failed", { error: outcome.error }, now),
  );
  const run = after ?? (await load(deps, runId));
  if (run && outcome.status === "failed") await cancelChildRuns(deps, run);
  return run?.status ?? "failed";
}
