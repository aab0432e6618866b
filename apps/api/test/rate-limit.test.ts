// DECISIONS.md "Tiers and numeric limits" (free 60/min...) and SPEC.md "Limits" (X-RateLimit-*,
// RateLimit-*, 429 RATE_LIMIT_EXCEEDED with Retry-After). The limit holds across several API processes
// sharing a store (PostgreSQL or Redis). RATE_LIMIT_SCALE shrinks the tier numbers to keep tests short.
import { createAccount } from "@cua/core/accounts/create-account";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  envelope,
  spawnService,
  startTestServer,
  stopChild,
  TEST_SECRETS_KEY,
  type TestServer,
} from "./helpers.ts";

/** Fixed windows reset on the minute: start a counting test well inside one. */
async function awayFromWindowEdge() {
  const sec = new Date().getSeconds();
  if (sec >= 45) await new Promise((r) => setTimeout(r, (61 - sec) * 1000));
}

describe("in-process limiter (free tier scaled to 6/min)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ RATE_LIMIT_SCALE: "0.1", RATE_LIMIT_STORE: "memory" });
  });
  afterAll(() => s.stop());

  it("counts every authenticated call, reports the window in both header families, then 429s", async () => {
    const a = await s.account({ tier: "free" });
    await awayFromWindowEdge();
    const seen: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
      expect(r.status).toBe(200);
      expect(r.headers.get("x-ratelimit-limit")).toBe("6");
      expect(r.headers.get("ratelimit-limit")).toBe("6");
      expect(r.headers.get("ratelimit-remaining")).toBe(r.headers.get("x-ratelimit-remaining"));
      const reset = Number(r.headers.get("x-ratelimit-reset"));
      expect(reset).toBeGreaterThanOrEqual(1);
      expect(reset).toBeLessThanOrEqual(60);
      seen.push(Number(r.headers.get("x-ratelimit-remaining")));
    }
    expect(seen).toEqual([5, 4, 3, 2, 1, 0]);
    const r = await call(s.url, "GET", "/v1/models", { key: a.live_key });
    const e = envelope(r, 429, "RATE_LIMIT_EXCEEDED");
    expect(e.type).toBe("rate_limit_error");
    expect(e.retryable).toBe(true);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(e.retry_after).toBe(Number(r.headers.get("retry-after")));
    expect(r.headers.get("x-ratelimit-remaining")).toBe("0");
  });

  it("limits are per key: another key of the same account has its own window", async () => {
    const a = await s.account({ tier: "free" });
    await awayFromWindowEdge();
    for (let i = 0; i < 6; i++) await call(s.url, "GET", "/v1/models", { key: a.live_key });
    envelope(await call(s.url, "GET", "/v1/models", { key: a.live_key }), 429, "RATE_LIMIT_EXCEEDED");
    expect((await call(s.url, "GET", "/v1/models", { key: a.test_key })).status).toBe(200);
  });

  it("tiers differ: enterprise scaled is 500/min", async () => {
    const a = await s.account({ tier: "enterprise" });
    const r = await call(s.url, "GET", "/v1/models", { key: a.live_key });
    expect(r.headers.get("x-ratelimit-limit")).toBe("500");
  });

  it("public routes are not limited and carry no rate-limit headers", async () => {
    const r = await call(s.url, "GET", "/v1/health");
    expect(r.headers.get("x-ratelimit-limit")).toBeNull();
  });
});

async function sharedStoreCheck(env: Record<string, string>, tdb: TestDatabase) {
  const deps = {
    db: tdb.db,
    clock: { now: () => new Date() },
    kek: Buffer.from(TEST_SECRETS_KEY, "hex"),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  };
  const a = await createAccount(deps, { name: "rl", tier: "free", credits: 0 });
  const common = { DATABASE_URL: tdb.url, SECRETS_KEY: TEST_SECRETS_KEY, RATE_LIMIT_SCALE: "0.2", ...env };
  const p1 = spawnService({ ...common, DATA_DIR: `/tmp/cua-rl-${Date.now()}-1` });
  const p2 = spawnService({ ...common, DATA_DIR: `/tmp/cua-rl-${Date.now()}-2` });
  try {
    const [u1, u2] = await Promise.all([p1.url(), p2.url()]);
    await awayFromWindowEdge();
    // 12/min in total, alternating between the two processes
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++)
      statuses.push((await call(i % 2 ? u2 : u1, "GET", "/v1/models", { key: a.live_key })).status);
    return statuses;
  } finally {
    await Promise.all([stopChild(p1.child), stopChild(p2.child)]);
  }
}

describe("several API processes share one limit", () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(() => tdb.drop());

  it("through PostgreSQL (the default store with DATABASE_URL)", async () => {
    const statuses = await sharedStoreCheck({}, tdb);
    expect(statuses.filter((s) => s === 200).length).toBe(12);
    expect(statuses.slice(12)).toEqual([429, 429, 429, 429]);
  });

  it("through Redis (REDIS_URL)", async () => {
    const redis = new Redis("redis://127.0.0.1:6379");
    await redis.flushdb();
    redis.disconnect();
    const statuses = await sharedStoreCheck({ REDIS_URL: "redis://127.0.0.1:6379" }, tdb);
    expect(statuses.filter((s) => s === 200).length).toBe(12);
    expect(statuses.slice(12)).toEqual([429, 429, 429, 429]);
  });
});
