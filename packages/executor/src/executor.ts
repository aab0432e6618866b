// The embedded durable executor: plays the Inngest server's part for the app's own Inngest functions,
// driving the SDK's unmodified serve() handler over the SDK protocol, with all state in the service's
// database. See docs/executor.md for the model; production uses a real Inngest server.
//
// This file only wires the parts together:
//   store/      the state store (runs, memoized steps, events, waits, the leased work queue)
//   protocol/   the protocol client: the SDK's handler in process, signed Call Requests, answers
//   scheduler/  the worker loop (leases, heartbeats), timers (sleeps, wait timeouts), cron ticks
//   runner/     the step runner: one SDK call per item, its answer applied op by op, retries, run endings
//   events/     the event router (waits, cancelOn, triggers) and its CEL subset
// A step result is committed before it counts as done, and a committed step never runs again. The
// window that remains is inherent to any executor: a step whose body ran but whose result was not yet
// committed runs again (at least once), never after its commit.
import { randomBytes } from "node:crypto";
import type { Inngest } from "inngest";
import type { ExecutorContext } from "./context.ts";
import { ingest } from "./events/router.ts";
import { registerFunctions } from "./functions.ts";
import { createSdkHandler, type SdkHandler } from "./protocol/sdk-handler.ts";
import { cancelRun, failRun } from "./runner/endings.ts";
import { defaultBackoff } from "./runner/retries.ts";
import { runCallItem } from "./runner/step-runner.ts";
import { fireCron } from "./scheduler/cron-ticks.ts";
import { fireTimer } from "./scheduler/timers.ts";
import { type ChainLease, WorkerLoop } from "./scheduler/worker.ts";
import {
  type ExecutorStore,
  type FunctionRecord,
  isActiveStatus,
  type QueueItem,
  type RunFilter,
  type RunRecord,
  StoreDataError,
} from "./store/store.ts";
import type {
  Executor,
  ExecutorHealth,
  ExecutorLogger,
  ExecutorOptions,
  RunView,
  SendEventInput,
  SendResult,
} from "./types.ts";
import { getRunView, waitForRunView } from "./views.ts";

/**
 * The lanes (docs/executor.md "Lanes"): the timer lane claims only timers, with slots of its own, so that
 * runs never hold every slot a timer could use; the work lane claims everything, due timers first.
 */
const TIMER_KINDS = ["sleep", "wait_timeout", "cron"] as const;

const consoleLogger: ExecutorLogger = {
  debug: () => {},
  info: () => {},
  warn: (m, e) => console.warn(`[executor] ${m}`, e ?? ""),
  error: (m, e) => console.error(`[executor] ${m}`, e ?? ""),
};

class EmbeddedExecutor implements Executor {
  readonly workerId: string;
  private readonly store: ExecutorStore;
  private readonly log: ExecutorLogger;
  private readonly ctx: ExecutorContext;
  private readonly sdk: SdkHandler;
  /** SDK calls and planned steps */
  private readonly worker: WorkerLoop;
  /** timers (sleep wake-ups, wait timeouts, cron ticks) and the call each fired timer asks for */
  private readonly timers: WorkerLoop;
  /** the functions this process serves (and therefore claims work for) */
  private served = new Map<string, FunctionRecord>();

  constructor(options: ExecutorOptions) {
    this.store = options.store;
    this.log = options.logger ?? consoleLogger;
    this.workerId = options.workerId ?? `worker-${randomBytes(6).toString("hex")}`;
    const now = options.now ?? (() => new Date());
    this.ctx = {
      store: this.store,
      log: this.log,
      now,
      workerId: this.workerId,
      backoff: options.backoff ?? defaultBackoff,
      ingest: (tx, events) => ingest(this.ctx, tx, events),
      kick: () => {
        this.worker.kick();
        this.timers.kick();
      },
    };
    this.sdk = createSdkHandler({
      client: options.client,
      functions: options.functions,
      ...(options.signingKey ? { signingKey: options.signingKey } : {}),
      onEvents: (events) => this.send(events),
    });
    const lane = {
      store: this.store,
      log: this.log,
      now,
      workerId: this.workerId,
      pollIntervalMs: options.pollIntervalMs ?? 250,
      leaseMs: options.leaseMs ?? 30_000,
      chainMs: options.chainMs ?? 2000,
      functionIds: () => [...this.served.keys()],
      onError: (item: QueueItem, e: Error) => this.onItemError(item, e),
    };
    this.worker = new WorkerLoop({
      ...lane,
      // every kind, due timers first: the timer lane's slots are a floor for timers, not a ceiling
      first: TIMER_KINDS,
      concurrency: options.concurrency ?? 8,
      process: (item, isAbandoned, chainLease) => this.process(item, isAbandoned, chainLease),
    });
    this.timers = new WorkerLoop({
      ...lane,
      // this process's timers kick the lane when queued; the poll is for other processes' and lease expiries
      pollIntervalMs: Math.max(lane.pollIntervalMs, 500),
      kinds: TIMER_KINDS,
      concurrency: options.timerConcurrency ?? 4,
      // a fired timer's call runs in this lane; the run's later steps go back to the work lane
      process: (item, isAbandoned, chainLease) =>
        item.kind === "call" || item.kind === "step"
          ? this.process(item, isAbandoned, null)
          : this.process(item, isAbandoned, chainLease),
    });
  }

  get client(): Inngest.Any {
    return this.sdk.client;
  }

  /**
   * One leased item, by kind: SDK calls go to the step runner, the rest are timers. With `chainLease`, the
   * run's next item may come back leased to this worker (docs/executor.md "Lanes").
   */
  private process(
    item: QueueItem,
    isAbandoned: () => boolean,
    chainLease: ChainLease | null,
  ): Promise<QueueItem | null> {
    if (item.kind === "call" || item.kind === "step") {
      return runCallItem(
        { ctx: this.ctx, sdk: this.sdk, servedFunction: (id) => this.served.get(id) },
        item,
        isAbandoned,
        { continueLease: chainLease },
      );
    }
    if (item.kind === "cron") return fireCron(this.ctx, item).then(() => null);
    return fireTimer(this.ctx, item, chainLease);
  }

  /** The database cannot store what the SDK answered: retrying would re-run the step forever. */
  private async onItemError(item: QueueItem, e: Error): Promise<void> {
    if (!(e instanceof StoreDataError) || item.kind === "cron") return;
    try {
      await this.store.transaction(async (tx) => {
        const run = await tx.lockRun(item.runId);
        if (!run || !isActiveStatus(run.status)) return;
        await failRun(this.ctx, tx, run, {
          name: "ExecutorDataError",
          message: `executor: could not record the run's progress: ${e.message}`,
        });
      });
    } catch (again) {
      this.log.error(`failing run ${item.runId} failed too: ${(again as Error).message}`);
    }
  }

  async start(): Promise<void> {
    if (this.worker.running) return;
    const app = await this.sdk.sync();
    const records = await registerFunctions(this.ctx, app);
    this.served = new Map(records.map((r) => [r.id, r]));
    this.worker.start();
    this.timers.start();
    this.log.info("executor started", { workerId: this.workerId, functions: [...this.served.keys()] });
  }

  async stop(opts: { timeoutMs?: number } = {}): Promise<void> {
    await Promise.all([this.worker.stop(opts.timeoutMs ?? 10_000), this.timers.stop(opts.timeoutMs ?? 10_000)]);
  }

  send = async (events: SendEventInput | SendEventInput[]): Promise<SendResult> => {
    const list = Array.isArray(events) ? events : [events];
    if (list.length === 0) return { ids: [], runIds: [] };
    const result = await this.store.transaction((tx) => ingest(this.ctx, tx, list));
    if (result.runIds.length > 0 || this.worker.running) this.ctx.kick();
    return result;
  };

  async cancel(runId: string, reason?: string): Promise<boolean> {
    const done = await this.store.transaction(async (tx) => {
      const run = await tx.lockRun(runId);
      if (!run || !isActiveStatus(run.status)) return false;
      await cancelRun(this.ctx, tx, run, reason ?? "cancelled");
      return true;
    });
    if (done) this.ctx.kick();
    return done;
  }

  getRun(runId: string): Promise<RunView | null> {
    return getRunView(this.store, runId);
  }

  listRuns(filter: RunFilter = {}): Promise<RunRecord[]> {
    return this.store.listRuns(filter);
  }

  waitForRun(runId: string, opts: { timeoutMs?: number; pollMs?: number } = {}): Promise<RunView> {
    return waitForRunView(this.store, runId, opts);
  }

  prune(before: Date): Promise<{ runs: number; events: number }> {
    return this.store.prune(before);
  }

  async health(): Promise<ExecutorHealth> {
    let dbOk = true;
    try {
      await this.store.ping();
    } catch (e) {
      dbOk = false;
      this.worker.lastError = (e as Error).message;
    }
    const w = this.worker;
    const t = this.timers;
    const polls = [w.lastPollAt, t.lastPollAt].filter((d): d is Date => d !== null);
    return {
      ok: w.running && !w.stopping && t.running && !t.stopping && dbOk,
      running: w.running && t.running,
      workerId: this.workerId,
      inFlight: w.inFlightCount + t.inFlightCount,
      lastPollAt: polls.length ? new Date(Math.max(...polls.map((d) => d.getTime()))) : null,
      lastError: w.lastError ?? t.lastError,
    };
  }
}

export function createExecutor(options: ExecutorOptions): Executor {
  return new EmbeddedExecutor(options);
}
