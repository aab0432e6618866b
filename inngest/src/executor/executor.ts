// The embedded durable executor: plays the Inngest server's part for the app's own Inngest
// functions, driving the SDK's unmodified serve() handler over the SDK protocol, with all state in
// the service's database. See docs/executor.md for the model; production uses a real Inngest server.
//
// Work is a queue of leased items (store.ts). A worker claims due items, calls the SDK, and commits
// what the SDK answered in ONE transaction that also finishes the item, under the run's row lock:
// a step result is committed before it counts as done, and a committed step is never planned or run
// again. A worker that dies leaves its leases to expire; another worker (or the restarted process)
// takes the item over. The window that remains is inherent to any executor: a step whose body ran
// but whose result was not yet committed runs again (at least once), never after its commit.
import { randomBytes } from "node:crypto";
import type { Inngest, InngestFunction } from "inngest";
import { nextCronTime, parseCron } from "./cron.ts";
import { isIsoDate, parseDuration, parseRetryAfter, resolveInstant } from "./duration.ts";
import { compileExpression, ExpressionError, expressionMatches } from "./expression.ts";
import { ulid } from "./ids.ts";
import {
  buildCallBody,
  type CallResult,
  isSupportedOp,
  type OutgoingOp,
  parseCallResponse,
  toSerializedError,
  UnsupportedOpError,
} from "./protocol.ts";
import { createSdkHandler, type SdkHandler } from "./sdk-handler.ts";
import {
  type EventPayload,
  type ExecutorStore,
  type FunctionConfig,
  type FunctionRecord,
  isActiveStatus,
  type QueueItem,
  type RunFilter,
  type RunRecord,
  type SerializedError,
  type StepRecord,
  StoreDataError,
  type StoreTx,
} from "./store.ts";

export const INTERNAL_EVENTS = {
  FunctionFailed: "inngest/function.failed",
  FunctionFinished: "inngest/function.finished",
  FunctionCancelled: "inngest/function.cancelled",
  FunctionInvoked: "inngest/function.invoked",
  ScheduledTimer: "inngest/scheduled.timer",
} as const;

/** Function options this executor does not implement: a function using one is refused at start(). */
export const UNSUPPORTED_FUNCTION_OPTIONS = [
  "batchEvents",
  "rateLimit",
  "throttle",
  "concurrency",
  "debounce",
  "priority",
  "timeouts",
  "singleton",
  "idempotency",
] as const;

export interface ExecutorLogger {
  debug(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
  warn(msg: string, extra?: Record<string, unknown>): void;
  error(msg: string, extra?: Record<string, unknown>): void;
}

export interface ExecutorOptions {
  /** the app's Inngest client (the one the functions were created with) */
  client: Inngest.Any;
  functions: InngestFunction.Any[];
  store: ExecutorStore;
  /** lease owner name; defaults to a random id per executor */
  workerId?: string;
  /** items processed at once (default 8) */
  concurrency?: number;
  /** longest idle wait between polls when nothing is due (default 250 ms) */
  pollIntervalMs?: number;
  /** lease length; heartbeats renew it every third of it while a call runs (default 30 s) */
  leaseMs?: number;
  /** delay before retry number `attempt` (1 = first retry), unless the SDK sent Retry-After */
  backoff?: (attempt: number) => number;
  /** key used to sign requests to the in-process handler (default: random per process) */
  signingKey?: string;
  logger?: ExecutorLogger;
  /** clock (tests) */
  now?: () => Date;
}

export interface SendEventInput {
  name: string;
  data?: Record<string, unknown>;
  /** your idempotency id: a second event with the same id triggers nothing */
  id?: string;
  ts?: number;
  v?: string;
  user?: Record<string, unknown>;
}

export interface SendResult {
  /** internal event ids, one per event, in order */
  ids: string[];
  /** runs these events started (triggers), in creation order */
  runIds: string[];
}

export interface RunStepView {
  id: string;
  name: string | null;
  op: string;
  seq: number;
  data: unknown;
  error: SerializedError | null;
  at: Date;
}

export interface RunPendingView {
  kind: "call" | "step" | "sleep" | "wait_timeout" | "event" | "invoke";
  stepId: string | null;
  name: string | null;
  /** when the item is due (sleep wake-up, retry, timeout) */
  at: Date | null;
  attempt?: number;
  eventName?: string | null;
  expression?: string | null;
  childRunId?: string | null;
}

export interface RunView extends RunRecord {
  steps: RunStepView[];
  pending: RunPendingView[];
}

export interface ExecutorHealth {
  ok: boolean;
  running: boolean;
  workerId: string;
  inFlight: number;
  lastPollAt: Date | null;
  lastError: string | null;
}

export interface Executor {
  /** the app's client re-pointed at this executor: `executor.client.send()` triggers functions here */
  readonly client: Inngest.Any;
  readonly workerId: string;
  /** sync the functions (in-band), record them, and start leasing due work */
  start(): Promise<void>;
  /** stop leasing; wait for calls in flight (up to timeoutMs), then give remaining leases back */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
  send(events: SendEventInput | SendEventInput[]): Promise<SendResult>;
  /** cancel an active run; false when it is unknown or already ended */
  cancel(runId: string, reason?: string): Promise<boolean>;
  getRun(runId: string): Promise<RunView | null>;
  listRuns(filter?: RunFilter): Promise<RunRecord[]>;
  /** resolve once the run is completed, failed or cancelled */
  waitForRun(runId: string, opts?: { timeoutMs?: number; pollMs?: number }): Promise<RunView>;
  health(): Promise<ExecutorHealth>;
  /** delete runs (with their steps) that ended before `before`, and events received before it */
  prune(before: Date): Promise<{ runs: number; events: number }>;
}

class LeaseLostError extends Error {
  override name = "LeaseLostError";
}

const consoleLogger: ExecutorLogger = {
  debug: () => {},
  info: () => {},
  warn: (m, e) => console.warn(`[executor] ${m}`, e ?? ""),
  error: (m, e) => console.error(`[executor] ${m}`, e ?? ""),
};

/** Inngest-like exponential backoff with jitter: ~1 s, 2 s, 4 s ... capped at 5 min. */
export function defaultBackoff(attempt: number): number {
  const base = Math.min(1000 * 2 ** Math.max(0, attempt - 1), 300_000);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** The SDK reports `retries` (default 3) as steps.step.retries.attempts; attempts = retries + 1. */
export function maxAttemptsOf(config: FunctionConfig): number {
  const retries = config.steps?.step?.retries?.attempts;
  return (typeof retries === "number" && retries >= 0 ? retries : 3) + 1;
}

/** Refuse, loudly, function configs whose semantics this executor would silently get wrong. */
export function validateFunctionConfig(config: FunctionConfig): void {
  for (const key of UNSUPPORTED_FUNCTION_OPTIONS) {
    if (config[key] !== undefined && config[key] !== null) {
      throw new Error(
        `executor: function "${config.id}" uses "${key}", which the embedded executor does not implement`,
      );
    }
  }
  for (const t of config.triggers ?? []) {
    if (t.cron !== undefined) {
      if (typeof t.cron !== "string") throw new Error(`executor: function "${config.id}" has an invalid cron trigger`);
      parseCron(t.cron);
      if (typeof t.jitter === "string" && t.jitter) parseDuration(t.jitter);
      continue;
    }
    if (typeof t.event !== "string")
      throw new Error(`executor: function "${config.id}" has a trigger without an event name`);
    if (t.expression) compileExpression(t.expression);
  }
  for (const c of config.cancel ?? []) {
    if (c.if) compileExpression(c.if);
    if (c.timeout && !isIsoDate(c.timeout)) parseDuration(c.timeout);
  }
}

/** An event trigger matches its event name exactly, or by prefix when it ends in "*" ("app/*"). */
export function triggerMatchesName(trigger: string, name: string): boolean {
  return trigger.endsWith("*") ? name.startsWith(trigger.slice(0, -1)) : trigger === name;
}

const keys = {
  call: (runId: string) => `${runId}:call`,
  step: (runId: string, stepId: string) => `${runId}:step:${stepId}`,
  sleep: (runId: string, stepId: string) => `${runId}:sleep:${stepId}`,
  timeout: (runId: string, stepId: string) => `${runId}:timeout:${stepId}`,
  cron: (functionId: string, cron: string) => `cron:${functionId}:${cron}`,
};

function opName(op: OutgoingOp): string | null {
  return (
    op.displayName ?? op.userland?.id ?? (op.op === "StepRun" || op.op === "StepPlanned" ? (op.name ?? null) : null)
  );
}

export function createExecutor(options: ExecutorOptions): Executor {
  const store = options.store;
  const log = options.logger ?? consoleLogger;
  const now = options.now ?? (() => new Date());
  const workerId = options.workerId ?? `worker-${randomBytes(6).toString("hex")}`;
  const concurrency = options.concurrency ?? 8;
  const pollIntervalMs = options.pollIntervalMs ?? 250;
  const leaseMs = options.leaseMs ?? 30_000;
  const backoff = options.backoff ?? defaultBackoff;

  const sdk: SdkHandler = createSdkHandler({
    client: options.client,
    functions: options.functions,
    ...(options.signingKey ? { signingKey: options.signingKey } : {}),
    onEvents: (events) => send(events),
  });

  /** the functions this process serves (and therefore claims work for) */
  let served = new Map<string, FunctionRecord>();
  let running = false;
  let stopping = false;
  let loopDone: Promise<void> | null = null;
  let wake: (() => void) | null = null;
  let kicked = false;
  const inFlight = new Map<string, { item: QueueItem; promise: Promise<void>; abandoned: boolean }>();
  let lastPollAt: Date | null = null;
  let lastError: string | null = null;

  function kick(): void {
    kicked = true;
    wake?.();
  }

  // ---------------------------------------------------------------------------------------------
  // Events: waits, cancellations, triggers
  // ---------------------------------------------------------------------------------------------

  function safeMatches(expr: string | null | undefined, vars: Record<string, unknown>): boolean {
    try {
      return expressionMatches(expr, vars);
    } catch (e) {
      log.warn(`expression cannot be evaluated: ${(e as Error).message}`);
      return false;
    }
  }

  function normalizeEvent(input: SendEventInput, internalId: string): EventPayload {
    if (!input || typeof input !== "object") throw new Error("executor: an event must be an object");
    if (typeof input.name !== "string" || input.name.trim() === "") throw new Error("executor: an event needs a name");
    const data = input.data ?? {};
    if (typeof data !== "object" || data === null || Array.isArray(data))
      throw new Error(`executor: event "${input.name}" data must be an object`);
    const event: EventPayload = {
      ...input,
      name: input.name,
      data,
      id: input.id ?? internalId,
      ts: input.ts ?? now().getTime(),
    };
    return event;
  }

  async function ingest(tx: StoreTx, inputs: SendEventInput[]): Promise<SendResult> {
    const ids: string[] = [];
    const runIds: string[] = [];
    const fns = await tx.listFunctions();
    for (const input of inputs) {
      const internalId = ulid();
      const event = normalizeEvent(input, internalId);
      ids.push(internalId);
      const fresh = await tx.insertEvent({
        id: internalId,
        externalId: input.id ?? null,
        name: event.name,
        payload: event,
      });
      if (!fresh) continue;

      // 1. waits (waitForEvent) registered before this event
      for (const w of await tx.waitsForEvent(event.name)) {
        if (!safeMatches(w.expression, { event: w.runEvent, async: event })) continue;
        const run = await tx.lockRun(w.runId);
        if (!run || !isActiveStatus(run.status)) continue;
        if (!(await tx.deleteWait(w.runId, w.stepId))) continue;
        await tx.insertStep(run.id, { stepId: w.stepId, op: "WaitForEvent", name: w.eventName, data: event });
        await tx.deleteItemByKey(keys.timeout(run.id, w.stepId));
        await tx.requestCall(run.id, run.functionId, now(), ulid());
      }

      // 2. cancelOn
      const cancellers = fns.filter((f) => (f.config.cancel ?? []).some((c) => c.event === event.name));
      if (cancellers.length > 0) {
        const byId = new Map(cancellers.map((f) => [f.id, f]));
        for (const run of await tx.activeRunsOf(cancellers.map((f) => f.id))) {
          const rules = (byId.get(run.functionId)?.config.cancel ?? []).filter((c) => c.event === event.name);
          const hit = rules.some((c) => {
            if (c.timeout) {
              const until = isIsoDate(c.timeout)
                ? new Date(c.timeout)
                : new Date(run.createdAt.getTime() + parseDuration(c.timeout));
              if (now() > until) return false;
            }
            return safeMatches(c.if, { event: run.event, async: event });
          });
          if (!hit) continue;
          const locked = await tx.lockRun(run.id);
          if (locked && isActiveStatus(locked.status))
            await cancelRun(tx, locked, `cancelled by event "${event.name}"`);
        }
      }

      // 3. triggers
      for (const f of fns) {
        const hit = (f.config.triggers ?? []).some(
          (t) =>
            typeof t.event === "string" &&
            triggerMatchesName(t.event, event.name) &&
            safeMatches(t.expression, { event }),
        );
        if (!hit) continue;
        const runId = ulid();
        await tx.createRun({ id: runId, functionId: f.id, event, eventId: internalId });
        await tx.requestCall(runId, f.id, now(), ulid());
        runIds.push(runId);
      }
    }
    return { ids, runIds };
  }

  async function send(events: SendEventInput | SendEventInput[]): Promise<SendResult> {
    const list = Array.isArray(events) ? events : [events];
    if (list.length === 0) return { ids: [], runIds: [] };
    const result = await store.transaction((tx) => ingest(tx, list));
    if (result.runIds.length > 0 || running) kick();
    return result;
  }

  // ---------------------------------------------------------------------------------------------
  // Run endings
  // ---------------------------------------------------------------------------------------------

  async function resolveParent(
    tx: StoreTx,
    child: RunRecord,
    result: { data: unknown } | { error: SerializedError },
  ): Promise<void> {
    if (!child.parentRunId) return;
    const parent = await tx.lockRun(child.parentRunId);
    const wait = await tx.deleteWaitForChild(child.id);
    if (!parent || !wait || !isActiveStatus(parent.status)) return;
    await tx.insertStep(parent.id, { stepId: wait.stepId, op: "InvokeFunction", name: null, ...result });
    await tx.deleteItemByKey(keys.timeout(parent.id, wait.stepId));
    await tx.requestCall(parent.id, parent.functionId, now(), ulid());
  }

  async function completeRun(tx: StoreTx, run: RunRecord, data: unknown): Promise<void> {
    const at = now();
    await tx.updateRun(run.id, {
      status: "completed",
      output: data ?? null,
      endedAt: at,
      ...(run.startedAt ? {} : { startedAt: at }),
    });
    await tx.clearRunWork(run.id);
    await ingest(tx, [
      {
        name: INTERNAL_EVENTS.FunctionFinished,
        data: { function_id: run.functionId, run_id: run.id, event: run.event, result: data ?? null },
      },
    ]);
    await resolveParent(tx, run, { data: data ?? null });
  }

  async function failRun(tx: StoreTx, run: RunRecord, error: SerializedError): Promise<void> {
    const at = now();
    await tx.updateRun(run.id, { status: "failed", error, endedAt: at, ...(run.startedAt ? {} : { startedAt: at }) });
    await tx.clearRunWork(run.id);
    await ingest(tx, [
      {
        name: INTERNAL_EVENTS.FunctionFailed,
        data: { function_id: run.functionId, run_id: run.id, error, event: run.event },
      },
      {
        name: INTERNAL_EVENTS.FunctionFinished,
        data: { function_id: run.functionId, run_id: run.id, event: run.event, error },
      },
    ]);
    await resolveParent(tx, run, { error });
  }

  async function cancelRun(tx: StoreTx, run: RunRecord, reason: string): Promise<void> {
    const error: SerializedError = { name: "FunctionCancelledError", message: reason };
    await tx.updateRun(run.id, { status: "cancelled", error, endedAt: now() });
    await tx.clearRunWork(run.id);
    await ingest(tx, [
      {
        name: INTERNAL_EVENTS.FunctionCancelled,
        data: { function_id: run.functionId, run_id: run.id, event: run.event },
      },
    ]);
    await resolveParent(tx, run, { error });
  }

  // ---------------------------------------------------------------------------------------------
  // Applying an SDK answer
  // ---------------------------------------------------------------------------------------------

  async function markRunning(tx: StoreTx, run: RunRecord): Promise<void> {
    if (run.status === "queued") await tx.updateRun(run.id, { status: "running", startedAt: run.startedAt ?? now() });
  }

  /** Decide whether the item itself is kept for another attempt (function-level or step retry). */
  function retryPlan(
    item: QueueItem,
    result: CallResult,
    maxAttempts: number,
  ): { runAt: Date; attempt: number } | undefined {
    const next = item.attempt + 1;
    if (next >= maxAttempts) return undefined;
    const delay = (r: { retryAfterMs?: number }) => new Date(now().getTime() + (r.retryAfterMs ?? backoff(next)));
    if (result.kind === "error" && result.retriable) return { runAt: delay(result), attempt: next };
    if (result.kind === "ops") {
      if (result.ops.some((o) => o.op === "StepNotFound")) return { runAt: delay(result), attempt: next };
      if (item.kind === "step" && result.ops.some((o) => o.op === "StepError" && o.id === item.stepId)) {
        return { runAt: delay(result), attempt: next };
      }
    }
    return undefined;
  }

  async function applyOps(
    tx: StoreTx,
    run: RunRecord,
    item: QueueItem,
    result: Extract<CallResult, { kind: "ops" }>,
    maxAttempts: number,
    retried: boolean,
  ): Promise<void> {
    const ops = result.ops;
    const unsupported = ops.find((o) => !isSupportedOp(o.op));
    if (unsupported) {
      const err = new UnsupportedOpError(
        `executor: unsupported op "${unsupported.op}" (step "${opName(unsupported) ?? unsupported.id}"); the embedded executor handles ${[
          "StepRun",
          "StepPlanned",
          "StepError",
          "StepFailed",
          "Sleep",
          "WaitForEvent",
          "InvokeFunction",
          "RunComplete",
        ].join(", ")}`,
      );
      await failRun(tx, run, { name: err.name, message: err.message });
      return;
    }
    const notFound = ops.find((o) => o.op === "StepNotFound");
    if (notFound) {
      if (!retried)
        await failRun(tx, run, {
          name: "StepNotFoundError",
          message: `executor: the SDK could not find step ${notFound.id}`,
        });
      return;
    }
    const complete = ops.find((o) => o.op === "RunComplete");

    let committed = false;
    let raceMode = false;
    for (const op of ops) {
      const name = opName(op);
      switch (op.op) {
        case "StepRun":
        case "Step":
          if (await tx.insertStep(run.id, { stepId: op.id, op: "StepRun", name, data: op.data ?? null }))
            committed = true;
          if (op.opts?.parallelMode === "race") raceMode = true;
          break;
        case "StepFailed":
          if (
            await tx.insertStep(run.id, {
              stepId: op.id,
              op: "StepFailed",
              name,
              error: toSerializedError(op.error, "step failed"),
            })
          )
            committed = true;
          if (op.opts?.parallelMode === "race") raceMode = true;
          break;
        case "StepError": {
          if (item.kind === "step" && op.id === item.stepId) {
            if (!retried) {
              // out of attempts although the SDK did not say StepFailed: the error is final
              if (
                await tx.insertStep(run.id, {
                  stepId: op.id,
                  op: "StepFailed",
                  name,
                  error: toSerializedError(op.error, "step failed"),
                })
              )
                committed = true;
            }
            break;
          }
          // a step executed immediately during discovery failed: retry it as its own item
          const attempt = item.attempt + 1;
          if (attempt >= maxAttempts) {
            if (
              await tx.insertStep(run.id, {
                stepId: op.id,
                op: "StepFailed",
                name,
                error: toSerializedError(op.error, "step failed"),
              })
            )
              committed = true;
          } else {
            await tx.enqueue(
              {
                id: ulid(),
                runId: run.id,
                functionId: run.functionId,
                kind: "step",
                stepId: op.id,
                attempt,
                dedupeKey: keys.step(run.id, op.id),
                payload: { name },
                runAt: new Date(now().getTime() + (result.retryAfterMs ?? backoff(attempt))),
              },
              { unlessStepMemoized: true },
            );
          }
          break;
        }
        case "StepPlanned":
          // a stale answer may plan a step that has meanwhile been memoized: never plan it again
          await tx.enqueue(
            {
              id: ulid(),
              runId: run.id,
              functionId: run.functionId,
              kind: "step",
              stepId: op.id,
              dedupeKey: keys.step(run.id, op.id),
              payload: { name, ...(op.opts?.parallelMode ? { parallelMode: op.opts.parallelMode } : {}) },
              runAt: now(),
            },
            { unlessStepMemoized: true },
          );
          break;
        case "Sleep": {
          if (await tx.hasStep(run.id, op.id)) break;
          const spec =
            typeof op.name === "string" ? op.name : typeof op.opts?.duration === "string" ? op.opts.duration : "";
          let until: Date;
          try {
            until = resolveInstant(spec, now());
          } catch (e) {
            await failRun(tx, run, {
              name: "UnsupportedOpError",
              message: `executor: Sleep with unreadable duration "${spec}": ${(e as Error).message}`,
            });
            return;
          }
          await tx.enqueue({
            id: ulid(),
            runId: run.id,
            functionId: run.functionId,
            kind: "sleep",
            stepId: op.id,
            dedupeKey: keys.sleep(run.id, op.id),
            payload: { name: op.displayName ?? null, until: until.toISOString() },
            runAt: until,
          });
          break;
        }
        case "WaitForEvent": {
          if (await tx.hasStep(run.id, op.id)) break;
          const eventName =
            typeof op.name === "string" && op.name ? op.name : typeof op.opts?.event === "string" ? op.opts.event : "";
          const expression = typeof op.opts?.if === "string" && op.opts.if.trim() ? op.opts.if : null;
          const timeout = typeof op.opts?.timeout === "string" ? op.opts.timeout : null;
          let expiresAt: Date | null;
          try {
            if (!eventName) throw new Error("no event name");
            if (expression) compileExpression(expression);
            expiresAt = timeout ? resolveInstant(timeout, now()) : null;
          } catch (e) {
            const why = e instanceof ExpressionError ? e.message : `unreadable WaitForEvent: ${(e as Error).message}`;
            await failRun(tx, run, { name: "UnsupportedOpError", message: `executor: ${why}` });
            return;
          }
          const inserted = await tx.insertWait({
            id: ulid(),
            runId: run.id,
            stepId: op.id,
            kind: "event",
            eventName,
            expression,
            childRunId: null,
            expiresAt,
          });
          if (inserted && expiresAt) {
            await tx.enqueue({
              id: ulid(),
              runId: run.id,
              functionId: run.functionId,
              kind: "wait_timeout",
              stepId: op.id,
              dedupeKey: keys.timeout(run.id, op.id),
              payload: { name: op.displayName ?? null, eventName },
              runAt: expiresAt,
            });
          }
          break;
        }
        case "InvokeFunction": {
          if (await tx.hasStep(run.id, op.id)) break;
          const target = typeof op.opts?.function_id === "string" ? op.opts.function_id : "";
          const payload = (op.opts?.payload ?? {}) as { data?: Record<string, unknown>; v?: string };
          const timeout = typeof op.opts?.timeout === "string" && op.opts.timeout ? op.opts.timeout : null;
          const fns = await tx.listFunctions();
          if (!fns.some((f) => f.id === target)) {
            if (
              await tx.insertStep(run.id, {
                stepId: op.id,
                op: "InvokeFunction",
                name,
                error: {
                  name: "Error",
                  message: `executor: step.invoke target "${target}" is not a registered function`,
                },
              })
            )
              committed = true;
            break;
          }
          const childRunId = ulid();
          const expiresAt = timeout ? resolveInstant(timeout, now()) : null;
          const inserted = await tx.insertWait({
            id: ulid(),
            runId: run.id,
            stepId: op.id,
            kind: "invoke",
            eventName: null,
            expression: null,
            childRunId,
            expiresAt,
          });
          if (!inserted) break;
          const childEventId = ulid();
          const childEvent: EventPayload = {
            name: INTERNAL_EVENTS.FunctionInvoked,
            data: { ...(payload.data ?? {}) },
            id: childEventId,
            ts: now().getTime(),
            ...(payload.v ? { v: payload.v } : {}),
          };
          await tx.insertEvent({ id: childEventId, externalId: null, name: childEvent.name, payload: childEvent });
          await tx.createRun({
            id: childRunId,
            functionId: target,
            event: childEvent,
            eventId: childEventId,
            parentRunId: run.id,
            parentStepId: op.id,
          });
          await tx.requestCall(childRunId, target, now(), ulid());
          if (expiresAt) {
            await tx.enqueue({
              id: ulid(),
              runId: run.id,
              functionId: run.functionId,
              kind: "wait_timeout",
              stepId: op.id,
              dedupeKey: keys.timeout(run.id, op.id),
              payload: { name: op.displayName ?? null, childRunId },
              runAt: expiresAt,
            });
          }
          break;
        }
        case "RunComplete":
          break;
      }
    }

    if (complete) {
      await completeRun(tx, run, complete.data ?? null);
      return;
    }
    if (ops.length > 1 || ops.some((o) => o.op === "StepPlanned")) {
      if (!run.disableImmediateExecution) await tx.updateRun(run.id, { disableImmediateExecution: true });
    }
    if (!committed) return;
    // V2 ("optimize parallelism"): while sibling planned steps are still outstanding, their
    // completion will ask again; races (parallelMode "race") and V1 SDKs want every result now.
    if (item.kind === "step" && result.version !== 1 && !raceMode) {
      if ((await tx.countItems(run.id, "step", item.id)) > 0) return;
    }
    await tx.requestCall(run.id, run.functionId, now(), ulid());
  }

  async function processCall(item: QueueItem, isAbandoned: () => boolean): Promise<void> {
    const run = await store.getRun(item.runId);
    const fn = served.get(item.functionId);
    if (!run || !isActiveStatus(run.status) || !fn) {
      await store.transaction(async (tx) => {
        await tx.finishItem(item.id, workerId, now());
      });
      return;
    }
    const steps: StepRecord[] = await store.listSteps(run.id);
    const maxAttempts = maxAttemptsOf(fn.config);
    const stepId = item.kind === "step" && item.stepId ? item.stepId : "step";
    const body = buildCallBody({
      runId: run.id,
      event: run.event,
      steps,
      attempt: item.attempt,
      maxAttempts,
      disableImmediateExecution: run.disableImmediateExecution,
    });
    let result: CallResult;
    try {
      const res = await sdk.call(run.functionId, stepId, body);
      result = await parseCallResponse(res, (v) => parseRetryAfter(v, now()));
    } catch (e) {
      result = { kind: "error", error: toSerializedError(e, "SDK call failed"), retriable: true, status: 0 };
    }
    if (isAbandoned()) return;
    log.debug("sdk answered", { runId: run.id, item: item.kind, stepId, result: result.kind });

    const again = retryPlan(item, result, maxAttempts);
    await store.transaction(async (tx) => {
      const locked = await tx.lockRun(run.id);
      if (!(await tx.finishItem(item.id, workerId, now(), again))) throw new LeaseLostError(item.id);
      if (!locked || !isActiveStatus(locked.status)) return;
      await markRunning(tx, locked);
      if (result.kind === "completed") {
        await completeRun(tx, locked, result.data);
      } else if (result.kind === "error") {
        if (!again) await failRun(tx, locked, result.error);
      } else {
        await applyOps(tx, locked, item, result, maxAttempts, again !== undefined);
      }
    });
  }

  /** When a cron item fires next: the next matching minute after `after`, plus the trigger's jitter. */
  function nextCronItem(functionId: string, cron: string, jitter: string | null, after: Date) {
    const at = nextCronTime(parseCron(cron), after);
    const jitterMs = jitter ? Math.floor(Math.random() * parseDuration(jitter)) : 0;
    return {
      id: ulid(),
      runId: `cron:${functionId}`,
      functionId,
      kind: "cron" as const,
      dedupeKey: keys.cron(functionId, cron),
      payload: { cron, jitter, scheduledFor: at.toISOString() },
      runAt: new Date(at.getTime() + jitterMs),
    };
  }

  /** A cron tick: start a run with an inngest/scheduled.timer event and schedule the next tick. */
  async function processCron(item: QueueItem): Promise<void> {
    const cron = typeof item.payload?.cron === "string" ? item.payload.cron : "";
    const jitter = typeof item.payload?.jitter === "string" ? item.payload.jitter : null;
    let runId: string | null = null;
    await store.transaction(async (tx) => {
      if (!(await tx.finishItem(item.id, workerId, now()))) throw new LeaseLostError(item.id);
      const fn = (await tx.listFunctions()).find((f) => f.id === item.functionId);
      if (!fn || !(fn.config.triggers ?? []).some((t) => t.cron === cron)) return; // trigger gone
      const eventId = ulid();
      const scheduledFor = typeof item.payload?.scheduledFor === "string" ? Date.parse(item.payload.scheduledFor) : NaN;
      const event: EventPayload = {
        name: INTERNAL_EVENTS.ScheduledTimer,
        data: { cron },
        id: eventId,
        ts: Number.isNaN(scheduledFor) ? now().getTime() : scheduledFor,
      };
      await tx.insertEvent({ id: eventId, externalId: null, name: event.name, payload: event });
      runId = ulid();
      await tx.createRun({ id: runId, functionId: fn.id, event, eventId });
      await tx.requestCall(runId, fn.id, now(), ulid());
      // ticks missed while nothing ran are not replayed: the next one is after now
      await tx.enqueue(nextCronItem(fn.id, cron, jitter, now()));
    });
    if (runId) kick();
  }

  async function processTimer(item: QueueItem): Promise<void> {
    if (item.kind === "cron") return processCron(item);
    await store.transaction(async (tx) => {
      const run = await tx.lockRun(item.runId);
      if (!(await tx.finishItem(item.id, workerId, now()))) throw new LeaseLostError(item.id);
      if (!run || !isActiveStatus(run.status) || !item.stepId) return;
      const name = typeof item.payload?.name === "string" ? item.payload.name : null;
      if (item.kind === "sleep") {
        if (await tx.insertStep(run.id, { stepId: item.stepId, op: "Sleep", name, data: null })) {
          await tx.requestCall(run.id, run.functionId, now(), ulid());
        }
        return;
      }
      // wait_timeout: the wait may already have been resolved, in which case this is a no-op
      const wait = await tx.deleteWait(run.id, item.stepId);
      if (!wait) return;
      if (wait.kind === "event") {
        await tx.insertStep(run.id, { stepId: item.stepId, op: "WaitForEvent", name: wait.eventName, data: null });
      } else {
        await tx.insertStep(run.id, {
          stepId: item.stepId,
          op: "InvokeFunction",
          name,
          error: {
            name: "InngestInvokeTimeoutError",
            message: `executor: timed out waiting for invoked run ${wait.childRunId}`,
          },
        });
        if (wait.childRunId) await tx.updateRun(wait.childRunId, { parentRunId: null, parentStepId: null });
      }
      await tx.requestCall(run.id, run.functionId, now(), ulid());
    });
  }

  /** The database cannot store what the SDK answered: retrying would re-run the step forever. */
  async function failForData(item: QueueItem, e: StoreDataError): Promise<void> {
    try {
      await store.transaction(async (tx) => {
        const run = await tx.lockRun(item.runId);
        if (!run || !isActiveStatus(run.status)) return;
        await failRun(tx, run, {
          name: "ExecutorDataError",
          message: `executor: could not record the run's progress: ${e.message}`,
        });
      });
    } catch (again) {
      log.error(`failing run ${item.runId} failed too: ${(again as Error).message}`);
    }
  }

  async function processItem(item: QueueItem, isAbandoned: () => boolean): Promise<void> {
    const heartbeat = setInterval(
      () => {
        store.heartbeat(item.id, workerId, new Date(now().getTime() + leaseMs)).then(
          (ok) => {
            if (!ok) log.warn("lease lost while processing", { itemId: item.id, runId: item.runId });
          },
          (e) => log.warn(`heartbeat failed: ${(e as Error).message}`),
        );
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    try {
      if (item.kind === "call" || item.kind === "step") await processCall(item, isAbandoned);
      else await processTimer(item);
    } catch (e) {
      if (e instanceof LeaseLostError) log.info("lease lost; result discarded", { itemId: item.id, runId: item.runId });
      else {
        lastError = (e as Error).message;
        log.error(`processing ${item.kind} item of run ${item.runId} failed: ${(e as Error).message}`);
        // other errors (database down, timeouts) leave the lease to expire: the item is retried then
        if (e instanceof StoreDataError && item.kind !== "cron") await failForData(item, e);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The loop
  // ---------------------------------------------------------------------------------------------

  function spawn(item: QueueItem): void {
    const entry = { item, promise: Promise.resolve(), abandoned: false };
    entry.promise = processItem(item, () => entry.abandoned).finally(() => {
      inFlight.delete(item.id);
      kick();
    });
    inFlight.set(item.id, entry);
  }

  async function idle(ms: number): Promise<void> {
    if (kicked) {
      kicked = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        wake = null;
        resolve();
      }
      wake = done;
    });
    kicked = false;
  }

  async function loop(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      const free = concurrency - inFlight.size;
      if (free > 0) {
        try {
          const at = now();
          const items = await store.claim({
            workerId,
            now: at,
            leaseUntil: new Date(at.getTime() + leaseMs),
            limit: free,
            functionIds: [...served.keys()],
          });
          lastPollAt = at;
          if (failures > 0) log.info("claiming work again after database errors", { failures });
          failures = 0;
          lastError = null;
          for (const item of items) spawn(item);
          if (items.length === free) continue; // more may be due; in-flight completions kick the loop
        } catch (e) {
          failures++;
          lastError = (e as Error).message;
          // log the first failure and then every doubling, and back off up to 5 s
          if ((failures & (failures - 1)) === 0)
            log.error(`claiming work failed (${failures}x): ${(e as Error).message}`);
          await idle(Math.min(pollIntervalMs * 2 ** failures, 5000));
          continue;
        }
      }
      if (stopping) break;
      let wait = pollIntervalMs;
      if (inFlight.size < concurrency) {
        try {
          const next = await store.nextDueAt([...served.keys()]);
          if (next) wait = Math.max(5, Math.min(pollIntervalMs, next.getTime() - now().getTime()));
        } catch {
          // the next claim reports database trouble
        }
      }
      await idle(wait);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Public API
  // ---------------------------------------------------------------------------------------------

  async function getRun(runId: string): Promise<RunView | null> {
    const run = await store.getRun(runId);
    if (!run) return null;
    const [steps, waits, items] = await Promise.all([
      store.listSteps(runId),
      store.listWaits(runId),
      store.listItems(runId),
    ]);
    const pending: RunPendingView[] = [];
    for (const i of items) {
      if (i.kind === "wait_timeout" || i.kind === "cron") continue;
      pending.push({
        kind: i.kind,
        stepId: i.stepId,
        name: typeof i.payload?.name === "string" ? i.payload.name : null,
        at: i.runAt,
        attempt: i.attempt,
      });
    }
    for (const w of waits) {
      pending.push({
        kind: w.kind,
        stepId: w.stepId,
        name: null,
        at: w.expiresAt,
        eventName: w.eventName,
        expression: w.expression,
        childRunId: w.childRunId,
      });
    }
    return {
      ...run,
      steps: steps.map((s) => ({
        id: s.stepId,
        name: s.name,
        op: s.op,
        seq: s.seq,
        data: s.error ? null : s.data,
        error: s.error,
        at: s.createdAt,
      })),
      pending,
    };
  }

  return {
    get client() {
      return sdk.client;
    },
    workerId,

    async start() {
      if (running) return;
      const app = await sdk.sync();
      for (const config of app.functions) validateFunctionConfig(config);
      const records: FunctionRecord[] = app.functions.map((config) => ({
        id: config.id,
        appId: app.appId,
        name: config.name ?? config.id,
        config,
      }));
      await store.transaction(async (tx) => {
        const removed = (await tx.listFunctions()).filter(
          (f) => f.appId === app.appId && !records.some((r) => r.id === f.id),
        );
        await tx.replaceFunctions(app.appId, records);
        // one cron item per (function, cron trigger); triggers that changed or went away lose theirs
        const cronItems = records.flatMap((r) =>
          (r.config.triggers ?? []).flatMap((t) =>
            typeof t.cron === "string"
              ? [nextCronItem(r.id, t.cron, typeof t.jitter === "string" && t.jitter ? t.jitter : null, now())]
              : [],
          ),
        );
        await tx.deleteCronItems(
          [...removed.map((f) => f.id), ...records.map((r) => r.id)],
          cronItems.map((i) => i.dedupeKey),
        );
        for (const item of cronItems) await tx.enqueue(item);
        // runs of functions the app no longer has would wait forever: end them, loudly
        for (const run of await tx.activeRunsOf(removed.map((f) => f.id))) {
          const locked = await tx.lockRun(run.id);
          if (locked && isActiveStatus(locked.status)) {
            await failRun(tx, locked, {
              name: "FunctionRemovedError",
              message: `executor: function "${run.functionId}" is no longer part of app "${app.appId}"`,
            });
          }
        }
      });
      served = new Map(records.map((r) => [r.id, r]));
      running = true;
      stopping = false;
      loopDone = loop().catch((e) => {
        lastError = (e as Error).message;
        log.error(`executor loop crashed: ${(e as Error).message}`);
      });
      log.info("executor started", { workerId, functions: [...served.keys()] });
    },

    async stop(opts = {}) {
      if (!running) return;
      stopping = true;
      kick();
      await loopDone;
      const pending = [...inFlight.values()];
      if (pending.length > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          Promise.allSettled(pending.map((p) => p.promise)),
          new Promise<void>((r) => {
            timer = setTimeout(r, opts.timeoutMs ?? 10_000);
          }),
        ]);
        clearTimeout(timer);
      }
      const abandoned = [...inFlight.values()];
      for (const a of abandoned) a.abandoned = true;
      if (abandoned.length > 0) {
        log.warn(
          `stopping with ${abandoned.length} call(s) still running; their leases are released and they will be retried`,
        );
        await store.release(
          abandoned.map((a) => a.item.id),
          workerId,
        );
      }
      running = false;
    },

    send,

    async cancel(runId, reason) {
      const done = await store.transaction(async (tx) => {
        const run = await tx.lockRun(runId);
        if (!run || !isActiveStatus(run.status)) return false;
        await cancelRun(tx, run, reason ?? "cancelled");
        return true;
      });
      if (done) kick();
      return done;
    },

    getRun,

    listRuns(filter = {}) {
      return store.listRuns(filter);
    },

    async waitForRun(runId, opts = {}) {
      const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
      for (;;) {
        const view = await getRun(runId);
        if (!view) throw new Error(`executor: run ${runId} not found`);
        if (!isActiveStatus(view.status)) return view;
        if (Date.now() > deadline)
          throw new Error(`executor: run ${runId} still ${view.status} after ${opts.timeoutMs ?? 30_000} ms`);
        await new Promise((r) => setTimeout(r, opts.pollMs ?? 25));
      }
    },

    async prune(before) {
      return store.prune(before);
    },

    async health() {
      let dbOk = true;
      try {
        await store.ping();
      } catch (e) {
        dbOk = false;
        lastError = (e as Error).message;
      }
      return { ok: running && !stopping && dbOk, running, workerId, inFlight: inFlight.size, lastPollAt, lastError };
    },
  };
}
