// SPEC.md "Limits" (Idempotency), "Errors" (IDEMPOTENCY_*), GET /v1/idempotency/{key};
// DECISIONS.md "Names" (X-Service-Idempotent-Replay).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
beforeAll(async () => {
  s = await startTestServer();
  acct = await s.account();
});
afterAll(() => s.stop());

const post = (idem: string | undefined, body: unknown, key = acct.live_key) =>
  call(s.url, "POST", "/v1/keys", { key, body, headers: idem === undefined ? {} : { "Idempotency-Key": idem } });

describe("reserve and replay", () => {
  it("the same key and body replay the first response, marked as a replay", async () => {
    const a = await post("create-1", { name: "one" });
    const b = await post("create-1", { name: "one" });
    expect(a.status).toBe(201);
    expect(a.headers.get("x-service-idempotent-replay")).toBeNull();
    expect(b.status).toBe(201);
    expect(b.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(b.body).toEqual(a.body);
    expect(b.headers.get("x-service-request-id")).not.toBe(a.headers.get("x-service-request-id"));
  });

  it("key order in the body does not matter", async () => {
    const a = await post("order-1", { name: "x", scopes: ["usage"] });
    const b = await call(s.url, "POST", "/v1/keys", {
      key: acct.live_key,
      raw: '{"scopes":["usage"],"name":"x"}',
      headers: { "Idempotency-Key": "order-1", "Content-Type": "application/json" },
    });
    expect(b.body.id).toBe(a.body.id);
  });

  it("another body with the same key is 422 IDEMPOTENCY_KEY_REUSED", async () => {
    await post("reuse-1", { name: "a" });
    envelope(await post("reuse-1", { name: "b" }), 422, "IDEMPOTENCY_KEY_REUSED");
  });

  it("results are scoped to the API key: another key with the same Idempotency-Key executes anew", async () => {
    const a = await post("scoped-1", { name: "a" });
    const b = await post("scoped-1", { name: "a" }, acct.test_key);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
  });

  it.each([["x".repeat(129)], ["has space"], ["semi;colon"], ["dot.dot"], ["slash/"]])(
    "malformed key %j is 400 INVALID_IDEMPOTENCY_KEY",
    async (k) => {
      const r = await call(s.url, "POST", "/v1/keys", {
        key: acct.live_key,
        body: {},
        headers: { "Idempotency-Key": k },
      });
      envelope(r, 400, "INVALID_IDEMPOTENCY_KEY");
    },
  );

  it("a 128-character key of every allowed character class is accepted", async () => {
    const k = `Ab9_-:${"z".repeat(122)}`;
    expect((await post(k, { name: "long" })).status).toBe(201);
  });

  it("concurrent identical requests execute once", async () => {
    const before = (await call(s.url, "GET", "/v1/keys", { key: acct.live_key })).body.keys.length;
    const results = await Promise.all(Array.from({ length: 12 }, () => post("race-1", { name: "race" })));
    const created = results.filter((r) => r.status === 201);
    const inflight = results.filter((r) => r.status === 409);
    expect(created.length + inflight.length).toBe(12);
    for (const r of inflight) {
      const e = envelope(r, 409, "IDEMPOTENCY_IN_FLIGHT");
      expect(e.retryable).toBe(true);
      expect(e.retry_with_same_idempotency_key).toBe(true);
      expect(r.headers.get("retry-after")).toMatch(/^\d+$/);
    }
    expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
    const after = (await call(s.url, "GET", "/v1/keys", { key: acct.live_key })).body.keys.length;
    expect(after - before).toBe(1);
  });

  it("non-retryable errors are stored and replayed", async () => {
    const a = await post("err-1", { scopes: ["nope"] });
    envelope(a, 422, "VALIDATION_ERROR");
    // validation happens before the idempotent section: the same key is still free
    expect((await post("err-1", { scopes: ["usage"] })).status).toBe(201);
    const narrow = (await post(undefined, { scopes: ["keys"] })).body.key;
    const first = await post("err-2", { scopes: ["predict"] }, narrow);
    envelope(first, 403, "INSUFFICIENT_SCOPE");
    const again = await post("err-2", { scopes: ["predict"] }, narrow);
    envelope(again, 403, "INSUFFICIENT_SCOPE");
    expect(again.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(again.body.error.request_id).toBe(first.body.error.request_id);
  });
});

describe("GET /v1/idempotency/{key}", () => {
  it("returns the original status and body for a completed key", async () => {
    const a = await post("lookup-1", { name: "lk" });
    const r = await call(s.url, "GET", "/v1/idempotency/lookup-1", { key: acct.live_key });
    expect(r.status).toBe(200);
    // the lookup's own request_id (DECISIONS.md "Compatibility amendments"); `result` keeps the original's
    expect(r.body).toEqual({
      request_id: r.headers.get("x-service-request-id"),
      status: "completed",
      original_status: 201,
      result: a.body,
    });
    expect(r.body.result.request_id).toBe(a.headers.get("x-service-request-id"));
  });

  it("reports processing while the first request runs", async () => {
    await s.app.deps.db.idempotencyRecord.create({
      data: {
        id: "idm_manual",
        scope: `key:${(await s.app.deps.db.apiKey.findFirstOrThrow({ where: { accountId: acct.account_id, mode: "live", name: "owner (live)" } })).id}`,
        key: "pending-1",
        accountId: acct.account_id,
        mode: "live",
        endpoint: "POST /v1/keys",
        bodyHash: "x",
        status: "processing",
        lockedUntil: new Date(Date.now() + 60_000),
        expiresAt: new Date(Date.now() + 86_400_000),
      },
    });
    const r = await call(s.url, "GET", "/v1/idempotency/pending-1", { key: acct.live_key });
    expect(r.body).toEqual({ request_id: r.headers.get("x-service-request-id"), status: "processing" });
  });

  it("is 404 for an unknown key and for another API key's key", async () => {
    envelope(await call(s.url, "GET", "/v1/idempotency/never-used", { key: acct.live_key }), 404, "NOT_FOUND");
    envelope(await call(s.url, "GET", "/v1/idempotency/lookup-1", { key: acct.test_key }), 404, "NOT_FOUND");
  });

  it("is 404 after the 24 h retention", async () => {
    await post("expire-1", { name: "old" });
    await s.app.deps.db.idempotencyRecord.updateMany({
      where: { key: "expire-1" },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    envelope(await call(s.url, "GET", "/v1/idempotency/expire-1", { key: acct.live_key }), 404, "NOT_FOUND");
    // and the key executes anew
    const again = await post("expire-1", { name: "old" });
    expect(again.headers.get("x-service-idempotent-replay")).toBeNull();
  });

  it("stored responses are encrypted at rest (a replayed raw API key is not in the database)", async () => {
    const a = await post("secret-1", { name: "secret" });
    const rows = await s.app.deps.db.$queryRaw<
      { t: string }[]
    >`SELECT response_body::text AS t FROM idempotency_records WHERE key = 'secret-1'`;
    expect(rows[0]!.t).not.toContain(a.body.key);
    expect(rows[0]!.t).toContain("sealed");
  });
});
