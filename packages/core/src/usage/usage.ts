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

/** Buffers usage rows and writes them in batches, off the request's critical path. */
export class UsageRecorder {
  private buf: UsageEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private inflight: Promise<void> = Promise.resolve();
  constructor(
    private readonly deps: CoreDeps,
    private readonly flushMs = 200,
    private readonly maxBatch = 200,
  ) {}

  record(e: UsageEvent): void {
    this.buf.push(e);
    if (this.buf.length >= this.maxBatch) void this.flush();
    else if (!this.timer) this.timer = setTimeout(() => void this.flush(), this.flushMs);
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.buf;
    this.buf = [];
    if (batch.length === 0) return this.inflight;
    this.inflight = this.inflight.then(() =>
      this.deps.db.usageRecord
        .createMany({
          data: batch.map((e) => ({
            accountId: e.accountId,
            mode: e.mode,
            apiKeyId: e.apiKeyId,
            method: e.method,
            endpoint: e.endpoint,
            status: e.status,
            creditsCharged: e.creditsCharged,
            requestId: e.requestId,
            createdAt: e.at,
          })),
        })
        .then(
          () => {},
          (err) => this.deps.logger.error("usage records lost", { count: batch.length, err: String(err) }),
        ),
    );
    return this.inflight;
  }
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
}

export async function usageSummary(
  deps: CoreDeps,
  args: { accountId: string; mode: "live" | "test"; period?: string },
): Promise<UsageSummary> {
  const now = deps.clock.now();
  const period = args.period ?? `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`;
  if (!PERIOD_RE.test(period)) throw new CoreError("INVALID_PERIOD");
  const [y, m] = period.split("-").map(Number) as [number, number];
  const from = new Date(Date.UTC(y, m - 1, 1));
  const to = new Date(Date.UTC(y, m, 1));
  const groups = await deps.db.usageRecord.groupBy({
    by: ["endpoint"],
    where: { accountId: args.accountId, mode: args.mode, createdAt: { gte: from, lt: to } },
    _count: { _all: true },
    _sum: { creditsCharged: true },
    orderBy: { endpoint: "asc" },
  });
  const by_endpoint = groups.map((g) => ({
    endpoint: g.endpoint,
    requests: g._count._all,
    credits_charged: g._sum.creditsCharged ?? 0,
  }));
  const credits = by_endpoint.reduce((s, e) => s + e.credits_charged, 0);
  return {
    period,
    mode: args.mode,
    credits_charged: credits,
    cost_cents: credits,
    requests: by_endpoint.reduce((s, e) => s + e.requests, 0),
    by_endpoint,
    wallet: { balance_credits: await getBalance(deps, args.accountId) },
  };
}
