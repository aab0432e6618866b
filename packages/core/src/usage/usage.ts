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
  constructor(
    private readonly deps: CoreDeps,
    private readonly flushMs = 200,
    private readonly maxBatch = 500,
    private readonly maxBuffered = 50_000,
  ) {}

  record(e: UsageEvent): void {
    this.buf.push(e);
    if (this.buf.length >= this.maxBatch) void this.flush();
    else this.schedule();
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
        this.batchesStarted += 1;
        this.writing += 1;
        try {
          await this.write(batch);
        } catch (err) {
          this.buf.unshift(...batch);
          const over = this.buf.length - this.maxBuffered;
          if (over > 0) this.buf.splice(0, over);
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
   * Runs `read` on the stored totals and returns its value with the events recorded here and not stored
   * yet, each event counted exactly once (in the read or in `pending`): GET /v1/usage counts this process's
   * latest requests without waiting for a batch write (it used to flush first: one write transaction per
   * call, 170 req/s in docs/benchmarks.md). A read that overlaps a batch write is repeated once the write
   * is done; after three overlaps it flushes and reads, as before.
   */
  async readWithPending<T>(read: () => Promise<T>): Promise<{ value: T; pending: UsageEvent[] }> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if (this.writing > 0) {
        await this.inflight;
        continue;
      }
      const started = this.batchesStarted;
      const pending = this.buf.slice();
      const value = await read();
      // no batch left the buffer during the read: the stored totals read hold none of `pending`
      if (this.batchesStarted === started && this.writing === 0) return { value, pending };
    }
    await this.flush();
    return { value: await read(), pending: [] };
  }

  /**
   * `readWithPending` shared by concurrent callers of the same `key`. A caller never joins a read that is
   * already running (it began before the caller arrived): it starts its own while fewer than
   * `MAX_SHARED_READS` run for the key, else it joins the one read that starts when a running one ends,
   * shared by everyone who arrived meanwhile. So every caller gets a read begun after its request, as if it
   * had run its own, while a burst of identical calls costs at most two queries in flight instead of one per
   * call (GET /v1/usage at 20 connections: docs/benchmarks.md, issue 16).
   */
  readShared<T>(key: string, read: () => Promise<T>): Promise<{ value: T; pending: UsageEvent[] }> {
    type R = { value: T; pending: UsageEvent[] };
    let slot = this.shared.get(key);
    if (!slot) {
      slot = { running: 0 };
      this.shared.set(key, slot);
    }
    const s = slot;
    if (s.next) return s.next.promise as Promise<R>;
    if (s.running < MAX_SHARED_READS) return this.runShared(key, s, () => this.readWithPending(read));
    let start!: () => void;
    const promise = new Promise<void>((r) => {
      start = r;
    }).then(() => this.runShared(key, s, () => this.readWithPending(read)));
    s.next = { promise, start };
    return promise;
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
      const period = periodOf(e.at);
      const k = `${e.accountId}\u0000${e.mode}\u0000${period}\u0000${e.endpoint}`;
      const t = totals.get(k) ?? { accountId: e.accountId, mode: e.mode, period, endpoint: e.endpoint, n: 0 };
      t.n++;
      totals.set(k, t);
    }
    const rows = [...totals.values()].sort((x, y) =>
      x.accountId + x.period + x.endpoint < y.accountId + y.period + y.endpoint ? -1 : 1,
    );
    // ONE statement (atomic without an interactive transaction: one round trip, no BEGIN/COMMIT): the rows
    // over column arrays (Prisma's createMany marshals every row: at 2k req/s that was a fifth of the
    // process's CPU), and in its data-modifying WITH, all totals, sorted so concurrent writers lock rows in
    // the same order. Credits are not added here: every charge adds itself when the wallet takes it
    // (addChargeTx), which also covers what no request carries (run steps, machine metering).
    await this.deps.db.$executeRaw`
      WITH recorded AS (
        INSERT INTO usage_records (account_id, mode, api_key_id, method, endpoint, status, credits_charged, request_id, created_at)
        SELECT a::uuid, m::"KeyMode", k, me, e, st, c, r, t::timestamptz
        FROM unnest(${batch.map((e) => e.accountId)}::text[], ${batch.map((e) => e.mode)}::text[],
                    ${batch.map((e) => e.apiKeyId ?? null)}::text[], ${batch.map((e) => e.method)}::text[],
                    ${batch.map((e) => e.endpoint)}::text[], ${batch.map((e) => e.status)}::int[],
                    ${batch.map((e) => e.creditsCharged)}::int[], ${batch.map((e) => e.requestId)}::text[],
                    ${batch.map((e) => e.at.toISOString())}::text[]) AS t(a, m, k, me, e, st, c, r, t))
      INSERT INTO usage_rollups (account_id, mode, period, endpoint, requests, credits_charged)
      SELECT a::uuid, m::"KeyMode", p, e, n, 0
      FROM unnest(${rows.map((r) => r.accountId)}::text[], ${rows.map((r) => r.mode)}::text[],
                  ${rows.map((r) => r.period)}::text[], ${rows.map((r) => r.endpoint)}::text[],
                  ${rows.map((r) => r.n)}::int[]) AS t(a, m, p, e, n)
      ON CONFLICT (account_id, mode, period, endpoint) DO UPDATE
      SET requests = usage_rollups.requests + EXCLUDED.requests`;
  }
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
  // one statement, one round trip: the month's totals and the wallet balance (a profile of GET /v1/usage
  // had two Prisma queries a call, an eighth of the process in Prisma's client; docs/benchmarks.md)
  const read = () =>
    deps.db.$queryRaw<{ balance: number; endpoint: string | null; requests: number | null; credits: number | null }[]>`
      SELECT a.balance_credits AS balance, r.endpoint, r.requests, r.credits_charged AS credits
      FROM accounts a
      LEFT JOIN usage_rollups r ON r.account_id = a.id AND r.mode = ${args.mode}::"KeyMode" AND r.period = ${period}
      WHERE a.id = ${args.accountId}::uuid
      ORDER BY r.endpoint`;
  const { value: rows, pending } = deps.usage
    ? await deps.usage.readShared(`${args.accountId}\u0000${args.mode}\u0000${period}`, read)
    : { value: await read(), pending: [] };
  const balance = Number(rows[0]?.balance ?? 0);
  const totals = rows.flatMap((r) =>
    r.endpoint === null
      ? []
      : [{ endpoint: r.endpoint, requests: Number(r.requests ?? 0), creditsCharged: Number(r.credits ?? 0) }],
  );
  const byName = new Map(
    totals.map((t) => [t.endpoint, { endpoint: t.endpoint, requests: t.requests, credits_charged: t.creditsCharged }]),
  );
  // the period as [from, to) in ms: a comparison per pending event, not a date formatting
  const from = Date.UTC(Number(period.slice(0, 4)), Number(period.slice(5, 7)) - 1, 1);
  const to = Date.UTC(Number(period.slice(0, 4)), Number(period.slice(5, 7)), 1);
  for (const e of pending) {
    const at = e.at.getTime();
    if (e.accountId !== args.accountId || e.mode !== args.mode || at < from || at >= to) continue;
    const t = byName.get(e.endpoint) ?? { endpoint: e.endpoint, requests: 0, credits_charged: 0 };
    t.requests += 1;
    byName.set(e.endpoint, t);
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
