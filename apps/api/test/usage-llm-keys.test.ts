// GET /v1/usage (DECISIONS.md "Accounts, keys, wallet") and /v1/llm/keys (SPEC.md provider keys rows,
// DECISIONS.md "BYOK" answers).

import { resolveStoredLlmKey } from "@cua/core/llm-keys/llm-keys";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
beforeAll(async () => {
  s = await startTestServer();
  acct = await s.account({ credits: 321 });
});
afterAll(() => s.stop());

describe("GET /v1/usage", () => {
  it("counts requests by endpoint for the caller's mode and shows the wallet", async () => {
    const a = await s.account({ credits: 77 });
    await call(s.url, "GET", "/v1/models", { key: a.live_key });
    await call(s.url, "GET", "/v1/models", { key: a.live_key });
    await call(s.url, "GET", "/v1/keys", { key: a.live_key });
    await call(s.url, "GET", "/v1/models", { key: a.test_key });
    const r = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
    expect(r.status).toBe(200);
    const now = new Date();
    expect(r.body.period).toBe(`${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`);
    expect(r.body.mode).toBe("live");
    expect(r.body.by_endpoint).toEqual([
      { endpoint: "GET /v1/keys", requests: 1, credits_charged: 0 },
      { endpoint: "GET /v1/models", requests: 2, credits_charged: 0 },
    ]);
    expect(r.body.requests).toBe(3);
    expect(r.body.wallet).toEqual({ balance_credits: 77 });
    const t = await call(s.url, "GET", "/v1/usage", { key: a.test_key });
    expect(t.body.by_endpoint).toEqual([{ endpoint: "GET /v1/models", requests: 1, credits_charged: 0 }]);
  });

  it("another period is empty; errors are counted too", async () => {
    const a = await s.account();
    await call(s.url, "DELETE", "/v1/keys/key_missing", { key: a.live_key });
    const r = await call(s.url, "GET", "/v1/usage?period=2001-01", { key: a.live_key });
    expect(r.body).toMatchObject({ period: "2001-01", requests: 0, by_endpoint: [] });
    const cur = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
    expect(cur.body.by_endpoint).toEqual([
      { endpoint: "DELETE /v1/keys/{key_id}", requests: 1, credits_charged: 0 },
      { endpoint: "GET /v1/usage", requests: 1, credits_charged: 0 },
    ]);
  });

  // Issue 16: a usage read may be reused for 100 ms (docs/api.md "Usage"), but never across a request of the
  // account: what a call charged shows in the very next usage call, also one sent right after another
  it("a charge shows in the next usage call, also right after a usage call", async () => {
    const a = await s.account({ credits: 100 });
    for (let i = 0; i < 3; i++) {
      const before = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
      const c = await call(s.url, "POST", "/v1/sessions", { key: a.live_key, body: {} });
      expect(c.status).toBe(201);
      expect(c.headers.get("x-credits-charged")).toBe("10");
      const after = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
      expect(after.body).toMatchObject({
        balance: before.body.balance - 10,
        credits_charged: before.body.credits_charged + 10,
        requests: before.body.requests + 2,
      });
      expect(after.body.by_endpoint).toContainEqual({
        endpoint: "POST /v1/sessions",
        requests: i + 1,
        credits_charged: 10 * (i + 1),
      });
    }
  });

  it.each(["2026-13", "2026-1", "26-01", "2026-00", "abcd-ef", "2026-011"])(
    "period %j is 400 INVALID_PERIOD",
    async (p) => {
      envelope(await call(s.url, "GET", `/v1/usage?period=${p}`, { key: acct.live_key }), 400, "INVALID_PERIOD");
    },
  );
});

describe("/v1/llm/keys", () => {
  const OPENAI = "sk-test-openai-0123456789abcdef";
  it("PUT stores a key and answers only its fingerprint; GET lists metadata only", async () => {
    const r = await call(s.url, "PUT", "/v1/llm/keys/openai", { key: acct.live_key, body: { api_key: OPENAI } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      provider: "openai",
      key_fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
      stored: true,
      request_id: r.headers.get("x-service-request-id"),
    });
    const list = await call(s.url, "GET", "/v1/llm/keys", { key: acct.live_key });
    // DECISIONS.md "Compatibility amendments": the list shape, `keys` repeating `data`
    expect(list.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
    expect(list.body.keys).toEqual(list.body.data);
    expect(list.body.data).toEqual([
      {
        provider: "openai",
        key_fingerprint: r.body.key_fingerprint,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    ]);
    expect(list.text).not.toContain(OPENAI);
  });

  it("the key is encrypted at rest and decrypts for engine use", async () => {
    const rows = await s.app.deps.db.$queryRaw<
      { t: string }[]
    >`SELECT encode(ciphertext, 'escape') || encode(wrapped_dek, 'escape') AS t FROM provider_keys`;
    for (const row of rows) expect(row.t).not.toContain(OPENAI);
    expect(await resolveStoredLlmKey(s.app.deps, acct.account_id, "openai")).toBe(OPENAI);
  });

  it("PUT again replaces (an upsert) and changes the fingerprint", async () => {
    const before = (await call(s.url, "GET", "/v1/llm/keys", { key: acct.live_key })).body.keys[0];
    const r = await call(s.url, "PUT", "/v1/llm/keys/openai", { key: acct.live_key, body: { api_key: `${OPENAI}X` } });
    expect(r.body.key_fingerprint).not.toBe(before.key_fingerprint);
    const after = (await call(s.url, "GET", "/v1/llm/keys", { key: acct.live_key })).body.keys;
    expect(after.length).toBe(1);
  });

  it("DELETE removes it; a second DELETE is 404 LLM_KEY_NOT_FOUND", async () => {
    expect((await call(s.url, "DELETE", "/v1/llm/keys/openai", { key: acct.live_key })).body).toMatchObject({
      deleted: true,
    });
    envelope(await call(s.url, "DELETE", "/v1/llm/keys/openai", { key: acct.live_key }), 404, "LLM_KEY_NOT_FOUND");
    expect(await resolveStoredLlmKey(s.app.deps, acct.account_id, "openai")).toBeNull();
  });

  it.each(["managed", "google", "OPENAI"])("provider %j is 422 LLM_PROVIDER_UNSUPPORTED", async (p) => {
    envelope(
      await call(s.url, "PUT", `/v1/llm/keys/${p}`, { key: acct.live_key, body: { api_key: OPENAI } }),
      422,
      "LLM_PROVIDER_UNSUPPORTED",
    );
  });

  it.each([
    ["anthropic", "sk-not-anthropic-0123456789"],
    ["openai", "short"],
    ["openai", "sk-with space 0123456789abcdef"],
  ])("a malformed %s key is 422 VALIDATION_ERROR at body.api_key", async (p, k) => {
    const e = envelope(
      await call(s.url, "PUT", `/v1/llm/keys/${p}`, { key: acct.live_key, body: { api_key: k } }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("body.api_key");
  });

  // FEATURE_NOT_AVAILABLE is 400 validation_error (DECISIONS.md "Compatibility amendments")
  it("test keys get 400 FEATURE_NOT_AVAILABLE even with the llm_keys scope", async () => {
    for (const [m, b] of [
      ["GET", undefined],
      ["PUT", { api_key: OPENAI }],
      ["DELETE", undefined],
    ] as const) {
      envelope(
        await call(s.url, m, `/v1/llm/keys${m === "GET" ? "" : "/openai"}`, { key: acct.test_key, body: b }),
        400,
        "FEATURE_NOT_AVAILABLE",
      );
    }
  });

  it("accounts are isolated", async () => {
    const other = await s.account();
    await call(s.url, "PUT", "/v1/llm/keys/anthropic", {
      key: other.live_key,
      body: { api_key: "sk-ant-0123456789abcdefghij" },
    });
    const mine = await call(s.url, "GET", "/v1/llm/keys", { key: acct.live_key });
    expect(mine.body.keys.find((k: { provider: string }) => k.provider === "anthropic")).toBeUndefined();
    envelope(await call(s.url, "DELETE", "/v1/llm/keys/anthropic", { key: acct.live_key }), 404, "LLM_KEY_NOT_FOUND");
  });
});
