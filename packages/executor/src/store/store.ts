// What the executor needs from its database. All state changes of one run happen inside
// transaction() after lockRun(runId), so concurrent workers (and processes) serialise per run.
// The Postgres/PGlite implementation is prisma-store.ts.

/**
 * The database refused the data itself (SQLSTATE classes 22 and 23, e.g. a \u0000 in JSON): retrying
 * cannot help, so the executor fails the run instead of retrying the item forever.
 */
export class StoreDataError extends Error {
  override name = "StoreDataError";
}

export type RunStatus = "queued" | "running" | "completed" | "failed" | "cancelled";
export const ACTIVE_RUN_STATUSES: readonly RunStatus[] = ["queued", "running"];
export const isActiveStatus = (s: string): boolean => s === "queued" || s === "running";

/** An event as functions receive it (SDK_SPEC 1.3.4). */
export interface EventPayload {
  name: string;
  data: Record<string, unknown>;
  id?: string;
  ts?: number;
  v?: string;
  user?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  [key: string]: unknown;
}

/** A function's config as the SDK reports it in a sync (SDK_SPEC 4.3.2). */
export interface FunctionConfig {
  id: string;
  name?: string;
  triggers: Array<{ event?: string; expression?: string; cron?: string; [k: string]: unknown }>;
  steps: Record<string, { retries?: { attempts?: number }; [k: string]: unknown }>;
  cancel?: Array<{ event: string; if?: string; timeout?: string }>;
  [key: string]: unknown;
}

export interface FunctionRecord {
  id: string;
  appId: string;
  name: string;
  config: FunctionConfig;
}

export interface RunRecord {
  id: string;
  functionId: string;
  status: RunStatus;
  event: EventPayload;
  eventId: string | null;
  output: unknown;
  error: SerializedError | null;
  disableImmediateExecution: boolean;
  stepSeq: number;
  parentRunId: string | null;
  parentStepId: string | null;
  createdAt: Date;
  updatedAt: Date;
  startedAt: Date | null;
  endedAt: Date | null;
}

export interface NewRun {
  id: string;
  functionId: string;
  event: EventPayload;
  eventId: string | null;
  parentRunId?: string | null;
  parentStepId?: string | null;
}

export type RunPatch = Partial<
  Pick<
    RunRecord,
    | "status"
    | "output"
    | "error"
    | "disableImmediateExecution"
    | "startedAt"
    | "endedAt"
    | "parentRunId"
    | "parentStepId"
  >
>;

/** A memoized step result: exactly one of data / error is meaningful (error wins when set). */
export interface StepRecord {
  runId: string;
  stepId: string;
  seq: number;
  op: string;
  name: string | null;
  data: unknown;
  error: SerializedError | null;
  createdAt: Date;
}

export interface NewStep {
  stepId: string;
  op: string;
  name?: string | null;
  data?: unknown;
  error?: SerializedError | null;
}

/**
 * Work items. `call`: ask the SDK what to do next (discovery, stepId=step). `step`: run one planned
 * step (stepId=<hash>). `sleep`: memoize a Sleep when due. `wait_timeout`: time out a waitForEvent
 * or invoke when due. `cron`: start a run of a cron-triggered function (runId is "cron:<function>").
 */
export type QueueKind = "call" | "step" | "sleep" | "wait_timeout" | "cron";

export interface QueueItem {
  id: string;
  runId: string;
  functionId: string;
  kind: QueueKind;
  stepId: string | null;
  attempt: number;
  dedupeKey: string | null;
  rediscover: boolean;
  payload: Record<string, unknown> | null;
  runAt: Date;
  /**
   * The lease: the worker id and a suffix of its own per lease (null: not leased). Finishing, heartbeats and
   * releases name it, so a lease taken again (by anyone) voids the older holder's.
   */
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
}

export interface NewQueueItem {
  id: string;
  runId: string;
  functionId: string;
  kind: QueueKind;
  stepId?: string | null;
  attempt?: number;
  dedupeKey: string;
  payload?: Record<string, unknown> | null;
  runAt: Date;
}

export interface WaitRecord {
  id: string;
  runId: string;
  stepId: string;
  kind: "event" | "invoke";
  eventName: string | null;
  expression: string | null;
  childRunId: string | null;
  expiresAt: Date | null;
  createdAt: Date;
}

export type NewWait = Omit<WaitRecord, "createdAt">;

export interface RunFilter {
  functionId?: string;
  status?: RunStatus | RunStatus[];
  eventId?: string;
  parentRunId?: string;
  limit?: number;
}

export interface StoreTx {
  replaceFunctions(appId: string, fns: FunctionRecord[]): Promise<void>;
  listFunctions(): Promise<FunctionRecord[]>;

  /** False when an event with the same externalId was already received. */
  insertEvent(e: { id: string; externalId: string | null; name: string; payload: EventPayload }): Promise<boolean>;

  createRun(run: NewRun): Promise<void>;
  /** SELECT ... FOR UPDATE: every change to a run and its steps, items and waits happens under this lock. */
  lockRun(runId: string): Promise<RunRecord | null>;
  updateRun(runId: string, patch: RunPatch): Promise<void>;
  activeRunsOf(functionIds: string[]): Promise<RunRecord[]>;

  /** Commit a step result unless one exists (never overwritten). Assigns the next seq. */
  insertStep(runId: string, step: NewStep): Promise<boolean>;
  hasStep(runId: string, stepId: string): Promise<boolean>;

  /** Insert unless an item with the same dedupeKey exists (or, with unlessStepMemoized, its step has a result). */
  enqueue(item: NewQueueItem, opts?: { unlessStepMemoized?: boolean }): Promise<boolean>;
  /**
   * Ask for a discovery call of the run at `runAt`. There is one call item per run: if it exists and
   * is leased, it is flagged to run again when its holder finishes; otherwise it is made due earlier.
   */
  requestCall(
    runId: string,
    functionId: string,
    runAt: Date,
    newId: string,
    leaseTo?: { workerId: string; until: Date },
  ): Promise<QueueItem | null>;
  /** (with `leaseTo`: a call item newly created is leased to that worker and returned; else null) */
  /**
   * Finish a claimed item (`owner`: its lease, leaseOf(item)); false when the lease was lost (the item was
   * leased again, by another worker or another slot of this one, or it is gone).
   * `again` keeps the item for another attempt at runAt; otherwise a call item flagged `rediscover`
   * becomes due now, and any other item is deleted.
   */
  finishItem(itemId: string, owner: string, now: Date, again?: { runAt: Date; attempt: number }): Promise<boolean>;
  countItems(runId: string, kind: QueueKind, excludeItemId?: string): Promise<number>;
  /** Delete the cron items of these functions except the ones with the given dedupe keys. */
  deleteCronItems(functionIds: string[], keepKeys: string[]): Promise<void>;
  deleteItemByKey(dedupeKey: string): Promise<void>;
  /** Delete every queue item and wait of the run (terminal runs). */
  clearRunWork(runId: string): Promise<void>;

  insertWait(wait: NewWait): Promise<boolean>;
  deleteWait(runId: string, stepId: string): Promise<WaitRecord | null>;
  deleteWaitForChild(childRunId: string): Promise<WaitRecord | null>;
  /** Event waits for this event name, with the waiting run's trigger event. */
  waitsForEvent(name: string): Promise<Array<WaitRecord & { runEvent: EventPayload }>>;
}

/** The common SDK answer: a `call` item's call ran exactly one new step (StepRun). */
export interface StepRunCommit {
  runId: string;
  itemId: string;
  /** the item's lease (leaseOf(item)) */
  owner: string;
  /** the worker a continued call is leased to */
  workerId: string;
  step: NewStep;
  now: Date;
  /** keep the run's next call leased to this worker until then (it continues the run); null: free for anyone */
  leaseUntil: Date | null;
}

/** A lane's share of the queue: the item kinds it claims. */
export type LaneKinds = readonly QueueKind[];

export interface ExecutorStore {
  /** One database transaction; retried on deadlock/serialization failure. */
  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  /**
   * Lease up to `limit` due items (FOR UPDATE SKIP LOCKED) of the given functions (and kinds, when given),
   * each under a lease of its own (leaseOf), and, in the same statement, when the next item left becomes due
   * (null: none queued), so a poll is one round trip. Items of `first` kinds are claimed before any other.
   */
  poll(args: {
    workerId: string;
    now: Date;
    leaseUntil: Date;
    limit: number;
    functionIds: string[];
    kinds?: LaneKinds;
    first?: LaneKinds;
  }): Promise<{ items: QueueItem[]; nextDueAt: Date | null }>;
  /** The run and its memoized steps (in seq order), in one read. */
  loadCall(runId: string): Promise<{ run: RunRecord; steps: StepRecord[] } | null>;
  /**
   * One statement for StepRunCommit, all or nothing: when the item is still leased to this worker, the run
   * active and the step not memoized yet, memoizes the step (a queued run becomes running) and turns the
   * item into the run's next discovery call, due now: leased to this worker until `leaseUntil`, or free.
   * Returns the item, the step's seq and whether anything else asked for a call of the run meanwhile
   * (`othersWrote`: the item was flagged rediscover, e.g. an event resolved a wait); null when a condition
   * failed (nothing was memoized: the caller applies the answer the general way).
   */
  commitStepRun(
    c: StepRunCommit,
  ): Promise<{ item: QueueItem; seq: number; createdAt: Date; othersWrote: boolean } | null>;
  /** Extend a lease (`owner`: leaseOf(item)); false when it is no longer ours. */
  heartbeat(itemId: string, owner: string, leaseUntil: Date): Promise<boolean>;
  /** Give leases back so another worker can take the items at once (those still ours). */
  release(leases: Array<{ itemId: string; owner: string }>): Promise<void>;

  getRun(runId: string): Promise<RunRecord | null>;
  listRuns(filter: RunFilter): Promise<RunRecord[]>;
  listSteps(runId: string): Promise<StepRecord[]>;
  listWaits(runId: string): Promise<WaitRecord[]>;
  listItems(runId: string): Promise<QueueItem[]>;
  /** A cheap round trip, for health checks. */
  ping(): Promise<void>;
  /** Retention: delete ended runs (and their steps) that ended before `before`, and older events. */
  prune(before: Date): Promise<{ runs: number; events: number }>;
}

/** The lease an item was handed out under ("" for an item not leased: it matches no row). */
export const leaseOf = (item: QueueItem): string => item.leaseOwner ?? "";
