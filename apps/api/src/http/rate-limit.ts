// Per-key fixed-window rate limits (DECISIONS.md "Tiers and numeric limits"). The window counters live
// in a store: in-process memory on the embedded default, or Redis / PostgreSQL so that several API
// processes sharing the store enforce one limit together. With a shared store each process takes tokens
// in leases (several at once, the next lease fetched in the background) instead of one round trip per
// request: see RateLimiter and docs/api.md "Rate limits".
import type { Redis } from "ioredis";
import pg from "pg";

export const TIER_REQUESTS_PER_MINUTE = { free: 60, starter: 300, professional: 1000, enterprise: 5000 } as const;
export type Tier = keyof typeof TIER_REQUESTS_PER_MINUTE;

export interface RateLimitStore {
  readonly kind: "memory" | "redis" | "postgres";
  /** Counts n hits (default 1) in the window starting at windowStart; returns the count including them. */
  hit(bucket: string, windowStart: number, windowMs: number, n?: number): Promise<number>;
  close?(): Promise<void>;
}

export class MemoryStore implements RateLimitStore {
  readonly kind = "memory" as const;
  private windows = new Map<string, { start: number; count: number }>();
  async hit(bucket: string, windowStart: number, _windowMs?: number, n = 1): Promise<number> {
    const w = this.windows.get(bucket);
    if (!w || w.start !== windowStart) {
      this.windows.set(bucket, { start: windowStart, count: n });
      if (this.windows.size > 100_000) this.sweep(windowStart);
      return n;
    }
    w.count += n;
    return w.count;
  }
  private sweep(current: number) {
    for (const [k, v] of this.windows) if (v.start !== current) this.windows.delete(k);
  }
}

export class RedisStore implements RateLimitStore {
  readonly kind = "redis" as const;
  constructor(private readonly redis: Redis) {}
  async hit(bucket: string, windowStart: number, windowMs: number, n = 1): Promise<number> {
    const key = `rl:${bucket}:${windowStart}`;
    const r = await this.redis
      .multi()
      .incrby(key, n)
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
  async hit(bucket: string, windowStart: number, windowMs: number, n = 1): Promise<number> {
    const r = await this.pool.query<{ count: number }>({
      name: "rate_limit_hit_n",
      text: `INSERT INTO rate_limit_windows (bucket, window_start, count, expires_at)
             VALUES ($1, $2, $4, $3)
             ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + $4
             RETURNING count`,
      values: [bucket, windowStart, new Date(windowStart + windowMs * 2), n],
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

/**
 * Tokens one lease takes from a shared store: a hundredth of the limit (limits under 200 per window: 1, a
 * store round trip per request). A key then costs each process about 200 store round trips per window
 * whatever its rate, and the error stays a fixed share of the limit.
 */
export function leaseSize(limit: number): number {
  return Math.max(1, Math.floor(limit / 100));
}

/** One key's tokens in this process for the current window. */
interface Lease {
  windowStart: number;
  /** tokens taken from the store and not used yet */
  tokens: number;
  /** the store's count after our last lease (every process's tokens, used or not) */
  storeCount: number;
  /** the window is used up in the store: refuse without asking it again until the window ends */
  exhausted: boolean;
  /** the lease being fetched, if any */
  pending: Promise<void> | null;
}

/**
 * Fixed-window limits per key. With the in-process store every request counts itself (exact). With a shared
 * store (PostgreSQL, Redis) a process takes up to `leaseSize(limit)` tokens in one `hit` and spends them
 * locally, topping them up in the background when half is spent, so a request waits for the store only at
 * the first call of a key in a window (or when it outruns the refills). Bounds (docs/api.md "Rate limits"):
 * never more than `limit` requests per window in total (a token is only spent once it was counted in the
 * store); a process holds at most one lease unspent, so while it holds tokens the other processes may be
 * refused up to `leaseSize` requests early per process holding them (those tokens stay usable where they
 * are, and are lost at the window's end). Limits below 200 per window have a lease of 1 token: one store
 * round trip per request, exact as before.
 */
export class RateLimiter {
  private leases = new Map<string, Lease>();
  constructor(
    readonly store: RateLimitStore,
    private readonly scale = 1,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  limitFor(tier: Tier): number {
    return Math.max(1, Math.floor(TIER_REQUESTS_PER_MINUTE[tier] * this.scale));
  }

  check(keyId: string, tier: Tier): Promise<RateLimitResult> {
    return this.take(`key:${keyId}`, this.limitFor(tier));
  }

  /** One request against `limit` per window in `bucket` (leased as above; the driver routes use it too). */
  async take(bucket: string, limit: number): Promise<RateLimitResult> {
    const t = this.now();
    const windowStart = t - (t % this.windowMs);
    const reset = Math.max(1, Math.ceil((windowStart + this.windowMs - t) / 1000));
    const lease = leaseSize(limit);
    if (this.store.kind === "memory" || lease === 1) {
      const count = await this.store.hit(bucket, windowStart, this.windowMs);
      return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), reset };
    }
    let l = this.leases.get(bucket);
    if (!l || l.windowStart !== windowStart) {
      l = { windowStart, tokens: 0, storeCount: 0, exhausted: false, pending: null };
      this.leases.set(bucket, l);
      if (this.leases.size > 100_000) this.sweep(windowStart);
    }
    // spend a local token, else wait for a lease (the one in flight, or a new one)
    while (l.tokens === 0 && !l.exhausted) await this.refill(bucket, l, limit, lease);
    if (l.tokens === 0) return { allowed: false, limit, remaining: 0, reset };
    l.tokens -= 1;
    // refill before the tokens run out: the next requests do not wait for the store
    if (l.tokens <= lease / 2 && !l.exhausted && !l.pending) void this.refill(bucket, l, limit, lease).catch(() => {});
    return { allowed: true, limit, remaining: Math.max(0, limit - (l.storeCount - l.tokens)), reset };
  }

  /** Tops the local tokens up to `lease` (so a process never holds more than one lease unspent). */
  private refill(bucket: string, l: Lease, limit: number, lease: number): Promise<void> {
    if (l.pending) return l.pending;
    const n = lease - l.tokens;
    l.pending = this.store
      .hit(bucket, l.windowStart, this.windowMs, n)
      .then((count) => {
        // of the n tokens just counted, only those at or under the limit are ours to spend
        const granted = Math.max(0, Math.min(n, limit - (count - n)));
        l.tokens += granted;
        l.storeCount = Math.max(l.storeCount, count);
        if (granted < n) l.exhausted = true;
      })
      .finally(() => {
        l.pending = null;
      });
    return l.pending;
  }

  private sweep(current: number) {
    for (const [k, v] of this.leases) if (v.windowStart !== current && !v.pending) this.leases.delete(k);
  }
}

export function rateLimitHeaders(r: RateLimitResult): Record<string, string> {
  return setRateLimitHeaders({}, r);
}

/** Sets the six rate-limit headers on `h` (literal names: no string building per call). */
export function setRateLimitHeaders(h: Record<string, string>, r: RateLimitResult): Record<string, string> {
  const limit = String(r.limit);
  const remaining = String(r.remaining);
  const reset = String(r.reset);
  h["X-RateLimit-Limit"] = limit;
  h["X-RateLimit-Remaining"] = remaining;
  h["X-RateLimit-Reset"] = reset;
  h["RateLimit-Limit"] = limit;
  h["RateLimit-Remaining"] = remaining;
  h["RateLimit-Reset"] = reset;
  return h;
}
