// SPEC.md "Errors": one envelope on every error, X-Service-Request-Id on every response, Link rel=help,
// WWW-Authenticate on 401; DECISIONS.md "Error envelope and statuses" and "Cross-cutting rules".
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account()).live_key;
});
afterAll(() => s.stop());

describe("error envelope on transport failures", () => {
  it("unknown route under /v1 is 404 NOT_FOUND in the envelope", async () => {
    const r = await call(s.url, "GET", "/v1/no-such-thing", { key });
    const e = envelope(r, 404, "NOT_FOUND");
    expect(e.type).toBe("not_found_error");
    expect(r.text).not.toContain("stack");
  });

  it("unknown route outside /v1 is 404 NOT_FOUND in the envelope", async () => {
    envelope(await call(s.url, "GET", "/nowhere"), 404, "NOT_FOUND");
  });

  it("the legacy /api/v1/cua prefix is not served and says where to go (DECISIONS: legacy prefix)", async () => {
    const e = envelope(await call(s.url, "POST", "/api/v1/cua/predict", { body: {} }), 404, "NOT_FOUND");
    expect(e.suggestion).toMatch(/\/v1/);
  });

  it("malformed JSON is 400 MALFORMED_JSON", async () => {
    const r = await call(s.url, "POST", "/v1/keys", {
      key,
      raw: "{nope",
      headers: { "Content-Type": "application/json" },
    });
    envelope(r, 400, "MALFORMED_JSON");
  });

  it("a non-JSON content type is 415 UNSUPPORTED_MEDIA_TYPE", async () => {
    const r = await call(s.url, "POST", "/v1/keys", {
      key,
      raw: "name=x",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    envelope(r, 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  it("a body over 15 MiB is 413 PAYLOAD_TOO_LARGE", async () => {
    const big = `{"name":"${"a".repeat(15 * 1024 * 1024 + 10)}"}`;
    const r = await call(s.url, "POST", "/v1/keys", { key, raw: big, headers: { "Content-Type": "application/json" } });
    const e = envelope(r, 413, "PAYLOAD_TOO_LARGE");
    expect(e.type).toBe("validation_error");
  });

  it("a body just under 15 MiB is read (and then judged on its content)", async () => {
    const big = `{"name":"${"a".repeat(15 * 1024 * 1024 - 100)}"}`;
    const r = await call(s.url, "POST", "/v1/keys", { key, raw: big, headers: { "Content-Type": "application/json" } });
    const e = envelope(r, 422, "VALIDATION_ERROR");
    expect(e.details[0].path).toBe("body.name");
  });

  it("unknown body fields are 422 VALIDATION_ERROR with the field path", async () => {
    const r = await call(s.url, "POST", "/v1/keys", { key, body: { name: "x", colour: "red" } });
    const e = envelope(r, 422, "VALIDATION_ERROR");
    // one path spelling (packages/base/src/validation.ts): the unknown field's own path
    expect(e.details).toEqual([{ path: "body.colour", message: "unknown field" }]);
  });

  it("wrong types are 422 with a details path per field", async () => {
    const r = await call(s.url, "POST", "/v1/keys", { key, body: { name: 5, scopes: "predict" } });
    const e = envelope(r, 422, "VALIDATION_ERROR");
    expect(e.details.map((d: { path: string }) => d.path).sort()).toEqual(["body.name", "body.scopes"]);
  });
});

describe("headers on every response", () => {
  it("success responses carry X-Service-Request-Id and no Link", async () => {
    const r = await call(s.url, "GET", "/v1/health");
    expect(r.status).toBe(200);
    expect(r.headers.get("x-service-request-id")).toMatch(/^req_[0-9a-f]{24}$/);
    expect(r.headers.get("link")).toBeNull();
  });

  it("GET /v1/health is public and reports the database and the durable executor (DECISIONS Prediction: health)", async () => {
    const r = await call(s.url, "GET", "/v1/health");
    expect(r.body).toMatchObject({ status: "ok", version: "1.0.0", checks: { database: "ok", executor: "ok" } });
    expect(Number.isNaN(Date.parse(r.body.time))).toBe(false);
  });

  it("request ids are unique per request", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await call(s.url, "GET", "/v1/health")).headers.get("x-service-request-id")!);
    expect(ids.size).toBe(5);
  });

  it("docs_url points at this service's own error page, which documents the code", async () => {
    const e = envelope(await call(s.url, "GET", "/v1/keys"), 401, "INVALID_API_KEY");
    expect(e.docs_url).toBe(`${s.url}/docs/errors#INVALID_API_KEY`);
    const page = await call(s.url, "GET", "/docs/errors");
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="INVALID_API_KEY"');
  });

  it("the error page lists the one table: every envelope code and every code inside an answer (issue 11)", async () => {
    const { ERROR_CODES, OUTCOME_CODES } = await import("@cua/base/errors");
    const page = await call(s.url, "GET", "/docs/errors");
    for (const code of [...Object.keys(ERROR_CODES), ...Object.keys(OUTCOME_CODES)])
      expect(page.text).toContain(`id="${code}"`);
    expect(page.text).toContain("MAX_STEPS_EXCEEDED");
  });
});
