// Per-key fixed-window rate limits (DECISIONS.md "Tiers and numeric limits"). The window counters live
// in a store: in-process memory on the embedded default, or Redis / PostgreSQL so that several API
// processes sharing the store enforce one limit together.
import type { Redis } from "ioredis";
import pg from "pg";

export const TIER_REQUESTS_PER_MINUTE = { free: 60, starter: 300, professional: 1000, enterprise: 5000 } as const;
export type Tier = keyof typeof TIER_REQUESTS_PER_MINUTE;

export interface RateLimitStore {
  readonly kind: "memory" | "redis" | "postgres";
  /** Counts one hit in the window starting at windowStart; returns the count including it. */
  hit(bucket: string, windowStart: number, windowMs: number): Promise<number>;
  close?(): Promise<void>;
}

export class MemoryStore implements RateLimitStore {
  readonly kind = "memory" as const;
  private windows = new Map<string, { start: number; count: number }>();
  async hit(bucket: string, windowStart: number): Promise<number> {
    const w = this.windows.get(bucket);
    if (!w || w.start !== windowStart) {
      this.windows.set(bucket, { start: windowStart, count: 1 });
      if (this.windows.size > 100_000) this.sweep(windowStart);
      return 1;
    }
    w.count += 1;
    return w.count;
  }
  private sweep(current: number) {
    for (const [k, v] of this.windows) if (v.start !== current) this.windows.delete(k);
  }
}

export class RedisStore implements RateLimitStore {
  readonly kind = "redis" as const;
  constructor(private readonly redis: Redis) {}
  async hit(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    const key = `rl:${bucket}:${windowStart}`;
    const r = await this.redis
      .multi()
      .incr(key)
      .pexpire(key, windowMs * 2)
      .exec();
    return Number(r?.[0]?.[1] ?? 0);
  }
  async close() {
    this.redis.disconnect();
  }
}

/**
 * Window counters in PostgreSQL, on a small pool of its own: one upsert per authenticated request is the
 * hottest query of the service, and plain `pg` with a named (prepared) statement costs a fraction of a
 * Prisma raw query (GET /v1/models 1,597 -> 1,835 req/s, docs/benchmarks.md).
 */
export class PostgresStore implements RateLimitStore {
  readonly kind = "postgres" as const;
  private lastSweep = 0;
  constructor(private readonly pool: pg.Pool) {}
  static fromUrl(databaseUrl: string): PostgresStore {
    const pool = new pg.Pool({
      connectionString: databaseUrl,
      max: 4,
      // a dead database answers within seconds (503 DB_UNAVAILABLE), never a hang
      connectionTimeoutMillis: 3000,
      idleTimeoutMillis: 30_000,
      query_timeout: 10_000,
    });
    pool.on("error", () => {}); // an idle client that loses its server is replaced on the next hit
    return new PostgresStore(pool);
  }
  async hit(bucket: string, windowStart: number, windowMs: number): Promise<number> {
    const r = await this.pool.query<{ count: number }>({
      name: "rate_limit_hit",
      text: `INSERT INTO rate_limit_windows (bucket, window_start, count, expires_at)
             VALUES ($1, $2, 1, $3)
             ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
             RETURNING count`,
      values: [bucket, windowStart, new Date(windowStart + windowMs * 2)],
    });
    if (windowStart - this.lastSweep > windowMs) {
      this.lastSweep = windowStart;
      this.pool.query("DELETE FROM rate_limit_windows WHERE expires_at < now()").catch(() => {});
    }
    return r.rows[0]?.count ?? 1;
  }
  async close() {
    await this.pool.end();
  }
}

export interface RateLimitResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** seconds until the window resets */
  reset: number;
}

export class RateLimiter {
  constructor(
    readonly store: RateLimitStore,
    private readonly scale = 1,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  limitFor(tier: Tier): number {
    return Math.max(1, Math.floor(TIER_REQUESTS_PER_MINUTE[tier] * this.scale));
  }

  async check(keyId: string, tier: Tier): Promise<RateLimitResult> {
    const t = this.now();
    const windowStart = t - (t % this.windowMs);
    const limit = this.limitFor(tier);
    const count = await this.store.hit(`key:${keyId}`, windowStart, this.windowMs);
    return {
      allowed: count <= limit,
      limit,
      remaining: Math.max(0, limit - count),
      reset: Math.max(1, Math.ceil((windowStart + this.windowMs - t) / 1000)),
    };
  }
}

export function rateLimitHeaders(r: RateLimitResult): Record<string, string> {
  const h: Record<string, string> = {};
  for (const p of ["X-RateLimit-", "RateLimit-"]) {
    h[`${p}Limit`] = String(r.limit);
    h[`${p}Remaining`] = String(r.remaining);
    h[`${p}Reset`] = String(r.reset);
  }
  return h;
}
