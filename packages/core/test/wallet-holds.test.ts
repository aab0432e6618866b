// Issue 10 "the wallet holds under any load": withCharge's capture against a real PostgreSQL that fails
// (a backend terminated by pg_terminate_backend mid-capture; the database cut off behind a TCP proxy),
// the hold sweeper, and same-key retries that never pay twice (SPEC.md "Errors", billing rules: "an
// unconfirmed ... attempt returns BILLING_UNAVAILABLE"; "Operations with an unknown outcome are not
// refunded blindly").
import net from "node:net";
import { ERROR_CODES, isCoreError } from "@cua/base/errors";
import { type DbHandle, openDb } from "@cua/db/client";
import { TEST_PG_ADMIN_URL, type TestDatabase } from "@cua/db/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../src/accounts/create-account.ts";
import type { CoreDeps } from "../src/deps.ts";
import { idempotencyRefOf, withIdempotencyRef } from "../src/idempotency/idempotency-scope.ts";
import { withCharge } from "../src/predict/charge.ts";
import { sweepStaleHolds } from "../src/wallet/holds.ts";
import { capture, getBalance, ledgerSum, listLedger, reserve } from "../src/wallet/wallet.ts";
import { coreDepsOnTestDatabase } from "./db-deps.ts";

/** A TCP proxy in front of PostgreSQL; cut() is the outage (every connection dies, new ones are refused). */
class TcpProxy {
  server: net.Server | null = null;
  sockets = new Set<net.Socket>();
  port = 0;
  async start(port = 0) {
    this.server = net.createServer((client) => {
      const up = net.connect(5432, "127.0.0.1");
      this.sockets.add(client).add(up);
      client.pipe(up).pipe(client);
      const end = () => {
        client.destroy();
        up.destroy();
      };
      client.on("error", end).on("close", end);
      up.on("error", end).on("close", end);
    });
    await new Promise<void>((r) => this.server!.listen(port, "127.0.0.1", () => r()));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  cut() {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    return new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let tdb: TestDatabase;
let deps: CoreDeps;
let warnings: string[];
let proxy: TcpProxy;
let proxied: DbHandle;
let viaProxy: CoreDeps;

beforeAll(async () => {
  ({ tdb, deps } = await coreDepsOnTestDatabase());
  warnings = [];
  deps = { ...deps, logger: { ...deps.logger, warn: (m: string) => void warnings.push(m) } };
  proxy = new TcpProxy();
  await proxy.start();
  const u = new URL(tdb.url);
  u.port = String(proxy.port);
  proxied = await openDb({ databaseUrl: u.toString(), migrate: false, poolSize: 2 });
  viaProxy = { ...deps, db: proxied.db };
});
afterAll(async () => {
  await proxied?.close().catch(() => {});
  await proxy?.cut();
  await tdb?.drop();
});

const account = async (credits: number) =>
  (await createAccount(deps, { name: "holds", tier: "enterprise", credits })).account_id;
const charge = (d: CoreDeps, accountId: string, work: () => Promise<string>, requestId = "req_test") =>
  withCharge(d, { accountId, amount: 5, billable: true, endpoint: "POST /v1/predict", requestId }, work);
const holds = (accountId: string, status: string) => deps.db.reservation.count({ where: { accountId, status } });

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const u = new URL(TEST_PG_ADMIN_URL);
  u.pathname = `/${tdb.name}`;
  const c = new pg.Client({ connectionString: u.toString() });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

describe("withCharge when the capture fails", () => {
  it("a capture whose backend is terminated mid-transaction is retried and charges exactly once", async () => {
    const a = await account(100);
    // Another session holds the account row, so the capture's UPDATE waits on it; that waiting backend
    // is then killed with pg_terminate_backend (its transaction rolls back), and the lock is freed.
    const blocker = new pg.Client({ connectionString: tdb.url });
    await blocker.connect();
    let killed = 0;
    const r = await charge(deps, a, async () => {
      await blocker.query("BEGIN");
      await blocker.query("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE", [a]);
      void (async () => {
        for (let i = 0; i < 200 && killed === 0; i++) {
          await new Promise((res) => setTimeout(res, 25));
          killed = await admin(async (c) => {
            const q = await c.query(
              `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%UPDATE accounts%'`,
            );
            return q.rowCount ?? 0;
          });
        }
        await blocker.query("COMMIT");
      })();
      return "the engine's answer";
    });
    await blocker.end();
    expect(killed).toBe(1);
    expect(r).toEqual({ result: "the engine's answer", charged: 5, remaining: 95 });
    expect(warnings).toContain("wallet settlement attempt failed");
    expect(await getBalance(deps, a)).toBe(95);
    expect(await ledgerSum(deps, a)).toBe(95);
    expect(await holds(a, "reserved")).toBe(0);
    expect((await listLedger(deps, { accountId: a })).map((e) => e.kind)).toEqual(["capture", "reserve", "topup"]);
  });

  it("a database cut off during the work: 503 BILLING_UNAVAILABLE (same key), no result, and the sweeper releases the hold", async () => {
    const a = await account(100);
    const err = await charge(viaProxy, a, async () => {
      await proxy.cut();
      return "an answer that must not be delivered unpaid";
    }).catch((e) => e);
    expect(isCoreError(err) && err.code).toBe("BILLING_UNAVAILABLE");
    expect(ERROR_CODES.BILLING_UNAVAILABLE).toMatchObject({ status: 503, retryable: true, sameKey: true });
    expect(err.message).toContain("could not be confirmed");
    // the hold is still there: 5 credits held, nothing captured
    expect(await getBalance(deps, a)).toBe(95);
    expect(await holds(a, "reserved")).toBe(1);
    await proxy.start(proxy.port);
    // a young hold is left alone (its call may still be running)...
    expect((await sweepStaleHolds(deps, { holdTtlSeconds: 3600 })).released).toBe(0);
    // ...a stale one is released, once, however many sweepers run
    const sweeps = await Promise.all([
      sweepStaleHolds(deps, { holdTtlSeconds: 0 }),
      sweepStaleHolds(deps, { holdTtlSeconds: 0 }),
    ]);
    expect(sweeps.reduce((n, s) => n + s.released, 0)).toBeGreaterThanOrEqual(1);
    expect(await holds(a, "reserved")).toBe(0);
    expect(await holds(a, "released")).toBe(1);
    expect(await getBalance(deps, a)).toBe(100);
    expect(await ledgerSum(deps, a)).toBe(100);
  });

  it("an engine failure whose refund cannot reach the database is BILLING_UNAVAILABLE, and the hold is released later", async () => {
    const a = await account(100);
    const { CoreError } = await import("@cua/base/errors");
    const err = await charge(viaProxy, a, async () => {
      await proxy.cut();
      throw new CoreError("PREDICTION_FAILED");
    }).catch((e) => e);
    expect(err.code).toBe("BILLING_UNAVAILABLE");
    expect(err.headers["X-Credits-Refunded"]).toBeUndefined(); // the refund is not claimed
    await proxy.start(proxy.port);
    await sweepStaleHolds(deps, { holdTtlSeconds: 0 });
    expect(await getBalance(deps, a)).toBe(100);
    expect(await ledgerSum(deps, a)).toBe(100);
  });
});

describe("same-key retries never pay twice", () => {
  it("a predecessor that was captured but whose answer was lost pays for the retry", async () => {
    const a = await account(100);
    const ref = idempotencyRefOf("key:k1", "retry-1");
    // what a process killed between its capture's commit and its answer leaves behind
    const h = await reserve(deps, { accountId: a, amount: 5, endpoint: "POST /v1/predict", idempotencyRef: ref });
    await capture(deps, h.id);
    const r = await withIdempotencyRef(ref, () => charge(deps, a, async () => "answer"));
    expect(r).toEqual({ result: "answer", charged: 5, remaining: 95 });
    expect(await getBalance(deps, a)).toBe(95);
    expect(await deps.db.reservation.count({ where: { accountId: a } })).toBe(1);
  });

  it("a predecessor's hold left reserved is released by the retry, which is charged once", async () => {
    const a = await account(100);
    const ref = idempotencyRefOf("key:k1", "retry-2");
    await reserve(deps, { accountId: a, amount: 5, endpoint: "POST /v1/predict", idempotencyRef: ref });
    const r = await withIdempotencyRef(ref, () => charge(deps, a, async () => "answer"));
    expect(r.charged).toBe(5);
    expect(await getBalance(deps, a)).toBe(95);
    expect(await holds(a, "released")).toBe(1);
    expect(await holds(a, "captured")).toBe(1);
    expect(await ledgerSum(deps, a)).toBe(95);
  });

  it("another key is another call: it is charged", async () => {
    const a = await account(100);
    const h = await reserve(deps, {
      accountId: a,
      amount: 5,
      endpoint: "POST /v1/predict",
      idempotencyRef: idempotencyRefOf("key:k1", "first"),
    });
    await capture(deps, h.id);
    await withIdempotencyRef(idempotencyRefOf("key:k1", "second"), () => charge(deps, a, async () => "x"));
    expect(await getBalance(deps, a)).toBe(90);
  });
});

describe('the sweeper and run-step holds (SPEC "Runs": charged after each step completes)', () => {
  const run = async (accountId: string, status: string) => {
    const id = `run_${Math.random().toString(16).slice(2, 14)}`;
    await deps.db.run.create({
      data: {
        id,
        accountId,
        mode: "live",
        apiKeyId: "key_x",
        machineId: "mch_x",
        task: "t",
        cuaVersion: "v3",
        maxSteps: 10,
        maxIterations: 10,
        onAwaitingHuman: "pause",
        status,
        deadlineAt: new Date(Date.now() + 3600_000),
      },
    });
    return id;
  };
  const stepHold = (accountId: string, runId: string, step: number) =>
    reserve(deps, { accountId, amount: 5, endpoint: "POST /v1/runs (step)", requestId: `run:${runId}:step:${step}` });

  it("captures a committed step's hold, releases an uncommitted one of a finished run, leaves a live run's", async () => {
    const a = await account(100);
    const done = await run(a, "failed");
    await deps.db.runStep.create({
      data: { runId: done, step: 1, phase: "committed", creditsCharged: 5, committedAt: new Date() },
    });
    await deps.db.runStep.create({ data: { runId: done, step: 2, phase: "executing" } });
    const live = await run(a, "running");
    await deps.db.runStep.create({ data: { runId: live, step: 1, phase: "executing" } });
    const h1 = await stepHold(a, done, 1);
    const h2 = await stepHold(a, done, 2);
    const h3 = await stepHold(a, live, 1);
    expect(await getBalance(deps, a)).toBe(85);
    const r = await sweepStaleHolds(deps, { holdTtlSeconds: 0 });
    expect(r).toMatchObject({ runSteps: 2, left: 1 });
    const status = async (id: string) => (await deps.db.reservation.findUniqueOrThrow({ where: { id } })).status;
    expect([await status(h1.id), await status(h2.id), await status(h3.id)]).toEqual([
      "captured",
      "released",
      "reserved",
    ]);
    expect(await getBalance(deps, a)).toBe(90);
    expect(await ledgerSum(deps, a)).toBe(90);
  });
});

describe("a free same-key retry that fails", () => {
  it("an engine failure refunds the earlier attempt's charge (nothing was ever delivered for the key)", async () => {
    const { CoreError } = await import("@cua/base/errors");
    const a = await account(100);
    const ref = idempotencyRefOf("key:k1", "retry-fails");
    const h = await reserve(deps, { accountId: a, amount: 5, endpoint: "POST /v1/predict", idempotencyRef: ref });
    await capture(deps, h.id);
    const rollup = () => deps.db.usageRollup.aggregate({ where: { accountId: a }, _sum: { creditsCharged: true } });
    expect((await rollup())._sum.creditsCharged).toBe(5);
    const err = await withIdempotencyRef(ref, () =>
      charge(deps, a, async () => {
        throw new CoreError("PREDICTION_FAILED");
      }),
    ).catch((e) => e);
    expect(err.code).toBe("PREDICTION_FAILED");
    expect(err.headers["X-Credits-Refunded"]).toBe("5");
    expect(await getBalance(deps, a)).toBe(100);
    expect(await ledgerSum(deps, a)).toBe(100);
    expect((await rollup())._sum.creditsCharged).toBe(0); // GET /v1/usage no longer counts it
    // the next retry with the key is a new charge (the refunded attempt paid for nothing)
    const r = await withIdempotencyRef(ref, () => charge(deps, a, async () => "answer"));
    expect(r.charged).toBe(5);
    expect(await getBalance(deps, a)).toBe(95);
  });
});
