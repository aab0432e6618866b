// The Run resource (SPEC.md "Run"; DECISIONS.md "Runs") and the row -> record mapping.

import { CoreError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import type { Run, RunCallbackDelivery } from "@cua/db/generated";
import type { KeyMode } from "../keys/scopes.ts";

export const RUN_STATUSES = [
  "queued",
  "running",
  "awaiting_human",
  "succeeded",
  "failed",
  "cancelled",
  "timed_out",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_STATUSES: readonly RunStatus[] = ["succeeded", "failed", "cancelled", "timed_out"];
export const ACTIVE_STATUSES: readonly RunStatus[] = ["queued", "running", "awaiting_human"];
export const ON_AWAITING_HUMAN = ["pause", "fail", "cancel"] as const;
export type OnAwaitingHuman = (typeof ON_AWAITING_HUMAN)[number];

export const MAX_STEPS_LIMIT = 1000;
export const MAX_ITERATIONS_LIMIT = 1000;
export const DEFAULT_MAX_STEPS = 50;

export const isTerminal = (s: string): boolean => (TERMINAL_STATUSES as readonly string[]).includes(s);
export const isRunStatus = (s: string): s is RunStatus => (RUN_STATUSES as readonly string[]).includes(s);

/** max_iterations when the caller gives none: twice max_steps (pauses and stalls count), at most 1000. */
export const defaultMaxIterations = (maxSteps: number): number => Math.min(MAX_ITERATIONS_LIMIT, maxSteps * 2);

const RUN_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

export function newRunId(mode: KeyMode): string {
  return mode === "test" ? `run_test_${hex(12)}` : `run_${hex(12)}`;
}

/** 400 INVALID_RUN_ID outside [A-Za-z0-9_-]{1,128} (DECISIONS "Cross-cutting rules"). */
export function checkRunId(id: string): string {
  if (!RUN_ID_RE.test(id)) throw new CoreError("INVALID_RUN_ID");
  return id;
}

export const isValidRunId = (id: string): boolean => RUN_ID_RE.test(id);

/** A run error (the `error` field): a stable code and a human message. */
export interface RunError {
  code: string;
  message: string;
  [k: string]: unknown;
}

export interface CallbackAttempt {
  attempt: number;
  at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

export interface CallbackRecord {
  id: string;
  event: string;
  status: "pending" | "delivered" | "failed";
  attempts: CallbackAttempt[];
  created_at: string;
  delivered_at: string | null;
}

/** `result` of a terminal run (DECISIONS.md "Compatibility amendments": runs), plus the service's own fields. */
export interface RunResult {
  passed: boolean;
  status: RunStatus;
  summary: string;
  verdict?: string;
  /** the agent's last reasoning (succeeded runs) */
  reasoning?: string;
  /** completed steps */
  steps?: number;
  [k: string]: unknown;
}

export interface RunRecord {
  /** always "agent.run" */
  object: "agent.run";
  id: string;
  status: RunStatus;
  machine_id: string;
  task: string;
  instructions: string | null;
  system_prompt: string | null;
  metadata: Record<string, string>;
  cua_version: string;
  max_steps: number;
  max_iterations: number;
  on_awaiting_human: OnAwaitingHuman;
  awaiting_human_timeout_seconds: number | null;
  budget_cents: number;
  webhook_url: string | null;
  webhook_secret: string | null;
  step_count: number;
  /** = step_count (the commercial contract's name) */
  steps_completed: number;
  iteration_count: number;
  awaiting_human_reason: string | null;
  awaiting_human_since: string | null;
  result: RunResult | null;
  error: RunError | null;
  usage: { credits_charged: number; cost_cents: number };
  /** = usage.credits_charged */
  credits_charged: number;
  /** = usage.cost_cents */
  cost_cents: number;
  llm: { provider: string; model: string | null; billed_to: "platform" | "provider" };
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  deadline_at: string;
  callbacks: CallbackRecord[];
}

export function toCallbackRecord(d: RunCallbackDelivery): CallbackRecord {
  return {
    id: d.id,
    event: d.event,
    status: d.status as CallbackRecord["status"],
    attempts: (d.attempts ?? []) as unknown as CallbackAttempt[],
    created_at: d.createdAt.toISOString(),
    delivered_at: d.deliveredAt?.toISOString() ?? null,
  };
}

/** The public record. webhook_secret is null except in the create response (and its exact replay). */
/**
 * The `result` of a terminal run: `{passed, status, summary, verdict?}` plus the stored outcome's own fields
 * (reasoning, steps). Null while the run is active.
 */
export function runResultOf(r: Pick<Run, "status" | "result" | "error" | "stepCount">): RunResult | null {
  if (!isTerminal(r.status)) return null;
  const stored = (r.result ?? null) as Record<string, unknown> | null;
  const error = (r.error ?? null) as RunError | null;
  const passed = r.status === "succeeded";
  const reasoning = typeof stored?.reasoning === "string" ? stored.reasoning : undefined;
  const summary = passed
    ? reasoning || "The task was completed."
    : (error?.message ?? `The run ended ${r.status.replace("_", " ")}.`);
  return {
    ...(stored ?? {}),
    passed,
    status: r.status as RunStatus,
    summary,
    verdict: passed ? "pass" : "fail",
    steps: typeof stored?.steps === "number" ? stored.steps : r.stepCount,
  };
}

export function toRunRecord(
  r: Run,
  deliveries: RunCallbackDelivery[] = [],
  webhookSecret: string | null = null,
): RunRecord {
  return {
    object: "agent.run",
    id: r.id,
    status: r.status as RunStatus,
    machine_id: r.machineId,
    task: r.task,
    instructions: r.instructions,
    system_prompt: r.systemPrompt,
    metadata: (r.metadata ?? {}) as Record<string, string>,
    cua_version: r.cuaVersion,
    max_steps: r.maxSteps,
    max_iterations: r.maxIterations,
    on_awaiting_human: r.onAwaitingHuman as OnAwaitingHuman,
    awaiting_human_timeout_seconds: r.awaitingHumanTimeoutSeconds,
    budget_cents: r.budgetCents,
    webhook_url: r.webhookUrl,
    webhook_secret: webhookSecret,
    step_count: r.stepCount,
    steps_completed: r.stepCount,
    iteration_count: r.iterationCount,
    awaiting_human_reason: r.awaitingHumanReason,
    awaiting_human_since: r.awaitingHumanSince?.toISOString() ?? null,
    result: runResultOf(r),
    error: (r.error ?? null) as RunError | null,
    usage: { credits_charged: r.creditsCharged, cost_cents: r.creditsCharged },
    credits_charged: r.creditsCharged,
    cost_cents: r.creditsCharged,
    llm: {
      provider: r.llmProvider,
      model: r.llmModel,
      billed_to: r.llmProvider === "managed" ? "platform" : "provider",
    },
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
    started_at: r.startedAt?.toISOString() ?? null,
    finished_at: r.finishedAt?.toISOString() ?? null,
    deadline_at: r.deadlineAt.toISOString(),
    callbacks: [...deliveries].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()).map(toCallbackRecord),
  };
}
