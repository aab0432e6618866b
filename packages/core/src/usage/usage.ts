// Request/usage records and the monthly summary of GET /v1/usage (DECISIONS.md "Accounts, keys, wallet").

import { CoreError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";

export interface UsageEvent {
  accountId: string;
  mode: "live" | "test";
  apiKeyId: string | null;
  method: string;
  endpoint: string;
  status: number;
  creditsCharged: number;
  requestId: string;
  at: Date;
}

/** UTC month of an instant, YYYY-MM: the period of GET /v1/usage. */
export function periodOf(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, "0")}`;
}

/** The endpoint of GET /v1/usage's own requests: the one request that changes nothing a summary reads. */
export const USAGE_ENDPOINT = "GET /v1/usage";

/**
 * How long a summary may reuse a read of the stored totals (UsageRecorder.readShared): the bound on how late
 * a change made outside this process's requests shows (another process's batch, a charge in the background, a
 * console top-up); this process's own requests always count at once.
 */
export const USAGE_READ_TTL_MS = 100;

/** Runs one statement with positional parameters ($1, $2...), prepared once under `name`: how the recorder
 * writes its batches when given one (apps/api passes a `pg` pool of its own). */
export type SqlExec = (q: { name: string; text: string; values: unknown[] }) => Promise<unknown>;

/**
 * A batch in ONE statement (atomic without an interactive transaction: one round trip, no BEGIN/COMMIT): the
 * rows, and in its data-modifying WITH, their monthly totals, sorted so concurrent writers lock rows in the same
 * order. Both as JSON text parameters ($1 rows, $2 totals): issue 16 measured nine column arrays costing Prisma
 * and pg an escaping call per element, then Prisma's raw query serialising the JSON text again and parsing it
 * back (5% of GET /v1/models' profile). Credits are not added here: every charge adds itself when the wallet
 * takes it (addChargeTx), which also covers what no request carries (run steps, machine metering).
 */
const BATCH_SQL = `
  WITH recorded AS (
    INSERT INTO usage_records (account_id, mode, api_key_id, method, endpoint, status, credits_charged, request_id, created_at)
    SELECT a::uuid, m::"KeyMode", k, me, e, st, c, r, t::timestamptz
    FROM json_to_recordset($1::json) AS t(a text, m text, k text, me text, e text, st int, c int, r text, t text))
  INSERT INTO usage_rollups (account_id, mode, period, endpoint, requests, credits_charged)
  SELECT a::uuid, m::"KeyMode", p, e, n, 0
  FROM json_to_recordset($2::json) AS t(a text, m text, p text, e text, n int)
  ON CONFLICT (account_id, mode, period, endpoint) DO UPDATE
  SET requests = usage_rollups.requests + EXCLUDED.requests`;

/** Requests recorded and not written yet, by endpoint, for one account, mode and month. */
export type PendingCounts = ReadonlyMap<string, number>;

const usageKey = (accountId: string, mode: string, period: string) => `${accountId}\u0000${mode}\u0000${period}`;

/**
 * Buffers usage rows and writes them in batches, off the request's critical path, together with the
 * monthly per-endpoint totals GET /v1/usage reads (one transaction: the totals always match the rows).
 * A batch that cannot be written (database down) goes back to the buffer and is retried, up to
 * `maxBuffered` events; beyond that the oldest are dropped and counted in the log.
 */
export class UsageRecorder {
  private buf: UsageEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> = Promise.resolve();
  /** batches taken from the buffer so far, and how many are being written now (see readWithPending) */
  private batchesStarted = 0;
  private writing = 0;
  /** the events of `buf` counted by account, mode, month and endpoint (kept with `buf`, never recomputed) */
  private unwritten = new Map<string, Map<string, number>>();
  /** the same counts for every event that left `buf` in a batch (being written or written; a refused batch
   * goes back), ever: what this process's batches added to the stored totals after a kept read */
  private batched = new Map<string, Map<string, number>>();
  /** stored-totals reads a summary may reuse (readShared), by account, then mode and month */
  private kept = new Map<string, Map<string, KeptRead>>();
  /** a sequence number per request recorded, and per account the number of its last one that may have
   * changed the stored totals (any request but a usage read) */
  private seq = 0;
  private changedAt = new Map<string, number>();
  /** the month of the last event, as [from, to) in ms, and its key: periodOf once a month, not per event */
  private month = { from: 0, to: 0, period: "" };
  private lastKey = { accountId: "", mode: "", period: "", key: "" };
  constructor(
    private readonly deps: CoreDeps,
    private readonly flushMs = 200,
    private readonly maxBatch = 500,
    private readonly maxBuffered = 50_000,
    private readonly readTtlMs = USAGE_READ_TTL_MS,
    /** batches through this instead of the Prisma client (same statement) */
    private readonly exec?: SqlExec,
  ) {}

  record(e: UsageEvent): void {
    this.buf.push(e);
    this.count(this.unwritten, e, 1);
    this.seq += 1;
    // a request of the account other than a usage read may have changed what the stored totals say (a
    // charge, a refund...): its kept reads are no longer used (readShared)
    if (e.endpoint !== USAGE_ENDPOINT) {
      this.changedAt.set(e.accountId, this.seq);
      if (this.changedAt.size > 100_000) this.forgetKept();
    }
    if (this.buf.length >= this.maxBatch) void this.flush();
    else this.schedule();
  }

  private periodOfEvent(e: UsageEvent): string {
    const t = e.at.getTime();
    const m = this.month;
    if (t >= m.from && t < m.to) return m.period;
    const period = periodOf(e.at);
    const y = e.at.getUTCFullYear();
    const mo = e.at.getUTCMonth();
    this.month = { from: Date.UTC(y, mo, 1), to: Date.UTC(y, mo + 1, 1), period };
    return period;
  }

  /** Adds d (1 or -1) to the count of the event's account, mode, month and endpoint in `counts`. */
  private count(counts: Map<string, Map<string, number>>, e: UsageEvent, d: number) {
    const period = this.periodOfEvent(e);
    const last = this.lastKey;
    let key: string;
    if (last.accountId === e.accountId && last.mode === e.mode && last.period === period) key = last.key;
    else {
      key = usageKey(e.accountId, e.mode, period);
      this.lastKey = { accountId: e.accountId, mode: e.mode, period, key };
    }
    let m = counts.get(key);
    if (!m) {
      m = new Map();
      counts.set(key, m);
    }
    const n = (m.get(e.endpoint) ?? 0) + d;
    if (n > 0) m.set(e.endpoint, n);
    else {
      m.delete(e.endpoint);
      if (m.size === 0) counts.delete(key);
    }
  }

  /** The unwritten counts of `key`, plus what this process's batches added since a kept read (`since`: the
   * batched counts when it was read). */
  private pendingOf(key: string, since?: ReadonlyMap<string, number>): PendingCounts {
    const m = this.unwritten.get(key);
    const out = m ? new Map(m) : new Map<string, number>();
    const b = since && this.batched.get(key);
    if (b)
      for (const [endpoint, n] of b) {
        const d = n - (since.get(endpoint) ?? 0);
        if (d > 0) out.set(endpoint, (out.get(endpoint) ?? 0) + d);
      }
    return out;
  }

  private batchedOf(key: string): ReadonlyMap<string, number> {
    const m = this.batched.get(key);
    return m ? new Map(m) : new Map();
  }

  private schedule(delay = this.flushMs) {
    if (!this.timer) this.timer = setTimeout(() => void this.flush(), delay);
  }

  /** Writes everything buffered; resolves once it is stored (or put back after a failure). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.inflight = this.inflight.then(async () => {
      while (this.buf.length > 0) {
        const batch = this.buf.splice(0, this.maxBatch);
        // the batched counts only serve kept reads: dropped with them now and then (no read in flight is kept
        // after this, as a batch starts here)
        if (this.batched.size > 10_000) this.forgetKept();
        for (const e of batch) {
          this.count(this.unwritten, e, -1);
          this.count(this.batched, e, 1);
        }
        this.batchesStarted += 1;
        this.writing += 1;
        try {
          await this.write(batch);
        } catch (err) {
          this.buf.unshift(...batch);
          for (const e of batch) {
            this.count(this.batched, e, -1);
            this.count(this.unwritten, e, 1);
          }
          const over = this.buf.length - this.maxBuffered;
          if (over > 0) for (const e of this.buf.splice(0, over)) this.count(this.unwritten, e, -1);
          this.deps.logger.error("usage records not written yet; will retry", {
            buffered: this.buf.length,
            dropped: Math.max(0, over),
            err: String(err),
          });
          this.schedule(Math.max(this.flushMs, 1000));
          return;
        } finally {
          this.writing -= 1;
        }
      }
    });
    return this.inflight;
  }

  /**
   * Runs `read` on the stored totals and returns its value with the counts of the events recorded here and
   * not stored yet for `key` (account, mode, month), each event counted exactly once (in the read or in
   * `pending`): GET /v1/usage counts this process's latest requests without waiting for a batch write (it
   * used to flush first: one write transaction per call, 170 req/s in docs/benchmarks.md). A read that
   * overlaps a batch write is repeated once the write is done; after three overlaps it flushes and reads.
   * `batched`: this process's batched counts of `key` the read holds (null after the flush: not kept).
   */
  private async readWithPending<T>(
    key: string,
    read: () => Promise<T>,
  ): Promise<{ value: T; pending: PendingCounts; batched: ReadonlyMap<string, number> | null }> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (this.writing > 0) {
        await this.inflight;
        continue;
      }
      const started = this.batchesStarted;
      const value = await read();
      // no batch left the buffer during the read: the stored totals read hold none of the buffer's events
      if (this.batchesStarted === started && this.writing === 0)
        return { value, pending: this.pendingOf(key), batched: this.batchedOf(key) };
    }
    await this.flush();
    const started = this.batchesStarted;
    const value = await read();
    const clean = this.batchesStarted === started && this.writing === 0;
    return { value, pending: clean ? this.pendingOf(key) : new Map(), batched: null };
  }

  /**
   * The stored totals of an account, mode and month (`read`) with this process's unwritten requests, for
   * GET /v1/usage. A read is kept and reused for up to `readTtlMs` (USAGE_READ_TTL_MS) unless a request of
   * the account other than a usage read was recorded since it began (a predict's charge, a top-up through the
   * API... commit before their request is answered and recorded, and a request is recorded before this
   * process reads the next one, so a caller's own earlier requests, and what they charged, always count).
   * Each answer adds to it this process's requests not in it: those still buffered, and those its batches
   * moved into the stored totals since the read (counted as they leave the buffer; a refused batch returns),
   * so this process's own batches do not end a kept read. What changes the totals from outside this
   * process's requests (another API process's batches, a charge made in the background, a top-up in the
   * console) shows within `readTtlMs`. Issue 16: GET /v1/usage at 20 connections read the totals about 1,500
   * times a second, and waited for each batch write; with kept reads, about ten times a second.
   *
   * Without a kept read, concurrent callers of the same key share reads: a caller never joins a read that is
   * already running (it began before the caller arrived): it starts its own while fewer than
   * `MAX_SHARED_READS` run for the key, else it joins the one read that starts when a running one ends,
   * shared by everyone who arrived meanwhile.
   */
  readShared<T>(
    args: { accountId: string; mode: string; period: string },
    read: () => Promise<T>,
  ): Promise<{ value: T; pending: PendingCounts }> {
    type R = { value: T; pending: PendingCounts };
    const key = usageKey(args.accountId, args.mode, args.period);
    const now = this.deps.clock.now().getTime();
    const k = this.kept.get(args.accountId)?.get(key);
    if (k && now - k.at < this.readTtlMs && (this.changedAt.get(args.accountId) ?? 0) <= k.seq)
      return Promise.resolve({ value: k.value as T, pending: this.pendingOf(key, k.batched) });
    let slot = this.shared.get(key);
    if (!slot) {
      slot = { running: 0 };
      this.shared.set(key, slot);
    }
    const s = slot;
    if (s.next) return s.next.promise as Promise<R>;
    const run = () => {
      const at = this.deps.clock.now().getTime();
      const seq = this.seq;
      return this.readWithPending(key, read).then((r) => {
        if (r.batched !== null) this.keep(args.accountId, key, { value: r.value, batched: r.batched, at, seq });
        return { value: r.value, pending: r.pending };
      });
    };
    if (s.running < MAX_SHARED_READS) return this.runShared(key, s, run);
    let start!: () => void;
    const promise = new Promise<void>((r) => {
      start = r;
    }).then(() => this.runShared(key, s, run));
    s.next = { promise, start };
    return promise;
  }

  private keep(accountId: string, key: string, read: KeptRead) {
    let m = this.kept.get(accountId);
    if (!m) {
      if (this.kept.size >= 10_000) this.kept.clear();
      m = new Map();
      this.kept.set(accountId, m);
    }
    const old = m.get(key);
    // reads may end out of order: keep the one that began last
    if (!old || old.seq < read.seq || (old.seq === read.seq && old.at <= read.at)) m.set(key, read);
  }

  /** Drops every kept read (and with them the change marks and batched counts they were checked against). */
  private forgetKept() {
    this.kept.clear();
    this.changedAt.clear();
    this.batched.clear();
  }

  private shared = new Map<string, SharedReads>();

  private runShared<T>(key: string, s: SharedReads, run: () => Promise<T>): Promise<T> {
    s.running += 1;
    return run().finally(() => {
      s.running -= 1;
      const next = s.next;
      if (next) {
        s.next = undefined;
        next.start();
      } else if (s.running === 0 && this.shared.get(key) === s) this.shared.delete(key);
    });
  }

  private async write(batch: UsageEvent[]): Promise<void> {
    const totals = new Map<string, { accountId: string; mode: string; period: string; endpoint: string; n: number }>();
    for (const e of batch) {
      const period = this.periodOfEvent(e);
      const k = `${e.accountId}\u0000${e.mode}\u0000${period}\u0000${e.endpoint}`;
      const t = totals.get(k) ?? { accountId: e.accountId, mode: e.mode, period, endpoint: e.endpoint, n: 0 };
      t.n++;
      totals.set(k, t);
    }
    const rows = [...totals.values()].sort((x, y) =>
      x.accountId + x.period + x.endpoint < y.accountId + y.period + y.endpoint ? -1 : 1,
    );
    const values = [
      JSON.stringify(
        batch.map((e) => ({
          a: e.accountId,
          m: e.mode,
          k: e.apiKeyId ?? null,
          me: e.method,
          e: e.endpoint,
          st: e.status,
          c: e.creditsCharged,
          r: e.requestId,
          t: e.at.toISOString(),
        })),
      ),
      JSON.stringify(rows.map((r) => ({ a: r.accountId, m: r.mode, p: r.period, e: r.endpoint, n: r.n }))),
    ];
    if (this.exec) await this.exec({ name: "usage_batch", text: BATCH_SQL, values });
    else await this.deps.db.$executeRawUnsafe(BATCH_SQL, ...values);
  }
}

/** A stored-totals read kept for reuse: this process's batched counts it holds, the request sequence when it
 * began, and when. */
interface KeptRead {
  value: unknown;
  batched: ReadonlyMap<string, number>;
  seq: number;
  at: number;
}

/** Reads of one key running now, and the one that starts when one of them ends (readShared). */
interface SharedReads {
  running: number;
  next?: { promise: Promise<unknown>; start: () => void };
}

const MAX_SHARED_READS = 2;

/** What GET /v1/usage calls the per-minute machine charges (no request carries them). */
export const MACHINE_METERING_ENDPOINT = "machines (metering)";

type RawTx = Pick<CoreDeps["db"], "$executeRaw">;

/**
 * Adds a charge the wallet just took to the month's totals, inside the wallet's own transaction: the
 * credits GET /v1/usage reports are exactly what left the wallet (captures and machine metering; live
 * mode, as test keys never pay).
 */
export async function addChargeTx(
  tx: RawTx,
  c: { accountId: string; endpoint: string; credits: number; at: Date },
): Promise<void> {
  if (c.credits <= 0) return;
  await tx.$executeRaw`
    INSERT INTO usage_rollups (account_id, mode, period, endpoint, requests, credits_charged)
    VALUES (${c.accountId}::uuid, 'live'::"KeyMode", ${periodOf(c.at)}, ${c.endpoint}, 0, ${c.credits})
    ON CONFLICT (account_id, mode, period, endpoint) DO UPDATE
    SET credits_charged = usage_rollups.credits_charged + EXCLUDED.credits_charged`;
}

export const PERIOD_RE = /^[0-9]{4}-(0[1-9]|1[0-2])$/;

/**
 * One statement, one round trip: the month's totals and the wallet balance (a profile of GET /v1/usage had two
 * Prisma queries a call, an eighth of the process in Prisma's client; docs/benchmarks.md).
 */
function readTotals(deps: CoreDeps, accountId: string, mode: "live" | "test", period: string) {
  return deps.db.$queryRaw<
    { balance: number; endpoint: string | null; requests: number | null; credits: number | null }[]
  >`
    SELECT a.balance_credits AS balance, r.endpoint, r.requests, r.credits_charged AS credits
    FROM accounts a
    LEFT JOIN usage_rollups r ON r.account_id = a.id AND r.mode = ${mode}::"KeyMode" AND r.period = ${period}
    WHERE a.id = ${accountId}::uuid
    ORDER BY r.endpoint`;
}

export interface UsageSummary {
  period: string;
  mode: "live" | "test";
  credits_charged: number;
  cost_cents: number;
  requests: number;
  by_endpoint: { endpoint: string; requests: number; credits_charged: number }[];
  wallet: { balance_credits: number };
  total_requests: number;
  total_credits: number;
  total_cost_cents: number;
  breakdown: Record<string, { requests: number; credits: number; cost_cents: number }>;
  balance: number;
  wallet_balance_cents: number;
  wallet_balance_usd: string;
}

/**
 * The month's totals of an account and mode. With `deps.usage` (the service's recorder) the requests it
 * recorded and has not written yet count too, so a caller sees its own latest requests at once.
 */
export async function usageSummary(
  deps: CoreDeps & { usage?: UsageRecorder },
  args: { accountId: string; mode: "live" | "test"; period?: string },
): Promise<UsageSummary> {
  const now = deps.clock.now();
  const period = args.period ?? periodOf(now);
  if (!PERIOD_RE.test(period)) throw new CoreError("INVALID_PERIOD");
  // the read is an argument, not a named closure: tsx's keepNames wraps each named one in a defineProperty call
  const { value: rows, pending } = deps.usage
    ? await deps.usage.readShared({ accountId: args.accountId, mode: args.mode, period }, () =>
        readTotals(deps, args.accountId, args.mode, period),
      )
    : { value: await readTotals(deps, args.accountId, args.mode, period), pending: new Map() as PendingCounts };
  const balance = Number(rows[0]?.balance ?? 0);
  const totals = rows.flatMap((r) =>
    r.endpoint === null
      ? []
      : [{ endpoint: r.endpoint, requests: Number(r.requests ?? 0), creditsCharged: Number(r.credits ?? 0) }],
  );
  const byName = new Map(
    totals.map((t) => [t.endpoint, { endpoint: t.endpoint, requests: t.requests, credits_charged: t.creditsCharged }]),
  );
  // the recorder's unwritten requests of this account, mode and month, by endpoint
  for (const [endpoint, n] of pending) {
    const t = byName.get(endpoint) ?? { endpoint, requests: 0, credits_charged: 0 };
    t.requests += n;
    byName.set(endpoint, t);
  }
  // endpoint order, as the query's ORDER BY (endpoint names are ASCII: the same order in every collation)
  const by_endpoint = [...byName.values()].sort((x, y) =>
    x.endpoint < y.endpoint ? -1 : x.endpoint > y.endpoint ? 1 : 0,
  );
  const credits = by_endpoint.reduce((s, e) => s + e.credits_charged, 0);
  const requests = by_endpoint.reduce((s, e) => s + e.requests, 0);
  return {
    period,
    mode: args.mode,
    credits_charged: credits,
    cost_cents: credits,
    requests,
    by_endpoint,
    wallet: { balance_credits: balance },
    // DECISIONS.md "Compatibility amendments (2026-11-25)": the commercial contract's names for the same figures
    total_requests: requests,
    total_credits: credits,
    total_cost_cents: credits,
    breakdown: Object.fromEntries(
      by_endpoint.map((e) => [
        e.endpoint,
        { requests: e.requests, credits: e.credits_charged, cost_cents: e.credits_charged },
      ]),
    ),
    balance,
    wallet_balance_cents: balance,
    wallet_balance_usd: (balance / 100).toFixed(2),
  };
}
