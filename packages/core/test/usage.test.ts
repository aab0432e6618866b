// Usage records and their monthly totals (DECISIONS.md "Accounts, keys, wallet": GET /v1/usage counts
// authenticated requests by endpoint for the caller's mode). The totals GET /v1/usage reads are kept in
// the same transaction as the rows; nothing recorded is lost when the database refuses a write.
// Real PostgreSQL (a fresh database for this file).

import type { TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../src/accounts/create-account.ts";
import type { CoreDeps } from "../src/deps.ts";
import { addChargeTx, periodOf, type UsageEvent, UsageRecorder, usageSummary } from "../src/usage/usage.ts";
import { capture, getBalance, refund, reserve } from "../src/wallet/wallet.ts";
import { coreDepsOnTestDatabase } from "./db-deps.ts";

let tdb: TestDatabase;
let deps: CoreDeps;
let errors: string[];
beforeAll(async () => {
  ({ tdb, deps, errors } = await coreDepsOnTestDatabase());
});
afterAll(() => tdb.drop());

const newAccount = async (credits = 0) => (await createAccount(deps, { name: "u", tier: "free", credits })).account_id;
const ev = (accountId: string, endpoint: string, over: Partial<UsageEvent> = {}): UsageEvent => ({
  accountId,
  mode: "live",
  apiKeyId: null,
  method: endpoint.split(" ")[0]!,
  endpoint,
  status: 200,
  creditsCharged: 0,
  requestId: `req_${Math.random().toString(16).slice(2)}`,
  at: new Date(),
  ...over,
});

/**
 * The slow way, the reference the totals must match: requests counted from the usage rows, credits from
 * what the wallet took (captured reservations by endpoint, machine metering charges; live mode only).
 */
async function fromRows(accountId: string, mode: "live" | "test", period: string) {
  const rows = await tdb.db.$queryRaw<{ endpoint: string; n: bigint; c: bigint }[]>`
    WITH req AS (
      SELECT endpoint, count(*) AS n FROM usage_records
      WHERE account_id = ${accountId}::uuid AND mode = ${mode}::"KeyMode"
        AND to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM') = ${period}
      GROUP BY endpoint),
    paid AS (
      SELECT endpoint, sum(amount) AS c FROM reservations
      WHERE account_id = ${accountId}::uuid AND status = 'captured' AND ${mode} = 'live'
        AND to_char(settled_at AT TIME ZONE 'UTC', 'YYYY-MM') = ${period}
      GROUP BY endpoint
      UNION ALL
      SELECT 'machines (metering)', sum(amount) FROM wallet_entries
      WHERE account_id = ${accountId}::uuid AND kind = 'charge' AND ${mode} = 'live'
        AND to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM') = ${period}
      HAVING count(*) > 0)
    SELECT endpoint, coalesce(max(n), 0) AS n, coalesce(sum(c), 0) AS c
    FROM (SELECT endpoint, n, NULL::bigint AS c FROM req UNION ALL SELECT endpoint, NULL, c FROM paid) x
    GROUP BY endpoint ORDER BY endpoint`;
  return rows.map((r) => ({ endpoint: r.endpoint, requests: Number(r.n), credits_charged: Number(r.c) }));
}

describe("usage totals", () => {
  it("agree with the rows and the wallet after many batches and charges from several writers at once", async () => {
    const a = await newAccount(10_000);
    const endpoints = ["POST /v1/predict", "GET /v1/models", "POST /v1/ground", "GET /v1/usage"];
    // three recorders (three API processes) writing small batches concurrently into the same totals,
    // while the wallet captures the predicts' charges
    const recs = [0, 1, 2].map(() => new UsageRecorder(deps, 5, 7));
    const charges: Promise<unknown>[] = [];
    for (let i = 0; i < 600; i++) {
      const e = endpoints[i % endpoints.length]!;
      const live = i % 10 !== 0;
      const paid = e === "POST /v1/predict" && live;
      recs[i % 3]!.record(ev(a, e, { creditsCharged: paid ? 5 : 0, mode: live ? "live" : "test" }));
      if (paid) charges.push(reserve(deps, { accountId: a, amount: 5, endpoint: e }).then((r) => capture(deps, r.id)));
    }
    // a run step's charge and a failed predict's refund: only what the wallet keeps counts
    const step = await reserve(deps, { accountId: a, amount: 8, endpoint: "POST /v1/runs (step)" });
    await capture(deps, step.id);
    const failed = await reserve(deps, { accountId: a, amount: 5, endpoint: "POST /v1/predict" });
    await refund(deps, failed.id);
    await Promise.all([...charges, ...recs.map((r) => r.flush())]);
    const period = periodOf(new Date());
    for (const mode of ["live", "test"] as const) {
      const s = await usageSummary(deps, { accountId: a, mode });
      expect(s.by_endpoint).toEqual(await fromRows(a, mode, period));
    }
    const live = await usageSummary(deps, { accountId: a, mode: "live" });
    expect(live.requests).toBe(540);
    expect(live.credits_charged).toBe(5 * 120 + 8); // 150 predicts, 30 of them in test mode; one step
    expect(live.by_endpoint).toContainEqual({ endpoint: "POST /v1/runs (step)", requests: 0, credits_charged: 8 });
    expect(10_000 - (await getBalance(deps, a))).toBe(live.credits_charged);
    const test = await usageSummary(deps, { accountId: a, mode: "test" });
    expect(test).toMatchObject({ requests: 60, credits_charged: 0 });
  });

  it("a request lands in the UTC month it was made in", async () => {
    const a = await newAccount();
    const rec = new UsageRecorder(deps);
    rec.record(ev(a, "GET /v1/models", { at: new Date("2025-01-31T23:59:59.999Z") }));
    rec.record(ev(a, "GET /v1/models", { at: new Date("2025-02-01T00:00:00.000Z") }));
    rec.record(ev(a, "POST /v1/predict", { at: new Date("2025-02-14T12:00:00Z") }));
    await rec.flush();
    await tdb.db.$transaction((tx) =>
      addChargeTx(tx, { accountId: a, endpoint: "POST /v1/predict", credits: 8, at: new Date("2025-02-14T12:00:01Z") }),
    );
    expect((await usageSummary(deps, { accountId: a, mode: "live", period: "2025-01" })).by_endpoint).toEqual([
      { endpoint: "GET /v1/models", requests: 1, credits_charged: 0 },
    ]);
    const feb = await usageSummary(deps, { accountId: a, mode: "live", period: "2025-02" });
    expect(feb).toMatchObject({ requests: 2, credits_charged: 8, cost_cents: 8 });
    expect((await usageSummary(deps, { accountId: a, mode: "live", period: "2025-03" })).requests).toBe(0);
  });

  it("keeps what it could not write while the database refuses, and writes it once it can", async () => {
    const a = await newAccount();
    const rec = new UsageRecorder(deps, 50, 10);
    // a real failure: the totals table is not there for a moment
    await tdb.db.$executeRawUnsafe(`ALTER TABLE usage_rollups RENAME TO usage_rollups_away`);
    try {
      for (let i = 0; i < 25; i++) rec.record(ev(a, "GET /v1/keys"));
      await rec.flush();
      expect(errors.some((m) => m.includes("will retry"))).toBe(true);
      // neither rows nor totals were written: the batch is one transaction
      expect(await fromRows(a, "live", periodOf(new Date()))).toEqual([]);
    } finally {
      await tdb.db.$executeRawUnsafe(`ALTER TABLE usage_rollups_away RENAME TO usage_rollups`);
    }
    rec.record(ev(a, "GET /v1/models"));
    await rec.flush();
    const s = await usageSummary(deps, { accountId: a, mode: "live" });
    expect(s.by_endpoint).toEqual([
      { endpoint: "GET /v1/keys", requests: 25, credits_charged: 0 },
      { endpoint: "GET /v1/models", requests: 1, credits_charged: 0 },
    ]);
    expect(s.by_endpoint).toEqual(await fromRows(a, "live", periodOf(new Date())));
  });

  // Issue 16: GET /v1/usage no longer flushes before reading; the recorder's unwritten requests count in
  // the summary, each exactly once, also while batches are being written concurrently.
  it("a summary counts the requests recorded and not written yet, each exactly once while batches are written", async () => {
    const a = await newAccount(100);
    const idle = new UsageRecorder(deps, 60_000, 500); // writes nothing for a minute
    for (let i = 0; i < 5; i++) idle.record(ev(a, "GET /v1/models"));
    idle.record(ev(a, "GET /v1/models", { mode: "test" }));
    idle.record(ev(a, "GET /v1/models", { at: new Date("2025-01-15T00:00:00Z") }));
    const s = await usageSummary({ ...deps, usage: idle }, { accountId: a, mode: "live" });
    expect(s.by_endpoint).toEqual([{ endpoint: "GET /v1/models", requests: 5, credits_charged: 0 }]);
    expect(s).toMatchObject({ requests: 5, balance: 100 });
    expect(await fromRows(a, "live", periodOf(new Date()))).toEqual([]); // none of them is stored yet
    await idle.flush();

    const busy = new UsageRecorder(deps, 1, 7); // small batches written back to back
    const endpoints = ["GET /v1/keys", "GET /v1/models", "GET /v1/usage"];
    for (let i = 0; i < 300; i++) busy.record(ev(a, endpoints[i % 3]!));
    const seen: number[] = [];
    while (seen.length < 40) {
      const r = await usageSummary({ ...deps, usage: busy }, { accountId: a, mode: "live" });
      seen.push(r.requests);
    }
    await busy.flush();
    expect(new Set(seen)).toEqual(new Set([305]));
    const stored = await usageSummary(deps, { accountId: a, mode: "live" });
    expect(stored.by_endpoint).toEqual([
      { endpoint: "GET /v1/keys", requests: 100, credits_charged: 0 },
      { endpoint: "GET /v1/models", requests: 105, credits_charged: 0 },
      { endpoint: "GET /v1/usage", requests: 100, credits_charged: 0 },
    ]);
  });

  // Issue 16: concurrent summaries of one account share reads, but a caller never gets a read that began
  // before it arrived and before a request that may have changed the totals: what it did before asking counts.
  it("concurrent summaries share reads, each started after its callers arrived", async () => {
    const a = await newAccount(7);
    const rec = new UsageRecorder(deps, 60_000, 500);
    let reads = 0;
    const counting = {
      ...deps,
      usage: rec,
      db: new Proxy(deps.db, {
        get(t, k, r) {
          if (k === "$queryRaw")
            return (...args: unknown[]) => {
              reads += 1;
              return (t.$queryRaw as any)(...args);
            };
          return Reflect.get(t, k, r);
        },
      }),
    } as CoreDeps & { usage: UsageRecorder };
    rec.record(ev(a, "GET /v1/models"));
    const first = usageSummary(counting, { accountId: a, mode: "live" }); // starts a read now
    rec.record(ev(a, "GET /v1/models")); // recorded after that read began: later callers must count it
    const later = await Promise.all(
      Array.from({ length: 20 }, () => usageSummary(counting, { accountId: a, mode: "live" })),
    );
    // the unwritten requests are counted when each answer is made: the first answer counts the second too
    expect((await first).requests).toBe(2);
    for (const s of later) expect(s).toMatchObject({ requests: 2, balance: 7 });
    // the first caller's read; the first of the twenty starts its own (two may run), the other nineteen share
    // the one that starts when a running one ends
    expect(reads).toBe(3);
    await rec.flush();
  });

  // Issue 16: a read of the stored totals is kept for USAGE_READ_TTL_MS while nothing this process knows of
  // can have changed them. This process's requests always count at once; a change from elsewhere (another
  // process's batch, a top-up) shows once a request of the account other than a usage read is recorded here,
  // or within the TTL (the clock here is the test's: no waiting).
  it("a kept read serves later summaries until a request of the account or the TTL ends it", async () => {
    const a = await newAccount(10);
    let now = Date.now();
    let reads = 0;
    const clocked = { ...deps, clock: { now: () => new Date(now) } };
    const rec = new UsageRecorder(clocked, 60_000, 500, 50_000, 100);
    const counting = {
      ...clocked,
      usage: rec,
      db: new Proxy(deps.db, {
        get(t, k, r) {
          if (k === "$queryRaw")
            return (...args: unknown[]) => {
              reads += 1;
              return (t.$queryRaw as any)(...args);
            };
          return Reflect.get(t, k, r);
        },
      }),
    } as CoreDeps & { usage: UsageRecorder };
    const summary = () => usageSummary(counting, { accountId: a, mode: "live" });
    const topUp = (n: number) =>
      tdb.db.$executeRaw`UPDATE accounts SET balance_credits = balance_credits + ${n} WHERE id = ${a}::uuid`;

    expect(await summary()).toMatchObject({ requests: 0, balance: 10 });
    expect(reads).toBe(1);
    // usage reads of this process count at once, from the kept read
    for (let i = 0; i < 3; i++) rec.record(ev(a, "GET /v1/usage"));
    expect(await summary()).toMatchObject({ requests: 3, balance: 10 });
    expect(reads).toBe(1);

    // a change made elsewhere is not seen before the TTL ends ...
    await topUp(5);
    now += 99;
    expect(await summary()).toMatchObject({ requests: 3, balance: 10 });
    expect(reads).toBe(1);
    now += 1;
    expect(await summary()).toMatchObject({ requests: 3, balance: 15 });
    expect(reads).toBe(2);

    // ... or once this process records another request of the account (its charge committed before it)
    await topUp(5);
    rec.record(ev(a, "POST /v1/predict", { creditsCharged: 5 }));
    expect(await summary()).toMatchObject({ requests: 4, balance: 20 });
    expect(reads).toBe(3);
    expect(await summary()).toMatchObject({ requests: 4, balance: 20 });
    expect(reads).toBe(3);

    // batches of this process move events from the buffer into the stored totals: the kept read stays, and
    // each event is counted once, also while its batch is being written and after a refused batch returns
    rec.record(ev(a, "GET /v1/usage"));
    const writing = rec.flush();
    expect((await summary()).requests).toBe(5);
    await writing;
    const afterBatch = await summary();
    expect(afterBatch.by_endpoint).toEqual([
      { endpoint: "GET /v1/usage", requests: 4, credits_charged: 0 },
      { endpoint: "POST /v1/predict", requests: 1, credits_charged: 0 },
    ]);
    expect(afterBatch.by_endpoint).toEqual(await fromRows(a, "live", periodOf(new Date())));
    expect(reads).toBe(3);
    await tdb.db.$executeRawUnsafe(`ALTER TABLE usage_rollups RENAME TO usage_rollups_away`);
    try {
      for (let i = 0; i < 3; i++) rec.record(ev(a, "GET /v1/usage"));
      await rec.flush(); // refused: the events go back to the buffer
      expect((await summary()).requests).toBe(8);
    } finally {
      await tdb.db.$executeRawUnsafe(`ALTER TABLE usage_rollups_away RENAME TO usage_rollups`);
    }
    await rec.flush();
    expect((await summary()).requests).toBe(8);
    expect(reads).toBe(3);
    now += 100; // a fresh read holds them all
    expect((await summary()).requests).toBe(8);
    expect(reads).toBe(4);

    // another process's requests show within the TTL
    const other = new UsageRecorder(clocked, 60_000, 500);
    other.record(ev(a, "GET /v1/models"));
    await other.flush();
    expect((await summary()).requests).toBe(8);
    now += 100;
    expect((await summary()).requests).toBe(9);
    expect(reads).toBe(5);
    // another account's requests do not end this account's kept read
    rec.record(ev(await newAccount(), "POST /v1/predict"));
    expect((await summary()).requests).toBe(9);
    expect(reads).toBe(5);
    await rec.flush();
  });
});
