// The executor side of the SDK protocol (docs/SDK_SPEC.md in inngest/inngest), as JS SDK 4.24
// speaks it: the Call Request body we POST, and what the SDK's answer means.
import type { EventPayload, SerializedError, StepRecord } from "../store/store.ts";

/** Op codes this executor understands in a 206 response. Anything else fails the run loudly. */
export const SUPPORTED_OPS = [
  "StepRun",
  "Step",
  "StepPlanned",
  "StepError",
  "StepFailed",
  "StepNotFound",
  "Sleep",
  "WaitForEvent",
  "InvokeFunction",
  "RunComplete",
] as const;
export type SupportedOp = (typeof SUPPORTED_OPS)[number];

export const isSupportedOp = (op: string): op is SupportedOp => (SUPPORTED_OPS as readonly string[]).includes(op);

/** One op of a 206 response (SDK_SPEC 5.1.1). */
export interface OutgoingOp {
  id: string;
  op: string;
  /** Sleep: the duration or ISO date; WaitForEvent: the event name (JS SDK 4.24 puts them here) */
  name?: string;
  displayName?: string;
  opts?: Record<string, unknown>;
  data?: unknown;
  error?: unknown;
  userland?: { id?: string; index?: number };
}

export type CallResult =
  /** 200: the function returned */
  | { kind: "completed"; data: unknown }
  /** 206: steps to memoize, plan or wait on */
  | { kind: "ops"; ops: OutgoingOp[]; retryAfterMs?: number; version: number | null }
  /** the function (or the call) failed */
  | { kind: "error"; error: SerializedError; retriable: boolean; retryAfterMs?: number; status: number };

export class UnsupportedOpError extends Error {
  override name = "UnsupportedOpError";
}

export interface CallBodyInput {
  runId: string;
  event: EventPayload;
  steps: StepRecord[];
  attempt: number;
  maxAttempts: number;
  disableImmediateExecution: boolean;
}

/** The Call Request body (SDK_SPEC 4.4.1): memoized steps keyed by hashed id, ctx.stack in completion order. */
export function buildCallBody(input: CallBodyInput): Record<string, unknown> {
  const ordered = [...input.steps].sort((a, b) => a.seq - b.seq);
  const steps: Record<string, unknown> = {};
  for (const s of ordered) steps[s.stepId] = s.error ? { error: s.error } : { data: s.data ?? null };
  const stack = ordered.map((s) => s.stepId);
  return {
    event: input.event,
    events: [input.event],
    steps,
    ctx: {
      run_id: input.runId,
      attempt: input.attempt,
      max_attempts: input.maxAttempts,
      disable_immediate_execution: input.disableImmediateExecution,
      use_api: false,
      stack: { stack, current: stack.length },
    },
  };
}

export function toSerializedError(v: unknown, fallbackMessage: string): SerializedError {
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    const name = typeof o.name === "string" && o.name ? o.name : "Error";
    const message =
      typeof o.message === "string" && o.message
        ? o.message
        : typeof o.error === "string" && o.error
          ? o.error
          : fallbackMessage;
    const out: SerializedError = { name, message };
    if (typeof o.stack === "string") out.stack = o.stack;
    if (o.cause !== undefined) out.cause = o.cause;
    return out;
  }
  if (typeof v === "string" && v) return { name: "Error", message: v };
  return { name: "Error", message: fallbackMessage };
}

/** Interpret the SDK's HTTP answer. */
export async function parseCallResponse(
  res: Response,
  retryAfterMs: (v: string | null) => number | undefined,
): Promise<CallResult> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    body = text;
  }
  const retryAfter = retryAfterMs(res.headers.get("retry-after"));
  const versionHeader = res.headers.get("x-inngest-req-version");
  const version = versionHeader && Number.isFinite(Number(versionHeader)) ? Number(versionHeader) : null;
  if (res.status === 200) return { kind: "completed", data: body ?? null };
  if (res.status === 206) {
    const ops = Array.isArray(body) ? body : body && typeof body === "object" ? [body] : null;
    if (!ops || ops.some((o) => !o || typeof o !== "object" || typeof (o as OutgoingOp).op !== "string")) {
      return {
        kind: "error",
        error: {
          name: "ProtocolError",
          message: `executor: unreadable 206 response from the SDK: ${text.slice(0, 500)}`,
        },
        retriable: false,
        status: res.status,
      };
    }
    return {
      kind: "ops",
      ops: ops as OutgoingOp[],
      ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
      version,
    };
  }
  const noRetry = res.headers.get("x-inngest-no-retry") === "true";
  const error =
    res.status === 401
      ? {
          name: "SignatureError",
          message: `executor: the SDK refused the request signature (HTTP 401): ${text.slice(0, 200)}`,
        }
      : toSerializedError(body, `SDK answered HTTP ${res.status}`);
  // 401 means our signature was refused: retrying cannot help, so it fails loudly.
  const retriable = !noRetry && res.status !== 401 && res.status !== 400;
  return {
    kind: "error",
    error,
    retriable,
    status: res.status,
    ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
  };
}
