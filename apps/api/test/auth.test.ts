// SPEC.md "Authentication" 1-4 and DECISIONS.md "Cross-cutting rules" (check order, mode isolation).
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
beforeAll(async () => {
  s = await startTestServer();
  acct = await s.account();
});
afterAll(() => s.stop());

describe("credentials", () => {
  it("a missing key is 401 INVALID_API_KEY with WWW-Authenticate: Bearer", async () => {
    const r = await call(s.url, "GET", "/v1/usage");
    const e = envelope(r, 401, "INVALID_API_KEY");
    expect(e.type).toBe("auth_error");
    expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it.each([
    ["garbage", "nope"],
    ["wrong prefix", `sk-abc-live-${"a".repeat(48)}`],
    ["uppercase hex", `sk-svc-live-${"A".repeat(48)}`],
    ["short", `sk-svc-live-${"a".repeat(47)}`],
    ["unknown well-formed key", `sk-svc-live-${"a".repeat(48)}`],
  ])("%s is 401", async (_n, k) => {
    envelope(await call(s.url, "GET", "/v1/usage", { key: k }), 401, "INVALID_API_KEY");
  });

  it("X-API-Key and Authorization: Bearer both work", async () => {
    expect((await call(s.url, "GET", "/v1/usage", { key: acct.live_key })).status).toBe(200);
    const r = await call(s.url, "GET", "/v1/usage", { headers: { Authorization: `Bearer ${acct.live_key}` } });
    expect(r.status).toBe(200);
  });

  it("`X-API-Key: Bearer ...` is rejected with a pointer to the right form", async () => {
    const r = await call(s.url, "GET", "/v1/usage", { headers: { "X-API-Key": `Bearer ${acct.live_key}` } });
    const e = envelope(r, 401, "INVALID_API_KEY");
    expect(e.message).toMatch(/Bearer/);
  });

  it("Authorization with another scheme is 401", async () => {
    envelope(
      await call(s.url, "GET", "/v1/usage", { headers: { Authorization: `Basic ${acct.live_key}` } }),
      401,
      "INVALID_API_KEY",
    );
  });

  it("a revoked key is 401 from the next request on", async () => {
    const created = await call(s.url, "POST", "/v1/keys", { key: acct.live_key, body: { scopes: ["usage"] } });
    expect(created.status).toBe(201);
    expect((await call(s.url, "GET", "/v1/usage", { key: created.body.key })).status).toBe(200);
    expect((await call(s.url, "DELETE", `/v1/keys/${created.body.id}`, { key: acct.live_key })).status).toBe(200);
    envelope(await call(s.url, "GET", "/v1/usage", { key: created.body.key }), 401, "INVALID_API_KEY");
  });

  it("an expired key is 401", async () => {
    const created = await call(s.url, "POST", "/v1/keys", {
      key: acct.live_key,
      body: { scopes: ["usage"], expires_at: new Date(Date.now() + 1500).toISOString() },
    });
    expect(created.status).toBe(201);
    await new Promise((r) => setTimeout(r, 1700));
    envelope(await call(s.url, "GET", "/v1/usage", { key: created.body.key }), 401, "INVALID_API_KEY");
  });

  it("keys are stored as SHA-256 hashes, never raw", async () => {
    const rows = await s.app.deps.db.apiKey.findMany({ where: { accountId: acct.account_id } });
    const hashes = rows.map((r) => r.keyHash);
    expect(hashes).toContain(createHash("sha256").update(acct.live_key).digest("hex"));
    expect(JSON.stringify(rows)).not.toContain(acct.live_key);
  });
});

describe("modes", () => {
  it("test-key responses carry X-Service-Test-Mode: true; live ones do not", async () => {
    const t = await call(s.url, "GET", "/v1/usage", { key: acct.test_key });
    expect(t.status).toBe(200);
    expect(t.headers.get("x-service-test-mode")).toBe("true");
    expect(t.body.mode).toBe("test");
    const l = await call(s.url, "GET", "/v1/usage", { key: acct.live_key });
    expect(l.headers.get("x-service-test-mode")).toBeNull();
  });

  it("test-key errors carry the test-mode header too", async () => {
    const r = await call(s.url, "GET", "/v1/usage?period=bad", { key: acct.test_key });
    envelope(r, 400, "INVALID_PERIOD");
    expect(r.headers.get("x-service-test-mode")).toBe("true");
  });
});

// One shared table: every protected route is 401 without a key and 403 with a key lacking its scope.
const PROTECTED: { method: string; path: string; scope: string; body?: unknown }[] = [
  { method: "POST", path: "/v1/keys", scope: "keys", body: {} },
  { method: "GET", path: "/v1/keys", scope: "keys" },
  { method: "DELETE", path: "/v1/keys/key_abc", scope: "keys" },
  { method: "GET", path: "/v1/usage", scope: "usage" },
  { method: "GET", path: "/v1/llm/keys", scope: "llm_keys" },
  { method: "PUT", path: "/v1/llm/keys/openai", scope: "llm_keys", body: { api_key: "sk-x" } },
  { method: "DELETE", path: "/v1/llm/keys/openai", scope: "llm_keys" },
];

describe("the scope table", () => {
  let narrow: string;
  beforeAll(async () => {
    // a key holding only `parse`: lacks every scope in the table
    const r = await call(s.url, "POST", "/v1/keys", { key: acct.live_key, body: { scopes: ["parse"] } });
    narrow = r.body.key;
  });

  it.each(PROTECTED)("$method $path is 401 without a key", async ({ method, path, body }) => {
    envelope(await call(s.url, method, path, { body }), 401, "INVALID_API_KEY");
  });

  it.each(PROTECTED)(
    "$method $path is 403 INSUFFICIENT_SCOPE without $scope",
    async ({ method, path, scope, body }) => {
      const e = envelope(await call(s.url, method, path, { key: narrow, body }), 403, "INSUFFICIENT_SCOPE");
      expect(e.type).toBe("forbidden");
      expect(e.required_scope).toBe(scope);
      expect(e.current_scopes).toEqual(["parse"]);
    },
  );

  it("scope is checked before body validation (check order)", async () => {
    const r = await call(s.url, "POST", "/v1/keys", { key: narrow, body: { bogus: true } });
    envelope(r, 403, "INSUFFICIENT_SCOPE");
  });

  it("/v1/idempotency/{key} needs a valid key but no scope", async () => {
    envelope(await call(s.url, "GET", "/v1/idempotency/abc"), 401, "INVALID_API_KEY");
    envelope(await call(s.url, "GET", "/v1/idempotency/abc", { key: narrow }), 404, "NOT_FOUND");
  });
});
