// ExecutorStore on Prisma (PostgreSQL, or PGlite embedded). Leases use raw SQL:
// SELECT ... FOR UPDATE SKIP LOCKED to claim, SELECT ... FOR UPDATE to serialise a run's changes.
import type { Db, Tx } from "@cua/db/client";
import { Prisma } from "@cua/db/generated";
import { itemKeys } from "./keys.ts";
import type {
  EventPayload,
  ExecutorStore,
  FunctionConfig,
  FunctionRecord,
  NewQueueItem,
  NewRun,
  NewStep,
  NewWait,
  QueueItem,
  QueueKind,
  RunFilter,
  RunPatch,
  RunRecord,
  RunStatus,
  SerializedError,
  StepRecord,
  StepRunCommit,
  StoreTx,
  WaitRecord,
} from "./store.ts";
import { StoreDataError } from "./store.ts";

type RunRow = Awaited<ReturnType<Db["executorRun"]["findUniqueOrThrow"]>>;
type StepRow = Awaited<ReturnType<Db["executorStep"]["findUniqueOrThrow"]>>;
type ItemRow = Awaited<ReturnType<Db["executorQueueItem"]["findUniqueOrThrow"]>>;
type WaitRow = Awaited<ReturnType<Db["executorWait"]["findUniqueOrThrow"]>>;

/** JSON for a nullable Json column: SQL NULL for null/undefined. */
function json(v: unknown): Prisma.InputJsonValue | typeof Prisma.DbNull {
  return v === undefined || v === null ? Prisma.DbNull : (v as Prisma.InputJsonValue);
}

function toRun(r: RunRow): RunRecord {
  return {
    id: r.id,
    functionId: r.functionId,
    status: r.status as RunStatus,
    event: r.event as unknown as EventPayload,
    eventId: r.eventId,
    output: r.output ?? null,
    error: (r.error as unknown as SerializedError | null) ?? null,
    disableImmediateExecution: r.disableImmediateExecution,
    stepSeq: r.stepSeq,
    parentRunId: r.parentRunId,
    parentStepId: r.parentStepId,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
  };
}

function toStep(s: StepRow): StepRecord {
  return {
    runId: s.runId,
    stepId: s.stepId,
    seq: s.seq,
    op: s.op,
    name: s.name,
    data: s.data ?? null,
    error: (s.error as unknown as SerializedError | null) ?? null,
    createdAt: s.createdAt,
  };
}

function toItem(i: ItemRow): QueueItem {
  return {
    id: i.id,
    runId: i.runId,
    functionId: i.functionId,
    kind: i.kind as QueueKind,
    stepId: i.stepId,
    attempt: i.attempt,
    dedupeKey: i.dedupeKey,
    rediscover: i.rediscover,
    payload: (i.payload as Record<string, unknown> | null) ?? null,
    runAt: i.runAt,
    leaseOwner: i.leaseOwner,
    leaseExpiresAt: i.leaseExpiresAt,
    createdAt: i.createdAt,
  };
}

function toWait(w: WaitRow): WaitRecord {
  return {
    id: w.id,
    runId: w.runId,
    stepId: w.stepId,
    kind: w.kind as "event" | "invoke",
    eventName: w.eventName,
    expression: w.expression,
    childRunId: w.childRunId,
    expiresAt: w.expiresAt,
    createdAt: w.createdAt,
  };
}

/** Raw rows ($queryRaw): snake_case columns, jsonb already parsed, timestamptz as Date. */
type Raw = Record<string, unknown>;
const rawDate = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const rawDateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : rawDate(v));

function rawToRun(r: Raw): RunRecord {
  return {
    id: r.id as string,
    functionId: r.function_id as string,
    status: r.status as RunStatus,
    event: r.event as EventPayload,
    eventId: (r.event_id as string | null) ?? null,
    output: r.output ?? null,
    error: (r.error as SerializedError | null) ?? null,
    disableImmediateExecution: Boolean(r.disable_immediate_execution),
    stepSeq: Number(r.step_seq),
    parentRunId: (r.parent_run_id as string | null) ?? null,
    parentStepId: (r.parent_step_id as string | null) ?? null,
    createdAt: rawDate(r.created_at),
    updatedAt: rawDate(r.updated_at),
    startedAt: rawDateOrNull(r.started_at),
    endedAt: rawDateOrNull(r.ended_at),
  };
}

function rawToItem(r: Raw): QueueItem {
  return {
    id: r.id as string,
    runId: r.run_id as string,
    functionId: r.function_id as string,
    kind: r.kind as QueueKind,
    stepId: (r.step_id as string | null) ?? null,
    attempt: Number(r.attempt),
    dedupeKey: (r.dedupe_key as string | null) ?? null,
    rediscover: Boolean(r.rediscover),
    payload: (r.payload as Record<string, unknown> | null) ?? null,
    runAt: rawDate(r.run_at),
    leaseOwner: (r.lease_owner as string | null) ?? null,
    leaseExpiresAt: rawDateOrNull(r.lease_expires_at),
    createdAt: rawDate(r.created_at),
  };
}

/** A jsonb parameter: SQL NULL for null/undefined, else the JSON text (cast with ::jsonb). */
const jsonText = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));

/** The SQLSTATE behind a Prisma / driver adapter error, wherever this Prisma version puts it. */
export function sqlStateOf(e: unknown): string | null {
  const seen = new Set<unknown>();
  let cur: any = e;
  while (cur && typeof cur === "object" && !seen.has(cur)) {
    seen.add(cur);
    for (const c of [cur.meta?.driverAdapterError?.cause?.code, cur.originalCode, cur.cause?.originalCode, cur.code]) {
      if (typeof c === "string" && /^[0-9A-Z]{5}$/.test(c) && !c.startsWith("P")) return c;
    }
    const m = /Code: `([0-9A-Z]{5})`/.exec(String(cur.message ?? ""));
    if (m?.[1]) return m[1];
    cur = cur.cause ?? cur.meta?.driverAdapterError;
  }
  return null;
}

/** Deadlocks (40P01) and serialization failures (40001) are retried; Prisma may report them as P2034. */
function isRetryableTxError(e: unknown): boolean {
  const state = sqlStateOf(e);
  if (state === "40P01" || state === "40001") return true;
  const any = e as { code?: unknown; message?: unknown } | null;
  return any?.code === "P2034" || /deadlock detected|could not serialize access/i.test(String(any?.message ?? ""));
}

/** SQLSTATE classes 22 and 23: the database refused the data itself (StoreDataError); else returns. */
function refusedData(e: unknown): void {
  const state = sqlStateOf(e);
  if (state?.startsWith("22") || state?.startsWith("23")) {
    throw new StoreDataError(`the database refused the data (SQLSTATE ${state}): ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/**
 * A new lease's owner: the worker id and a random suffix, so that each lease is its own. Two slots of one
 * worker can never both act on an item: a slot whose lease expired and was taken again (even by the same
 * worker, e.g. after a stall or a clock jump) finds its token gone (docs/executor.md "Leases").
 */
const newLeaseOwner = (workerId: string) =>
  Prisma.sql`(${workerId}::text || '#' || substr(md5(random()::text || clock_timestamp()::text), 1, 12))`;

class PrismaStoreTx implements StoreTx {
  constructor(private readonly tx: Tx) {}

  async replaceFunctions(appId: string, fns: FunctionRecord[]): Promise<void> {
    await this.tx.executorFunction.deleteMany({ where: { appId, id: { notIn: fns.map((f) => f.id) } } });
    for (const f of fns) {
      const data = { appId: f.appId, name: f.name, config: f.config as unknown as Prisma.InputJsonValue };
      await this.tx.executorFunction.upsert({ where: { id: f.id }, create: { id: f.id, ...data }, update: data });
    }
  }

  async listFunctions(): Promise<FunctionRecord[]> {
    const rows = await this.tx.executorFunction.findMany({ orderBy: { id: "asc" } });
    return rows.map((r) => ({ id: r.id, appId: r.appId, name: r.name, config: r.config as unknown as FunctionConfig }));
  }

  async insertEvent(e: {
    id: string;
    externalId: string | null;
    name: string;
    payload: EventPayload;
  }): Promise<boolean> {
    const { count } = await this.tx.executorEvent.createMany({
      data: [
        { id: e.id, externalId: e.externalId, name: e.name, payload: e.payload as unknown as Prisma.InputJsonValue },
      ],
      skipDuplicates: true,
    });
    return count === 1;
  }

  async createRun(run: NewRun): Promise<void> {
    await this.tx.executorRun.create({
      data: {
        id: run.id,
        functionId: run.functionId,
        status: "queued",
        event: run.event as unknown as Prisma.InputJsonValue,
        eventId: run.eventId,
        parentRunId: run.parentRunId ?? null,
        parentStepId: run.parentStepId ?? null,
      },
    });
  }

  async lockRun(runId: string): Promise<RunRecord | null> {
    const rows = await this.tx.$queryRaw<Raw[]>`SELECT * FROM executor_runs WHERE id = ${runId} FOR UPDATE`;
    return rows[0] ? rawToRun(rows[0]) : null;
  }

  async updateRun(runId: string, patch: RunPatch): Promise<void> {
    const data: Prisma.ExecutorRunUpdateInput = {};
    if (patch.status !== undefined) data.status = patch.status;
    if ("output" in patch) data.output = json(patch.output);
    if ("error" in patch) data.error = json(patch.error);
    if (patch.disableImmediateExecution !== undefined) data.disableImmediateExecution = patch.disableImmediateExecution;
    if (patch.startedAt !== undefined) data.startedAt = patch.startedAt;
    if (patch.endedAt !== undefined) data.endedAt = patch.endedAt;
    if (patch.parentRunId !== undefined) data.parentRunId = patch.parentRunId;
    if (patch.parentStepId !== undefined) data.parentStepId = patch.parentStepId;
    await this.tx.executorRun.update({ where: { id: runId }, data });
  }

  async activeRunsOf(functionIds: string[]): Promise<RunRecord[]> {
    if (functionIds.length === 0) return [];
    const rows = await this.tx.executorRun.findMany({
      where: { functionId: { in: functionIds }, status: { in: ["queued", "running"] } },
      orderBy: { id: "asc" },
    });
    return rows.map(toRun);
  }

  async insertStep(runId: string, step: NewStep): Promise<boolean> {
    const hasError = step.error !== undefined && step.error !== null;
    // one statement: take the next seq only when the step is not memoized yet, then insert it
    const inserted = await this.tx.$executeRaw`
      WITH seq AS (
        UPDATE executor_runs SET step_seq = step_seq + 1
        WHERE id = ${runId}
          AND NOT EXISTS (SELECT 1 FROM executor_steps WHERE run_id = ${runId} AND step_id = ${step.stepId})
        RETURNING step_seq
      )
      INSERT INTO executor_steps (run_id, step_id, seq, op, name, data, error, created_at)
      SELECT ${runId}::text, ${step.stepId}::text, step_seq, ${step.op}::text, ${step.name ?? null}::text,
             ${hasError ? null : jsonText(step.data)}::jsonb, ${hasError ? JSON.stringify(step.error) : null}::jsonb, now()
      FROM seq
      ON CONFLICT DO NOTHING`;
    return inserted === 1;
  }

  async hasStep(runId: string, stepId: string): Promise<boolean> {
    const row = await this.tx.executorStep.findUnique({
      where: { runId_stepId: { runId, stepId } },
      select: { seq: true },
    });
    return row !== null;
  }

  async enqueue(item: NewQueueItem, opts: { unlessStepMemoized?: boolean } = {}): Promise<boolean> {
    const guard = opts.unlessStepMemoized && item.stepId ? item.stepId : null;
    const inserted = await this.tx.$executeRaw`
      INSERT INTO executor_queue (id, run_id, function_id, kind, step_id, attempt, dedupe_key, rediscover, payload, run_at, created_at)
      SELECT ${item.id}::text, ${item.runId}::text, ${item.functionId}::text, ${item.kind}::text, ${item.stepId ?? null}::text,
             ${item.attempt ?? 0}::int, ${item.dedupeKey}::text, false, ${jsonText(item.payload)}::jsonb,
             ${item.runAt}::timestamptz, now()
      WHERE ${guard}::text IS NULL
         OR NOT EXISTS (SELECT 1 FROM executor_steps WHERE run_id = ${item.runId} AND step_id = ${guard})
      ON CONFLICT DO NOTHING`;
    return inserted === 1;
  }

  async requestCall(
    runId: string,
    functionId: string,
    runAt: Date,
    newId: string,
    leaseTo?: { workerId: string; until: Date },
  ): Promise<QueueItem | null> {
    const key = itemKeys.call(runId);
    const rows = await this.tx.$queryRaw<Raw[]>`
      INSERT INTO executor_queue (id, run_id, function_id, kind, attempt, dedupe_key, rediscover, run_at, lease_owner, lease_expires_at, created_at)
      VALUES (${newId}, ${runId}, ${functionId}, 'call', 0, ${key}, false, ${runAt},
              ${leaseTo ? newLeaseOwner(leaseTo.workerId) : Prisma.sql`NULL`}, ${leaseTo?.until ?? null}, now())
      ON CONFLICT (dedupe_key) DO UPDATE SET
        rediscover = CASE WHEN executor_queue.lease_owner IS NOT NULL THEN true ELSE executor_queue.rediscover END,
        run_at = CASE WHEN executor_queue.lease_owner IS NOT NULL THEN executor_queue.run_at
                      ELSE LEAST(executor_queue.run_at, EXCLUDED.run_at) END
      RETURNING *, (xmax = 0) AS inserted`;
    const row = rows[0];
    return leaseTo && row && row.inserted === true ? rawToItem(row) : null;
  }

  async finishItem(
    itemId: string,
    owner: string,
    now: Date,
    again?: { runAt: Date; attempt: number },
  ): Promise<boolean> {
    // one statement: lock the item if the lease is ours, then delete it, or keep it for another
    // attempt (`again`), or make it due now (a call item flagged `rediscover`)
    const keep = again !== undefined;
    const rows = await this.tx.$queryRaw<{ n: bigint | number }[]>`
      WITH it AS (
        SELECT id, rediscover FROM executor_queue WHERE id = ${itemId} AND lease_owner = ${owner} FOR UPDATE
      ),
      gone AS (
        DELETE FROM executor_queue q USING it
        WHERE q.id = it.id AND NOT it.rediscover AND NOT ${keep}::boolean
        RETURNING q.id
      ),
      kept AS (
        UPDATE executor_queue q SET
          lease_owner = NULL, lease_expires_at = NULL, rediscover = false,
          run_at = ${again ? again.runAt : now}::timestamptz, attempt = ${again ? again.attempt : 0}::int
        FROM it
        WHERE q.id = it.id AND (it.rediscover OR ${keep}::boolean)
        RETURNING q.id
      )
      SELECT (SELECT count(*) FROM gone) + (SELECT count(*) FROM kept) AS n`;
    return Number(rows[0]?.n ?? 0) === 1;
  }

  async countItems(runId: string, kind: QueueKind, excludeItemId?: string): Promise<number> {
    return this.tx.executorQueueItem.count({
      where: { runId, kind, ...(excludeItemId ? { id: { not: excludeItemId } } : {}) },
    });
  }

  async deleteCronItems(functionIds: string[], keepKeys: string[]): Promise<void> {
    if (functionIds.length === 0) return;
    await this.tx.executorQueueItem.deleteMany({
      where: { kind: "cron", functionId: { in: functionIds }, dedupeKey: { notIn: keepKeys } },
    });
  }

  async deleteItemByKey(dedupeKey: string): Promise<void> {
    await this.tx.executorQueueItem.deleteMany({ where: { dedupeKey } });
  }

  async clearRunWork(runId: string): Promise<void> {
    await this.tx.executorQueueItem.deleteMany({ where: { runId } });
    await this.tx.executorWait.deleteMany({ where: { runId } });
  }

  async insertWait(wait: NewWait): Promise<boolean> {
    const { count } = await this.tx.executorWait.createMany({ data: [wait], skipDuplicates: true });
    return count === 1;
  }

  async deleteWait(runId: string, stepId: string): Promise<WaitRecord | null> {
    const rows = await this.tx.executorWait.findMany({ where: { runId, stepId } });
    const row = rows[0];
    if (!row) return null;
    const { count } = await this.tx.executorWait.deleteMany({ where: { id: row.id } });
    return count === 1 ? toWait(row) : null;
  }

  async deleteWaitForChild(childRunId: string): Promise<WaitRecord | null> {
    const row = await this.tx.executorWait.findUnique({ where: { childRunId } });
    if (!row) return null;
    const { count } = await this.tx.executorWait.deleteMany({ where: { id: row.id } });
    return count === 1 ? toWait(row) : null;
  }

  async waitsForEvent(name: string): Promise<Array<WaitRecord & { runEvent: EventPayload }>> {
    const waits = await this.tx.executorWait.findMany({
      where: { kind: "event", eventName: name },
      orderBy: { runId: "asc" },
    });
    if (waits.length === 0) return [];
    const runs = await this.tx.executorRun.findMany({
      where: { id: { in: [...new Set(waits.map((w) => w.runId))] } },
      select: { id: true, event: true },
    });
    const byId = new Map(runs.map((r) => [r.id, r.event as unknown as EventPayload]));
    return waits.flatMap((w) => {
      const runEvent = byId.get(w.runId);
      return runEvent ? [{ ...toWait(w), runEvent }] : [];
    });
  }
}

export interface PrismaStoreOptions {
  /** interactive transaction limits (ms) */
  maxWait?: number;
  timeout?: number;
}

class PrismaStore implements ExecutorStore {
  private readonly txOpts: { maxWait: number; timeout: number };

  constructor(
    private readonly db: Db,
    opts: PrismaStoreOptions,
  ) {
    this.txOpts = { maxWait: opts.maxWait ?? 10_000, timeout: opts.timeout ?? 60_000 };
  }

  async transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.db.$transaction((tx) => fn(new PrismaStoreTx(tx)), this.txOpts);
      } catch (e) {
        refusedData(e);
        if (attempt >= 8 || !isRetryableTxError(e)) throw e;
        await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 20));
      }
    }
  }

  async poll({
    workerId,
    now,
    leaseUntil,
    limit,
    functionIds,
    kinds,
    first,
  }: Parameters<ExecutorStore["poll"]>[0]): Promise<{ items: QueueItem[]; nextDueAt: Date | null }> {
    if (functionIds.length === 0) return { items: [], nextDueAt: null };
    const kindFilter = kinds ? Prisma.sql`AND kind IN (${Prisma.join([...kinds])})` : Prisma.empty;
    const order = first?.length
      ? Prisma.sql`ORDER BY (kind IN (${Prisma.join([...first])})) DESC, run_at`
      : Prisma.sql`ORDER BY run_at`;
    const rows = await this.db.$queryRaw<{ items: Raw[]; next_due: Date | string | null }[]>`
        WITH due AS (
          SELECT id FROM executor_queue
          WHERE run_at <= ${now}
            AND (lease_expires_at IS NULL OR lease_expires_at < ${now})
            AND function_id IN (${Prisma.join(functionIds)})
            ${kindFilter}
          ${order}
          LIMIT ${Math.max(0, limit)}
          FOR UPDATE SKIP LOCKED
        ),
        claimed AS (
          UPDATE executor_queue q SET lease_owner = ${newLeaseOwner(workerId)}, lease_expires_at = ${leaseUntil}
          FROM due WHERE q.id = due.id
          RETURNING q.*
        )
        SELECT
          (SELECT COALESCE(json_agg(c), '[]'::json) FROM claimed c) AS items,
          (SELECT MIN(CASE WHEN lease_expires_at IS NOT NULL AND lease_expires_at > run_at THEN lease_expires_at ELSE run_at END)
           FROM executor_queue
           WHERE function_id IN (${Prisma.join(functionIds)}) ${kindFilter} AND id NOT IN (SELECT id FROM due)) AS next_due`;
    const row = rows[0];
    const items = (row?.items ?? []).map(rawToItem).sort((a, b) => a.runAt.getTime() - b.runAt.getTime());
    return { items, nextDueAt: row?.next_due ? rawDate(row.next_due) : null };
  }

  async loadCall(runId: string): Promise<{ run: RunRecord; steps: StepRecord[] } | null> {
    const rows = await this.db.$queryRaw<Raw[]>`
      SELECT r.*, COALESCE((
        SELECT json_agg(json_build_object('step_id', s.step_id, 'seq', s.seq, 'op', s.op, 'name', s.name,
                                          'data', s.data, 'error', s.error, 'created_at', s.created_at) ORDER BY s.seq)
        FROM executor_steps s WHERE s.run_id = r.id), '[]'::json) AS memoized
      FROM executor_runs r WHERE r.id = ${runId}`;
    const row = rows[0];
    if (!row) return null;
    const steps = (row.memoized as Raw[]).map(
      (s): StepRecord => ({
        runId,
        stepId: s.step_id as string,
        seq: Number(s.seq),
        op: s.op as string,
        name: (s.name as string | null) ?? null,
        data: s.data ?? null,
        error: (s.error as SerializedError | null) ?? null,
        createdAt: rawDate(s.created_at),
      }),
    );
    return { run: rawToRun(row), steps };
  }

  async commitStepRun(
    c: StepRunCommit,
  ): Promise<{ item: QueueItem; seq: number; createdAt: Date; othersWrote: boolean } | null> {
    // Each CTE feeds the next, so a failed condition writes nothing: the item locked if still ours
    // (re-checked on its latest version), the run locked if active, the seq taken, the step inserted
    // (ON CONFLICT: memoized meanwhile), and only then the item turned into the next discovery call.
    const step = c.step;
    const rows = await this.db.$queryRaw<Raw[]>`
      WITH mine AS (
        SELECT id, rediscover FROM executor_queue
        WHERE id = ${c.itemId} AND lease_owner = ${c.owner} AND kind = 'call' FOR UPDATE
      ),
      run AS (
        SELECT id FROM executor_runs
        WHERE id = ${c.runId} AND status IN ('queued', 'running') AND EXISTS (SELECT 1 FROM mine)
          AND NOT EXISTS (SELECT 1 FROM executor_steps WHERE run_id = ${c.runId} AND step_id = ${step.stepId})
        FOR UPDATE
      ),
      seq AS (
        UPDATE executor_runs r SET step_seq = r.step_seq + 1, status = 'running',
          started_at = COALESCE(r.started_at, ${c.now}::timestamptz), updated_at = now()
        FROM run WHERE r.id = run.id
        RETURNING r.step_seq
      ),
      ins AS (
        INSERT INTO executor_steps (run_id, step_id, seq, op, name, data, error, created_at)
        SELECT ${c.runId}::text, ${step.stepId}::text, step_seq, ${step.op}::text, ${step.name ?? null}::text,
               ${jsonText(step.data)}::jsonb, NULL, now()
        FROM seq
        ON CONFLICT DO NOTHING
        RETURNING seq, created_at
      ),
      next AS (
        UPDATE executor_queue q SET
          rediscover = false, attempt = 0, run_at = ${c.now}::timestamptz,
          lease_owner = ${c.leaseUntil ? newLeaseOwner(c.workerId) : Prisma.sql`NULL`}, lease_expires_at = ${c.leaseUntil}::timestamptz
        FROM ins WHERE q.id = ${c.itemId}
        RETURNING q.*
      )
      SELECT next.*, ins.seq AS step_seq_new, ins.created_at AS step_created_at, mine.rediscover AS others_wrote
      FROM next, ins, mine`.catch((e: unknown) => {
      refusedData(e);
      throw e;
    });
    const row = rows[0];
    if (!row) return null;
    return {
      item: rawToItem(row),
      seq: Number(row.step_seq_new),
      createdAt: rawDate(row.step_created_at),
      othersWrote: Boolean(row.others_wrote),
    };
  }

  async heartbeat(itemId: string, owner: string, leaseUntil: Date): Promise<boolean> {
    const { count } = await this.db.executorQueueItem.updateMany({
      where: { id: itemId, leaseOwner: owner },
      data: { leaseExpiresAt: leaseUntil },
    });
    return count === 1;
  }

  async release(leases: Array<{ itemId: string; owner: string }>): Promise<void> {
    if (leases.length === 0) return;
    await this.db.executorQueueItem.updateMany({
      where: { OR: leases.map((l) => ({ id: l.itemId, leaseOwner: l.owner })) },
      data: { leaseOwner: null, leaseExpiresAt: null },
    });
  }

  async getRun(runId: string): Promise<RunRecord | null> {
    const row = await this.db.executorRun.findUnique({ where: { id: runId } });
    return row ? toRun(row) : null;
  }

  async listRuns(filter: RunFilter): Promise<RunRecord[]> {
    const status =
      filter.status === undefined ? undefined : Array.isArray(filter.status) ? { in: filter.status } : filter.status;
    const rows = await this.db.executorRun.findMany({
      where: {
        ...(filter.functionId ? { functionId: filter.functionId } : {}),
        ...(status ? { status } : {}),
        ...(filter.eventId ? { eventId: filter.eventId } : {}),
        ...(filter.parentRunId ? { parentRunId: filter.parentRunId } : {}),
      },
      orderBy: { id: "desc" },
      take: filter.limit ?? 100,
    });
    return rows.map(toRun);
  }

  async listSteps(runId: string): Promise<StepRecord[]> {
    const rows = await this.db.executorStep.findMany({ where: { runId }, orderBy: { seq: "asc" } });
    return rows.map(toStep);
  }

  async listWaits(runId: string): Promise<WaitRecord[]> {
    const rows = await this.db.executorWait.findMany({ where: { runId }, orderBy: { createdAt: "asc" } });
    return rows.map(toWait);
  }

  async listItems(runId: string): Promise<QueueItem[]> {
    const rows = await this.db.executorQueueItem.findMany({ where: { runId }, orderBy: { runAt: "asc" } });
    return rows.map(toItem);
  }

  async ping(): Promise<void> {
    await this.db.$queryRaw`SELECT 1`;
  }

  async prune(before: Date): Promise<{ runs: number; events: number }> {
    return this.db.$transaction(async (tx) => {
      const ended = { status: { in: ["completed", "failed", "cancelled"] }, endedAt: { lt: before } };
      const ids = (await tx.executorRun.findMany({ where: ended, select: { id: true } })).map((r) => r.id);
      await tx.executorStep.deleteMany({ where: { runId: { in: ids } } });
      const runs = await tx.executorRun.deleteMany({ where: { id: { in: ids } } });
      const events = await tx.executorEvent.deleteMany({ where: { receivedAt: { lt: before } } });
      return { runs: runs.count, events: events.count };
    });
  }
}

export function createPrismaStore(db: Db, opts: PrismaStoreOptions = {}): ExecutorStore {
  return new PrismaStore(db, opts);
}
