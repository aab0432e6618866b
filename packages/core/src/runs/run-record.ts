// The Run resource (SPEC.md "Run"; DECISIONS.md "Runs") and the row -> record mapping.
import type { Run, RunCallbackDelivery } from "@cua/db/generated";
import { CoreError } from "../errors.ts";
import { hex } from "../ids.ts";
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

export interface RunRecord {
  id: string;
  status: RunStatus;
  machine_id: string;
  task: string;
  cua_version: string;
  max_steps: number;
  max_iterations: number;
  on_awaiting_human: OnAwaitingHuman;
  budget_cents: number;
  webhook_url: string | null;
  webhook_secret: string | null;
  step_count: number;
  iteration_count: number;
  awaiting_human_reason: string | null;
  result: unknown;
  error: RunError | null;
  usage: { credits_charged: number; cost_cents: number };
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
export function toRunRecord(
  r: Run,
  deliveries: RunCallbackDelivery[] = [],
  webhookSecret: string | null = null,
): RunRecord {
  return {
    id: r.id,
    status: r.status as RunStatus,
    machine_id: r.machineId,
    task: r.task,
    cua_version: r.cuaVersion,
    max_steps: r.maxSteps,
    max_iterations: r.maxIterations,
    on_awaiting_human: r.onAwaitingHuman as OnAwaitingHuman,
    budget_cents: r.budgetCents,
    webhook_url: r.webhookUrl,
    webhook_secret: webhookSecret,
    step_count: r.stepCount,
    iteration_count: r.iterationCount,
    awaiting_human_reason: r.awaitingHumanReason,
    result: r.result ?? null,
    error: (r.error ?? null) as RunError | null,
    usage: { credits_charged: r.creditsCharged, cost_cents: r.creditsCharged },
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
