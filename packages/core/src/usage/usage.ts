// Request/usage records and the monthly summary of GET /v1/usage (DECISIONS.md "Accounts, keys, wallet").
import type { CoreDeps } from "../deps.ts";
import { CoreError } from "../errors.ts";
import { getBalance } from "../wallet/wallet.ts";

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
        }
      }
    });
    return this.inflight;
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
    await this.deps.db.$transaction(async (tx) => {
      // the rows as one statement over column arrays (Prisma's createMany marshals every row: at 2k req/s
      // that was a fifth of the process's CPU)
      await tx.$executeRaw`
        INSERT INTO usage_records (account_id, mode, api_key_id, method, endpoint, status, credits_charged, request_id, created_at)
        SELECT a::uuid, m::"KeyMode", k, me, e, st, c, r, t::timestamptz
        FROM unnest(${batch.map((e) => e.accountId)}::text[], ${batch.map((e) => e.mode)}::text[],
                    ${batch.map((e) => e.apiKeyId ?? null)}::text[], ${batch.map((e) => e.method)}::text[],
                    ${batch.map((e) => e.endpoint)}::text[], ${batch.map((e) => e.status)}::int[],
                    ${batch.map((e) => e.creditsCharged)}::int[], ${batch.map((e) => e.requestId)}::text[],
                    ${batch.map((e) => e.at.toISOString())}::text[]) AS t(a, m, k, me, e, st, c, r, t)`;
      // one statement for all totals; sorted so concurrent writers lock rows in the same order. Credits are
      // not added here: every charge adds itself when the wallet takes it (addChargeTx), which also covers
      // what no request carries (run steps, machine metering).
      await tx.$executeRaw`
        INSERT INTO usage_rollups (account_id, mode, period, endpoint, requests, credits_charged)
        SELECT a::uuid, m::"KeyMode", p, e, n, 0
        FROM unnest(${rows.map((r) => r.accountId)}::text[], ${rows.map((r) => r.mode)}::text[],
                    ${rows.map((r) => r.period)}::text[], ${rows.map((r) => r.endpoint)}::text[],
                    ${rows.map((r) => r.n)}::int[]) AS t(a, m, p, e, n)
        ON CONFLICT (account_id, mode, period, endpoint) DO UPDATE
        SET requests = usage_rollups.requests + EXCLUDED.requests`;
    });
  }
}

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

export async function usageSummary(
  deps: CoreDeps,
  args: { accountId: string; mode: "live" | "test"; period?: string },
): Promise<UsageSummary> {
  const now = deps.clock.now();
  const period = args.period ?? periodOf(now);
  if (!PERIOD_RE.test(period)) throw new CoreError("INVALID_PERIOD");
  const totals = await deps.db.usageRollup.findMany({
    where: { accountId: args.accountId, mode: args.mode, period },
    orderBy: { endpoint: "asc" },
  });
  const by_endpoint = totals.map((t) => ({
    endpoint: t.endpoint,
    requests: t.requests,
    credits_charged: t.creditsCharged,
  }));
  const credits = by_endpoint.reduce((s, e) => s + e.credits_charged, 0);
  const requests = by_endpoint.reduce((s, e) => s + e.requests, 0);
  const balance = await getBalance(deps, args.accountId);
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
