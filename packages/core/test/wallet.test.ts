// Issue 2 "Wallet": reserve before metered work, capture on success, refund on engine failure; the
// balance never goes below zero and no credit is lost or double-charged under concurrency.
// Real PostgreSQL (a fresh database for this file).

import type { TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAccount } from "../src/accounts/create-account.ts";
import type { CoreDeps } from "../src/deps.ts";
import { beginIdempotent } from "../src/idempotency/idempotency.ts";
import { capture, getBalance, ledgerSum, listLedger, refund, release, reserve, topUp } from "../src/wallet/wallet.ts";
import { coreDepsOnTestDatabase } from "./db-deps.ts";

let tdb: TestDatabase;
let deps: CoreDeps;
beforeAll(async () => {
  ({ tdb, deps } = await coreDepsOnTestDatabase());
});
afterAll(() => tdb.drop());

const newAccount = async (credits: number) =>
  (await createAccount(deps, { name: "w", tier: "free", credits })).account_id;

describe("wallet ledger", () => {
  it("reserve -> capture charges once; the ledger explains the balance", async () => {
    const a = await newAccount(100);
    const r = await reserve(deps, { accountId: a, amount: 7, endpoint: "POST /v1/predict", requestId: "req_1" });
    expect(r.balanceAfter).toBe(93);
    expect(await capture(deps, r.id)).toMatchObject({ amount: 7, balance: 93 });
    expect(await capture(deps, r.id)).toBeNull(); // settling twice is a no-op
    expect(await refund(deps, r.id)).toBeNull();
    expect(await getBalance(deps, a)).toBe(93);
    expect(await ledgerSum(deps, a)).toBe(93);
    const kinds = (await listLedger(deps, { accountId: a })).map((e) => e.kind);
    expect(kinds).toEqual(["capture", "reserve", "topup"]);
  });

  it("reserve -> refund gives every credit back, once", async () => {
    const a = await newAccount(10);
    const r = await reserve(deps, { accountId: a, amount: 10, endpoint: "POST /v1/ground" });
    expect(await getBalance(deps, a)).toBe(0);
    expect(await refund(deps, r.id)).toMatchObject({ amount: 10, balance: 10 });
    expect(await refund(deps, r.id)).toBeNull();
    expect(await capture(deps, r.id)).toBeNull();
    expect(await getBalance(deps, a)).toBe(10);
    expect(await ledgerSum(deps, a)).toBe(10);
  });

  it("a reservation above the balance is 402 INSUFFICIENT_CREDITS with required and balance", async () => {
    const a = await newAccount(4);
    await expect(reserve(deps, { accountId: a, amount: 5, endpoint: "x" })).rejects.toMatchObject({
      code: "INSUFFICIENT_CREDITS",
      extras: { required: 5, balance: 4 },
    });
    expect(await getBalance(deps, a)).toBe(4);
    expect(await listLedger(deps, { accountId: a, kind: "reserve" })).toEqual([]);
  });

  it("top-ups must be positive integers", async () => {
    const a = await newAccount(0);
    await expect(topUp(deps, { accountId: a, credits: 0 })).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    await expect(topUp(deps, { accountId: a, credits: 1.5 })).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect((await topUp(deps, { accountId: a, credits: 25 })).balance).toBe(25);
  });
});

describe("concurrency (the proof the issue asks for)", () => {
  it("120 concurrent reservations of 7 on 500 credits: exactly 71 succeed, the balance ends at 3, never below 0", async () => {
    const a = await newAccount(500);
    const results = await Promise.allSettled(
      Array.from({ length: 120 }, (_, i) =>
        reserve(deps, { accountId: a, amount: 7, endpoint: "POST /v1/predict", requestId: `r${i}` }),
      ),
    );
    const ok = results.filter((r) => r.status === "fulfilled");
    const denied = results.filter((r) => r.status === "rejected");
    expect(ok.length).toBe(71);
    expect(denied.every((r) => (r as PromiseRejectedResult).reason.code === "INSUFFICIENT_CREDITS")).toBe(true);
    expect(await getBalance(deps, a)).toBe(3);
    expect(await ledgerSum(deps, a)).toBe(3);
    const balances = (await listLedger(deps, { accountId: a, limit: 500 })).map((e) => e.balance_after);
    expect(Math.min(...balances)).toBeGreaterThanOrEqual(0);
  });

  it("racing capture, refund and release of the same reservations settle each exactly once", async () => {
    const a = await newAccount(300);
    const rs = await Promise.all(
      Array.from({ length: 30 }, () => reserve(deps, { accountId: a, amount: 10, endpoint: "x" })),
    );
    expect(await getBalance(deps, a)).toBe(0);
    const outcomes = await Promise.all(
      rs.flatMap((r) => [capture(deps, r.id), refund(deps, r.id), release(deps, r.id), capture(deps, r.id)]),
    );
    const settled = outcomes.filter((o) => o !== null);
    expect(settled.length).toBe(30);
    const captured = (await listLedger(deps, { accountId: a, kind: "capture", limit: 100 })).length;
    const returned =
      (await listLedger(deps, { accountId: a, kind: "refund", limit: 100 })).length +
      (await listLedger(deps, { accountId: a, kind: "release", limit: 100 })).length;
    expect(captured + returned).toBe(30);
    expect(await getBalance(deps, a)).toBe(returned * 10);
    expect(await ledgerSum(deps, a)).toBe(returned * 10);
  });

  it("concurrent top-ups and reservations keep balance == sum of the ledger", async () => {
    const a = await newAccount(50);
    await Promise.allSettled([
      ...Array.from({ length: 40 }, () =>
        reserve(deps, { accountId: a, amount: 3, endpoint: "x" }).then((r) =>
          Math.random() < 0.5 ? capture(deps, r.id) : refund(deps, r.id),
        ),
      ),
      ...Array.from({ length: 10 }, () => topUp(deps, { accountId: a, credits: 5 })),
    ]);
    const bal = await getBalance(deps, a);
    expect(bal).toBeGreaterThanOrEqual(0);
    expect(await ledgerSum(deps, a)).toBe(bal);
  });
});

describe("idempotency records bind the endpoint", () => {
  it("the same key on another endpoint is IDEMPOTENCY_KEY_REUSED", async () => {
    const a = await newAccount(0);
    const base = { scope: "key:k1", key: "same", accountId: a, mode: "live" as const, bodyHash: "h" };
    expect((await beginIdempotent(deps, { ...base, endpoint: "POST /v1/predict" })).kind).toBe("execute");
    await expect(beginIdempotent(deps, { ...base, endpoint: "POST /v1/ground" })).rejects.toMatchObject({
      code: "IDEMPOTENCY_KEY_REUSED",
    });
    await expect(
      beginIdempotent(deps, { ...base, endpoint: "POST /v1/predict", bodyHash: "other" }),
    ).rejects.toMatchObject({ code: "IDEMPOTENCY_KEY_REUSED" });
    await expect(beginIdempotent(deps, { ...base, endpoint: "POST /v1/predict" })).rejects.toMatchObject({
      code: "IDEMPOTENCY_IN_FLIGHT",
    });
  });

  it("a processing record past its pending window is taken over (the first holder crashed)", async () => {
    const a = await newAccount(0);
    const base = {
      scope: "key:k2",
      key: "stale",
      accountId: a,
      mode: "live" as const,
      bodyHash: "h",
      endpoint: "POST /v1/predict",
    };
    const first = await beginIdempotent(deps, { ...base, pendingWindowSeconds: 1 });
    expect(first.kind).toBe("execute");
    await new Promise((r) => setTimeout(r, 1100));
    const second = await beginIdempotent(deps, base);
    expect(second).toEqual({ kind: "execute", recordId: (first as { recordId: string }).recordId });
  });
});
