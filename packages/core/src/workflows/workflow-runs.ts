// Workflow runs: start a saved workflow's run (pinned to its current version) or an ad-hoc run, list, get,
// cancel, resume a pending human_approval (SPEC.md "Workflows", "Workflow run"; DECISIONS.md "Workflows"
// and its Compatibility amendment). The row is authoritative; the durable function (inngest/src/functions/
// workflows.ts) drives it through engine.ts. Check order (DECISIONS "Cross-cutting rules"): 422 body
// (definition, in the zod schema) -> 404 workflow -> 422 inputs against inputs_schema -> 409 archived.

import { CoreError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import { detailsError } from "@cua/base/validation";
import type { Tx } from "@cua/db/client";
import type { WorkflowRun, WorkflowRunStep } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { loadMachine } from "../machines-service/record.ts";
import { invalidStatusFilter, type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import { checkCallbackUrl } from "../runs/callbacks.ts";
import { cancelRun } from "../runs/cancel-run.ts";
import { resumeRun } from "../runs/resume-run.ts";
import { isTerminal } from "../runs/run-record.ts";
import { newWebhookSecret, sealRunSecret } from "../runs/run-secrets.ts";
import { queueWorkflowCallback } from "./callbacks.ts";
import { type Definition, flattenSteps, type Step } from "./definition.ts";
import { inputsProblems } from "./inputs-schema.ts";
import type { WorkflowsDeps } from "./ports.ts";
import { WORKFLOW_RUN_STATUSES, type WorkflowRunStatus } from "./schemas.ts";
import { currentVersion, decodeCursor, loadWorkflow, nextCursorOf, pageAfter, WELL_FORMED_ID } from "./workflows.ts";

export const DEFAULT_MAX_ITERATIONS = 1000;
export const ACTIVE = ["queued", "running", "awaiting_human"] as const;

export const newWorkflowRunId = (mode: "live" | "test") => (mode === "test" ? `wfr_test_${hex(12)}` : `wfr_${hex(12)}`);

export interface WorkflowEventFrame {
  event: "status" | "step_started" | "step_finished" | "awaiting_human" | "resumed" | "terminal";
  data: Record<string, unknown>;
}

/** Appends frames with the next seqs of the run (SSE replay reads them back in order). */
export async function appendWorkflowEvents(tx: Tx, runId: string, frames: WorkflowEventFrame[]): Promise<void> {
  if (frames.length === 0) return;
  const rows = await tx.$queryRaw<{ event_seq: number }[]>`
    UPDATE workflow_runs SET event_seq = event_seq + ${frames.length} WHERE id = ${runId} RETURNING event_seq`;
  const first = Number(rows[0]!.event_seq) - frames.length + 1;
  await tx.workflowRunEvent.createMany({
    data: frames.map((f, i) => ({ runId, seq: first + i, event: f.event, data: f.data as object })),
  });
}

export interface StartInput {
  inputs?: Record<string, unknown>;
  machine_id?: string;
  budget_cents?: number;
  max_iterations?: number;
  deadline_seconds?: number;
  webhook_url?: string;
  metadata?: Record<string, string>;
  llm?: { provider: string; model?: string | undefined };
}

/** Task steps that name no machine need the run's machine_id. */
function needsDefaultMachine(def: Definition): string | null {
  const t = flattenSteps(def.steps).find((s) => s.type === "task" && !s.machine_id);
  return t ? t.id : null;
}

async function startRun(
  deps: WorkflowsDeps,
  p: Principal,
  pinned: { workflowId: string | null; version: number | null; definition: Definition; inputsSchema: unknown },
  input: StartInput,
): Promise<WorkflowRunRecord> {
  const inputs = input.inputs ?? {};
  const problems = inputsProblems(pinned.inputsSchema, inputs, "body.inputs");
  if (problems.length > 0) throw detailsError(problems);
  const bare = needsDefaultMachine(pinned.definition);
  if (bare && input.machine_id === undefined)
    throw detailsError([{ path: "body.machine_id", message: `required: task step "${bare}" names no machine_id` }]);
  const webhookUrl =
    input.webhook_url === undefined
      ? null
      : await checkCallbackUrl(input.webhook_url, deps.runsConfig.allowInsecureCallbacks);
  const machineId = input.machine_id === undefined ? null : (await loadMachine(deps, p, input.machine_id)).id;
  const id = newWorkflowRunId(p.mode);
  const now = deps.clock.now();
  const secret = webhookUrl ? newWebhookSecret() : null;
  const deadlineSeconds = Math.min(input.deadline_seconds ?? 86_400, deps.runsConfig.deadlineSeconds);
  const row = await deps.db.$transaction(async (tx) => {
    await tx.workflowRun.create({
      data: {
        id,
        accountId: p.accountId,
        mode: p.mode,
        apiKeyId: p.keyId,
        workflowId: pinned.workflowId,
        workflowVersion: pinned.version,
        definition: pinned.definition as object,
        inputsSchema: (pinned.inputsSchema as object) ?? undefined,
        inputs: inputs as object,
        machineId,
        status: "queued",
        maxIterations: input.max_iterations ?? DEFAULT_MAX_ITERATIONS,
        budgetCents: input.budget_cents ?? 0,
        deadlineAt: new Date(now.getTime() + deadlineSeconds * 1000),
        webhookUrl,
        webhookSecretSealed: secret ? sealRunSecret(deps.kek, id, "webhook", secret) : null,
        metadata: input.metadata ?? {},
        llm: input.llm ? (input.llm as object) : undefined,
        createdAt: now,
      },
    });
    await appendWorkflowEvents(tx, id, [{ event: "status", data: { run_id: id, status: "queued" } }]);
    return tx.workflowRun.findUniqueOrThrow({ where: { id } });
  });
  try {
    await deps.workflows.jobs.started(id);
  } catch (e) {
    deps.logger.warn("workflow run start not queued", { workflow_run_id: id, err: String(e) });
  }
  return toWorkflowRunRecord(row, [], secret);
}

/** POST /v1/workflows/{id}/runs: the workflow's current version, pinned. */
export async function startWorkflowRun(
  deps: WorkflowsDeps,
  p: Principal,
  workflowId: string,
  input: StartInput,
): Promise<WorkflowRunRecord> {
  const w = await loadWorkflow(deps, p, workflowId);
  const v = await currentVersion(deps, w);
  if (w.status !== "active") {
    // inputs first (422 before 409)
    const problems = inputsProblems(v.inputsSchema, input.inputs ?? {}, "body.inputs");
    if (problems.length > 0) throw detailsError(problems);
    throw new CoreError("INVALID_STATE", "The workflow is archived; set status active to start runs.", {
      current_state: w.status,
    });
  }
  return startRun(
    deps,
    p,
    { workflowId: w.id, version: v.version, definition: v.definition, inputsSchema: v.inputsSchema },
    input,
  );
}

/** POST /v1/workflows/runs: an inline definition, not saved. */
export async function startAdHocRun(
  deps: WorkflowsDeps,
  p: Principal,
  input: StartInput & { definition: unknown; inputs_schema?: Record<string, unknown> },
): Promise<WorkflowRunRecord> {
  return startRun(
    deps,
    p,
    {
      workflowId: null,
      version: null,
      definition: input.definition as Definition,
      inputsSchema: input.inputs_schema ?? null,
    },
    input,
  );
}

export type StepStatus = "pending" | "running" | "awaiting_human" | "succeeded" | "failed" | "skipped" | "cancelled";

export interface StepState {
  id: string;
  type: string;
  status: StepStatus;
  output: unknown;
  error: unknown;
  run_id: string | null;
  started_at: string | null;
  finished_at: string | null;
}

export interface WorkflowRunRecord {
  object: "workflow.run";
  id: string;
  status: WorkflowRunStatus;
  workflow_id: string | null;
  workflow_version: number | null;
  machine_id: string | null;
  inputs: Record<string, unknown>;
  output: unknown;
  error: { code: string; message: string } | null;
  awaiting_human_reason: string | null;
  awaiting_step_id: string | null;
  awaiting_run_id: string | null;
  iterations_used: number;
  max_iterations: number;
  spent_cents: number;
  budget_cents: number;
  deadline_at: string;
  webhook_url: string | null;
  webhook_secret: string | null;
  metadata: Record<string, string>;
  usage: { credits_charged: number; cost_cents: number };
  steps: StepState[];
  definition: unknown;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toWorkflowRunRecord(
  r: WorkflowRun,
  stepRows: WorkflowRunStep[],
  secret: string | null = null,
): WorkflowRunRecord {
  const rows = new Map(stepRows.map((s) => [s.stepId, s]));
  const steps = flattenSteps(((r.definition as unknown as Definition).steps ?? []) as Step[]).map((s) => {
    const row = rows.get(s.id);
    return {
      id: s.id,
      type: s.type,
      status: (row?.status ?? "pending") as StepStatus,
      output: row?.output ?? null,
      error: row?.error ?? null,
      run_id: row?.childRunId ?? null,
      started_at: iso(row?.startedAt ?? null),
      finished_at: iso(row?.finishedAt ?? null),
    };
  });
  return {
    object: "workflow.run",
    id: r.id,
    status: r.status as WorkflowRunStatus,
    workflow_id: r.workflowId,
    workflow_version: r.workflowVersion,
    machine_id: r.machineId,
    inputs: (r.inputs ?? {}) as Record<string, unknown>,
    output: r.output ?? null,
    error: (r.error as { code: string; message: string } | null) ?? null,
    awaiting_human_reason: r.awaitingHumanReason,
    awaiting_step_id: r.awaitingStepId,
    // the task run that waits for a human when the wait is a task step's (child-runs.ts), else null
    awaiting_run_id:
      r.status === "awaiting_human" && r.awaitingStepId
        ? (steps.find((x) => x.id === r.awaitingStepId && x.type === "task")?.run_id ?? null)
        : null,
    iterations_used: r.iterationsUsed,
    max_iterations: r.maxIterations,
    spent_cents: r.spentCents,
    budget_cents: r.budgetCents,
    deadline_at: r.deadlineAt.toISOString(),
    webhook_url: r.webhookUrl,
    webhook_secret: secret,
    metadata: (r.metadata ?? {}) as Record<string, string>,
    usage: { credits_charged: r.spentCents, cost_cents: r.spentCents },
    steps,
    definition: r.definition,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
  };
}

export async function loadWorkflowRun(deps: Pick<CoreDeps, "db">, p: Principal, id: string): Promise<WorkflowRun> {
  if (!WELL_FORMED_ID.test(id)) throw new CoreError("WORKFLOW_RUN_NOT_FOUND", "The workflow run does not exist.");
  const r = await deps.db.workflowRun.findFirst({ where: { id, accountId: p.accountId, mode: p.mode } });
  if (!r) throw new CoreError("WORKFLOW_RUN_NOT_FOUND", "The workflow run does not exist.");
  return r;
}

export async function workflowRunRecord(deps: Pick<CoreDeps, "db">, r: WorkflowRun): Promise<WorkflowRunRecord> {
  const steps = await deps.db.workflowRunStep.findMany({ where: { runId: r.id } });
  return toWorkflowRunRecord(r, steps);
}

export async function getWorkflowRun(deps: Pick<CoreDeps, "db">, p: Principal, id: string) {
  return workflowRunRecord(deps, await loadWorkflowRun(deps, p, id));
}

export async function listWorkflowRuns(
  deps: Pick<CoreDeps, "db">,
  p: Principal,
  q: { status?: string; workflow_id?: string; limit?: string | number; cursor?: string },
): Promise<ListBody<WorkflowRunRecord>> {
  if (q.status !== undefined && !(WORKFLOW_RUN_STATUSES as readonly string[]).includes(q.status))
    throw invalidStatusFilter(q.status, WORKFLOW_RUN_STATUSES);
  const limit = parseListLimit(q.limit);
  const cur = q.cursor !== undefined ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.workflowRun.findMany({
    where: {
      accountId: p.accountId,
      mode: p.mode,
      ...(q.status ? { status: q.status } : {}),
      ...(q.workflow_id ? { workflowId: WELL_FORMED_ID.test(q.workflow_id) ? q.workflow_id : "-" } : {}),
      ...pageAfter(cur),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const steps = page.length
    ? await deps.db.workflowRunStep.findMany({ where: { runId: { in: page.map((r) => r.id) } } })
    : [];
  const hasMore = rows.length > limit;
  return listBody(
    page.map((r) =>
      toWorkflowRunRecord(
        r,
        steps.filter((s) => s.runId === r.id),
      ),
    ),
    { has_more: hasMore, next_cursor: hasMore ? nextCursorOf(page.at(-1)!) : null },
  );
}

/** Cancels the task runs a workflow run started that are still active (cancel, failure, deadline). */
export async function cancelChildRuns(deps: WorkflowsDeps, run: WorkflowRun): Promise<void> {
  const rows = await deps.db.workflowRunStep.findMany({
    where: { runId: run.id, childRunId: { not: null } },
    select: { childRunId: true },
  });
  const principal = { accountId: run.accountId, mode: run.mode };
  for (const { childRunId } of rows) {
    const child = await deps.db.run.findUnique({ where: { id: childRunId! }, select: { status: true } });
    if (!child || isTerminal(child.status)) continue;
    try {
      await cancelRun(deps, principal, childRunId!);
    } catch (e) {
      if (!(e instanceof CoreError && e.code === "INVALID_STATE")) throw e;
    }
  }
}

/** Moves an active workflow run to a terminal state once (terminal frame); null when it was terminal. */
export async function finishWorkflowRunInTx(
  tx: Tx,
  runId: string,
  to: "succeeded" | "failed" | "cancelled" | "timed_out",
  outcome: { output?: unknown; error?: { code: string; message: string; step_id?: string } | null },
  now: Date,
  deliveries: string[] = [],
): Promise<WorkflowRun | null> {
  const upd = await tx.workflowRun.updateMany({
    where: { id: runId, status: { in: [...ACTIVE] } },
    data: {
      status: to,
      finishedAt: now,
      output: outcome.output === undefined || outcome.output === null ? undefined : (outcome.output as object),
      error: outcome.error ? (outcome.error as object) : undefined,
      awaitingHumanReason: null,
      awaitingStepId: null,
    },
  });
  if (upd.count === 0) return null;
  // steps left open (containers around the step that ended the run, cancelled branches) end with the run
  await tx.workflowRunStep.updateMany({
    where: { runId, status: { in: ["running", "awaiting_human"] } },
    data: { status: to === "succeeded" ? "succeeded" : to === "failed" ? "failed" : "cancelled", finishedAt: now },
  });
  await appendWorkflowEvents(tx, runId, [
    { event: "status", data: { run_id: runId, status: to } },
    {
      event: "terminal",
      data: { run_id: runId, status: to, output: outcome.output ?? null, error: outcome.error ?? null },
    },
  ]);
  const after = await tx.workflowRun.findUniqueOrThrow({ where: { id: runId } });
  const d = await queueWorkflowCallback(
    tx,
    after,
    `workflow.${to === "timed_out" ? "failed" : to}`,
    `workflow.${to}`,
    now,
  );
  if (d) deliveries.push(d);
  return after;
}

/** Hands queued callback deliveries to the executor (after their transaction committed). */
export async function sendCallbacks(deps: WorkflowsDeps, deliveries: string[]): Promise<void> {
  for (const id of deliveries) {
    try {
      await deps.workflows.jobs.callback(id);
    } catch (e) {
      deps.logger.warn("workflow callback not queued", { delivery_id: id, err: String(e) });
    }
  }
}

/** POST /v1/workflows/runs/{id}/cancel: any active state -> cancelled; running task runs are cancelled too. */
export async function cancelWorkflowRun(deps: WorkflowsDeps, p: Principal, id: string): Promise<WorkflowRunRecord> {
  const seen = await loadWorkflowRun(deps, p, id);
  const deliveries: string[] = [];
  const after = await deps.db.$transaction((tx) =>
    finishWorkflowRunInTx(tx, id, "cancelled", { error: null }, deps.clock.now(), deliveries),
  );
  await sendCallbacks(deps, deliveries);
  if (!after) {
    const now = await loadWorkflowRun(deps, p, id);
    throw new CoreError("INVALID_STATE", `The workflow run is ${now.status}; a terminal run cannot be cancelled.`, {
      current_state: now.status,
      allowed_from: [...ACTIVE],
    });
  }
  await cancelChildRuns(deps, seen);
  try {
    await deps.workflows.jobs.cancelled(id);
  } catch (e) {
    deps.logger.warn("workflow cancellation event not sent", { workflow_run_id: id, err: String(e) });
  }
  return workflowRunRecord(deps, after);
}

/**
 * The workflow run waits because its task step's task run waits for a human (child-runs.ts): the answer goes
 * to that task run. approved: it is resumed with the note (POST /v1/runs/{id}/resume; its transaction moves
 * the workflow run back to running). Rejected: the decision is kept on the step and the task run is
 * cancelled; the step then fails with APPROVAL_REJECTED (engine.ts checkTaskStep). Racing answers: the task
 * run's own rules (409 RESUME_CONFLICT or NOT_AWAITING_HUMAN).
 */
async function answerTaskStep(
  deps: WorkflowsDeps,
  run: WorkflowRun,
  stepId: string,
  childRunId: string,
  approved: boolean,
  note: string | null,
): Promise<void> {
  const principal = { accountId: run.accountId, mode: run.mode };
  if (approved) {
    await resumeRun(deps, principal, childRunId, note);
    return;
  }
  const child = await deps.db.run.findUnique({ where: { id: childRunId }, select: { status: true } });
  if (child?.status !== "awaiting_human")
    throw new CoreError("NOT_AWAITING_HUMAN", `The task run of step "${stepId}" is ${child?.status ?? "gone"}.`, {
      current_state: run.status,
      allowed_from: ["awaiting_human"],
    });
  await deps.db.workflowRunStep.updateMany({
    where: { runId: run.id, stepId, childRunId },
    data: { decision: { approved: false, note } },
  });
  try {
    await cancelRun(deps, principal, childRunId);
  } catch (e) {
    if (e instanceof CoreError && e.code === "INVALID_STATE")
      throw new CoreError("RESUME_CONFLICT", "The task run ended before the answer arrived.", {
        current_state: run.status,
      });
    throw e;
  }
}

/**
 * POST /v1/workflows/runs/{id}/resume {approved, note?}: answers the pending human_approval (awaiting_human
 * -> running). `approved: false` rejects it: the run then fails with APPROVAL_REJECTED. Another state: 409
 * NOT_AWAITING_HUMAN; of racing answers one wins and the others get 409 RESUME_CONFLICT.
 */
export async function resumeWorkflowRun(
  deps: WorkflowsDeps,
  p: Principal,
  id: string,
  approved: boolean,
  note: string | null,
): Promise<WorkflowRunRecord> {
  const seen = await loadWorkflowRun(deps, p, id);
  const notAwaiting = (status: string) =>
    new CoreError("NOT_AWAITING_HUMAN", `The workflow run is ${status}; only a run awaiting a human can be resumed.`, {
      current_state: status,
      allowed_from: ["awaiting_human"],
    });
  if (seen.status !== "awaiting_human" || !seen.awaitingStepId) throw notAwaiting(seen.status);
  const stepId = seen.awaitingStepId;
  const waiting = await deps.db.workflowRunStep.findUnique({ where: { runId_stepId: { runId: id, stepId } } });
  if (waiting?.type === "task" && waiting.childRunId) {
    await answerTaskStep(deps, seen, stepId, waiting.childRunId, approved, note);
    return workflowRunRecord(deps, await loadWorkflowRun(deps, p, id));
  }
  const after = await deps.db.$transaction(async (tx) => {
    const upd = await tx.workflowRun.updateMany({
      where: { id, status: "awaiting_human", resumeCount: seen.resumeCount },
      data: { status: "running", awaitingHumanReason: null, awaitingStepId: null, resumeCount: { increment: 1 } },
    });
    if (upd.count === 0) return null;
    await tx.workflowRunStep.update({
      where: { runId_stepId: { runId: id, stepId } },
      data: { decision: { approved, note } },
    });
    await appendWorkflowEvents(tx, id, [
      { event: "status", data: { run_id: id, status: "running", note } },
      { event: "resumed", data: { run_id: id, step_id: stepId, approved, note } },
    ]);
    return tx.workflowRun.findUniqueOrThrow({ where: { id } });
  });
  if (!after) {
    const now = await loadWorkflowRun(deps, p, id);
    if (now.resumeCount > seen.resumeCount)
      throw new CoreError("RESUME_CONFLICT", "Another answer to this approval won the race.", {
        current_state: now.status,
      });
    throw notAwaiting(now.status);
  }
  try {
    await deps.workflows.jobs.resumed(id, after.resumeCount);
  } catch (e) {
    // the function re-reads the decision while it waits, so a lost event only delays it
    deps.logger.warn("workflow resume event not sent", { workflow_run_id: id, err: String(e) });
  }
  return workflowRunRecord(deps, after);
}
