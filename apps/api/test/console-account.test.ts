// The console's account procedures over /trpc, black-box: wallet (balance, ledger, operator top-up),
// usage, API keys of both modes (raw key once, works against /v1, revoke), provider keys (fingerprints only).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, trpc } from "./console-helpers.ts";
import { call, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe("wallet", () => {
  it("a top-up raises the balance and appears in the ledger with a note naming the operator", async () => {
    const { cookie, email } = await signUp(s.url);
    expect((await trpc(s.url, "console.wallet.balance", { query: true, cookie })).data).toEqual({ balance_credits: 0 });
    const r = await trpc(s.url, "console.wallet.topUp", { input: { credits: 250, note: "invoice 42" }, cookie });
    expect(r.status).toBe(200);
    expect(r.data).toEqual({ balance_credits: 250, credits: 250, note: `console top-up by ${email}: invoice 42` });
    expect((await trpc(s.url, "console.wallet.balance", { query: true, cookie })).data).toEqual({
      balance_credits: 250,
    });
    const ledger = await trpc(s.url, "console.wallet.ledger", { query: true, cookie, input: {} });
    expect(ledger.status).toBe(200);
    expect(ledger.data.entries).toHaveLength(1);
    expect(ledger.data.entries[0]).toMatchObject({
      kind: "topup",
      delta: 250,
      amount: 250,
      balance_after: 250,
      note: `console top-up by ${email}: invoice 42`,
    });
    expect(ledger.data).toMatchObject({ has_more: false, next_cursor: null });
  });

  it.each([[0], [-5], [1.5], [10_000_001]])("a top-up of %s credits is 422 and changes nothing", async (credits) => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.wallet.topUp", { input: { credits }, cookie });
    expect(r.status).toBe(422);
    expect(r.error.code).toBe("VALIDATION_ERROR");
    expect((await trpc(s.url, "console.wallet.balance", { query: true, cookie })).data.balance_credits).toBe(0);
  });

  it("the ledger filters by kind and pages with a cursor, newest first", async () => {
    const { cookie } = await signUp(s.url);
    for (const c of [1, 2, 3, 4, 5]) await trpc(s.url, "console.wallet.topUp", { input: { credits: c }, cookie });
    const me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    // a metered call's reserve/capture pair, written by the wallet itself
    const { reserve, capture } = await import("@cua/core/wallet/wallet");
    const rsv = await reserve(s.app.deps, { accountId: me.data.account_id, amount: 4, endpoint: "POST /v1/predict" });
    await capture(s.app.deps, rsv.id);
    const p1 = await trpc(s.url, "console.wallet.ledger", { query: true, cookie, input: { kind: "topup", limit: 2 } });
    expect(p1.data.entries.map((e: { amount: number }) => e.amount)).toEqual([5, 4]);
    expect(p1.data.has_more).toBe(true);
    const p2 = await trpc(s.url, "console.wallet.ledger", {
      query: true,
      cookie,
      input: { kind: "topup", limit: 2, cursor: p1.data.next_cursor },
    });
    expect(p2.data.entries.map((e: { amount: number }) => e.amount)).toEqual([3, 2]);
    const p3 = await trpc(s.url, "console.wallet.ledger", {
      query: true,
      cookie,
      input: { kind: "topup", limit: 2, cursor: p2.data.next_cursor },
    });
    expect(p3.data.entries.map((e: { amount: number }) => e.amount)).toEqual([1]);
    expect(p3.data).toMatchObject({ has_more: false, next_cursor: null });
    const reserves = await trpc(s.url, "console.wallet.ledger", { query: true, cookie, input: { kind: "reserve" } });
    expect(reserves.data.entries).toHaveLength(1);
    expect(reserves.data.entries[0]).toMatchObject({ kind: "reserve", delta: -4, reservation_id: rsv.id });
    const all = await trpc(s.url, "console.wallet.ledger", { query: true, cookie, input: {} });
    expect(all.data.entries.map((e: { kind: string }) => e.kind).slice(0, 2)).toEqual(["capture", "reserve"]);
    expect((await trpc(s.url, "console.wallet.balance", { query: true, cookie })).data.balance_credits).toBe(15 - 4);
  });

  it("bad ledger parameters are rejected (unknown kind 422, bad cursor 400 INVALID_CURSOR)", async () => {
    const { cookie } = await signUp(s.url);
    const kind = await trpc(s.url, "console.wallet.ledger", { query: true, cookie, input: { kind: "gift" } });
    expect(kind.status).toBe(422);
    const cursor = await trpc(s.url, "console.wallet.ledger", { query: true, cookie, input: { cursor: "abc" } });
    expect(cursor.status).toBe(400);
    expect(cursor.error.code).toBe("INVALID_CURSOR");
  });

  it("an operator sees only their own account's wallet", async () => {
    const a = await signUp(s.url);
    const b = await signUp(s.url);
    await trpc(s.url, "console.wallet.topUp", { input: { credits: 77 }, cookie: a.cookie });
    expect((await trpc(s.url, "console.wallet.balance", { query: true, cookie: b.cookie })).data.balance_credits).toBe(
      0,
    );
    expect(
      (await trpc(s.url, "console.wallet.ledger", { query: true, cookie: b.cookie, input: {} })).data.entries,
    ).toEqual([]);
  });
});

describe("API keys", () => {
  it("creates a live key with the chosen scopes: the raw key once, then only its prefix; it works against /v1", async () => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.keys.create", {
      input: { mode: "live", name: "ci", scopes: ["usage", "keys"] },
      cookie,
    });
    expect(r.status).toBe(200);
    expect(r.data.key).toMatch(/^sk-svc-live-[0-9a-f]{48}$/);
    expect(r.data).toMatchObject({
      name: "ci",
      mode: "live",
      key_kind: "live",
      tier: "free",
      prefix: r.data.key.slice(0, 16),
    });
    expect([...r.data.scopes].sort()).toEqual(["keys", "usage"]);
    const list = await trpc(s.url, "console.keys.list", { query: true, cookie });
    expect(list.data.keys).toHaveLength(1);
    expect(list.data.keys[0]).toMatchObject({ id: r.data.id, prefix: r.data.prefix, last_used_at: null });
    expect(JSON.stringify(list.body)).not.toContain(r.data.key);
    const usage = await call(s.url, "GET", "/v1/usage", { key: r.data.key });
    expect(usage.status).toBe(200);
    expect(usage.body.wallet.balance_credits).toBe(0);
    const v1list = await call(s.url, "GET", "/v1/keys", { key: r.data.key });
    expect(v1list.body.keys.map((k: { id: string }) => k.id)).toEqual([r.data.id]);
    // a scope it was not given
    const denied = await call(s.url, "GET", "/v1/llm/keys", { key: r.data.key });
    expect(denied.status).toBe(403);
    expect(denied.body.error.required_scope).toBe("llm_keys");
    const after = await trpc(s.url, "console.keys.list", { query: true, cookie });
    expect(after.data.keys[0].last_used_at).not.toBeNull();
  });

  it("the operator may grant any scope set, including keys and llm_keys, in test mode too", async () => {
    const { cookie } = await signUp(s.url);
    const cat = await trpc(s.url, "console.keys.scopes", { query: true, cookie });
    expect(cat.data.scopes).toContain("keys");
    expect(cat.data.defaults.live).toContain("llm_keys");
    expect(cat.data.defaults.test).not.toContain("llm_keys");
    const all = await trpc(s.url, "console.keys.create", { input: { mode: "test", scopes: cat.data.scopes }, cookie });
    expect(all.status).toBe(200);
    expect(all.data.key).toMatch(/^sk-svc-test-[0-9a-f]{48}$/);
    expect(all.data.scopes).toHaveLength(cat.data.scopes.length);
    const r = await call(s.url, "GET", "/v1/keys", { key: all.data.key });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-service-test-mode")).toBe("true");
  });

  it.each([
    [{ mode: "live", scopes: ["fly"] }, "body.scopes.0"],
    [{ mode: "staging", scopes: ["usage"] }, "body.mode"],
    [{ mode: "live", scopes: ["usage"], expires_at: "2001-01-01T00:00:00Z" }, "body.expires_at"],
  ])("bad key input %j is 422 at %s", async (input, path) => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.keys.create", { input, cookie });
    expect(r.status).toBe(422);
    expect(r.error.code).toBe("VALIDATION_ERROR");
    expect(r.error.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it("lists keys of the chosen mode (the same procedure as GET /v1/keys) and revokes either; a revoked key is 401 at once", async () => {
    const { cookie } = await signUp(s.url);
    const live = (await trpc(s.url, "console.keys.create", { input: { mode: "live", scopes: ["usage"] }, cookie }))
      .data;
    const test = (await trpc(s.url, "console.keys.create", { input: { mode: "test", scopes: ["usage"] }, cookie }))
      .data;
    const ids = async (mode: string) =>
      (await trpc(s.url, "console.keys.list", { query: true, cookie, input: { mode } })).data.keys.map(
        (k: { id: string }) => k.id,
      );
    expect(await ids("live")).toEqual([live.id]);
    expect(await ids("test")).toEqual([test.id]);
    expect((await call(s.url, "GET", "/v1/usage", { key: test.key })).status).toBe(200);
    // a key of the other mode is 404, as for an API key of that mode
    const crossed = await trpc(s.url, "console.keys.revoke", { input: { key_id: test.id, mode: "live" }, cookie });
    expect(crossed.status).toBe(404);
    for (const k of [live, test]) {
      const r = await trpc(s.url, "console.keys.revoke", { input: { key_id: k.id, mode: k.mode }, cookie });
      expect(r.status).toBe(200);
      expect(r.data).toMatchObject({ id: k.id, revoked: true });
      expect((await call(s.url, "GET", "/v1/usage", { key: k.key })).status).toBe(401);
    }
    expect(await ids("live")).toEqual([]);
    expect(await ids("test")).toEqual([]);
    const again = await trpc(s.url, "console.keys.revoke", { input: { key_id: live.id, mode: "live" }, cookie });
    expect(again.status).toBe(404);
  });

  it("another account's key is 404 NOT_FOUND and stays valid", async () => {
    const a = await signUp(s.url);
    const b = await signUp(s.url);
    const k = (
      await trpc(s.url, "console.keys.create", { input: { mode: "live", scopes: ["usage"] }, cookie: a.cookie })
    ).data;
    const r = await trpc(s.url, "console.keys.revoke", { input: { key_id: k.id }, cookie: b.cookie });
    expect(r.status).toBe(404);
    expect(r.error.code).toBe("KEY_NOT_FOUND");
    expect((await call(s.url, "GET", "/v1/usage", { key: k.key })).status).toBe(200);
  });

  it("the 200 active keys limit holds (429 KEY_LIMIT_REACHED)", async () => {
    const { cookie } = await signUp(s.url);
    const me = await trpc(s.url, "console.auth.me", { query: true, cookie });
    const { insertKey } = await import("@cua/core/keys/create-key");
    for (let i = 0; i < 200; i++) {
      await insertKey(s.app.deps.db, {
        accountId: me.data.account_id,
        mode: i % 2 ? "live" : "test",
        name: `k${i}`,
        scopes: ["usage"],
      });
    }
    const r = await trpc(s.url, "console.keys.create", { input: { mode: "live", scopes: ["usage"] }, cookie });
    expect(r.status).toBe(429);
    expect(r.error.code).toBe("KEY_LIMIT_REACHED");
  });
});

describe("usage", () => {
  it("summarizes a month by endpoint for the chosen mode", async () => {
    const { cookie } = await signUp(s.url);
    const live = (
      await trpc(s.url, "console.keys.create", { input: { mode: "live", scopes: ["usage", "keys"] }, cookie })
    ).data;
    await call(s.url, "GET", "/v1/usage", { key: live.key });
    await call(s.url, "GET", "/v1/usage", { key: live.key });
    await call(s.url, "GET", "/v1/keys", { key: live.key });
    const r = await trpc(s.url, "console.usage.get", { query: true, cookie, input: { mode: "live" } });
    expect(r.status).toBe(200);
    expect(r.data.mode).toBe("live");
    expect(r.data.period).toMatch(/^\d{4}-\d{2}$/);
    expect(r.data.by_endpoint).toEqual([
      { endpoint: "GET /v1/keys", requests: 1, credits_charged: 0 },
      { endpoint: "GET /v1/usage", requests: 2, credits_charged: 0 },
    ]);
    const test = await trpc(s.url, "console.usage.get", { query: true, cookie, input: { mode: "test" } });
    expect(test.data.by_endpoint).toEqual([]);
    const bad = await trpc(s.url, "console.usage.get", {
      query: true,
      cookie,
      input: { mode: "live", period: "2026-13" },
    });
    expect(bad.status).toBe(400);
    expect(bad.error.code).toBe("INVALID_PERIOD");
  });
});

describe("provider keys (BYOK)", () => {
  const anthropic1 = `sk-ant-${"a".repeat(40)}`;
  const anthropic2 = `sk-ant-${"b".repeat(40)}`;

  it("stores, replaces and deletes a provider key; only fingerprints are ever returned", async () => {
    const { cookie } = await signUp(s.url);
    expect((await trpc(s.url, "console.llmKeys.list", { query: true, cookie })).data.keys).toEqual([]);
    const put = await trpc(s.url, "console.llmKeys.put", {
      input: { provider: "anthropic", api_key: anthropic1 },
      cookie,
    });
    expect(put.status).toBe(200);
    expect(put.data).toMatchObject({ provider: "anthropic", stored: true });
    expect(put.data.key_fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(put.body)).not.toContain(anthropic1);
    const list = await trpc(s.url, "console.llmKeys.list", { query: true, cookie });
    expect(list.data.keys).toEqual([
      expect.objectContaining({ provider: "anthropic", key_fingerprint: put.data.key_fingerprint }),
    ]);
    expect(JSON.stringify(list.body)).not.toContain("sk-ant-");
    const replaced = await trpc(s.url, "console.llmKeys.put", {
      input: { provider: "anthropic", api_key: anthropic2 },
      cookie,
    });
    expect(replaced.data.key_fingerprint).not.toBe(put.data.key_fingerprint);
    const list2 = await trpc(s.url, "console.llmKeys.list", { query: true, cookie });
    expect(list2.data.keys).toHaveLength(1);
    expect(list2.data.keys[0].key_fingerprint).toBe(replaced.data.key_fingerprint);
    // the API sees the same stored key
    const live = (await trpc(s.url, "console.keys.create", { input: { mode: "live", scopes: ["llm_keys"] }, cookie }))
      .data;
    const v1 = await call(s.url, "GET", "/v1/llm/keys", { key: live.key });
    expect(v1.body.keys[0].key_fingerprint).toBe(replaced.data.key_fingerprint);
    const del = await trpc(s.url, "console.llmKeys.delete", { input: { provider: "anthropic" }, cookie });
    expect(del.data).toEqual({ deleted: true });
    expect((await trpc(s.url, "console.llmKeys.list", { query: true, cookie })).data.keys).toEqual([]);
    const again = await trpc(s.url, "console.llmKeys.delete", { input: { provider: "anthropic" }, cookie });
    expect(again.status).toBe(404);
    expect(again.error.code).toBe("LLM_KEY_NOT_FOUND");
  });

  it("a malformed provider key is 422 naming body.api_key", async () => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.llmKeys.put", { input: { provider: "openai", api_key: "nope" }, cookie });
    expect(r.status).toBe(422);
    expect(r.error.details[0].path).toBe("body.api_key");
  });
});
