// Issue 16: /v1 is served by Fastify routes compiled from the operation registry (apps/api/src/http/v1-routes.ts)
// instead of trpc-to-openapi's handler. What a client can send that a router could read differently is pinned
// here to the answers trpc-to-openapi gave (a differential fuzz run against it found these cases): paths the URL
// parser normalises, empty path segments, letter case and trailing slashes, HEAD, a body's own __proto__.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account()).test_key;
});
afterAll(() => s.stop());

/** A request with the target sent exactly as written (fetch would resolve dot segments itself). */
function raw(
  method: string,
  target: string,
  body?: string,
): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path: target,
        headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => {
          let parsed: any = text;
          try {
            parsed = JSON.parse(text);
          } catch {}
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
          resolve({ status: res.statusCode ?? 0, headers, body: parsed, text });
        });
      },
    );
    r.on("error", reject);
    r.end(body);
  });
}

describe("compiled /v1 routes answer as trpc-to-openapi did", () => {
  it("an empty path parameter is no route (404 'No such route.'), not the operation with an empty id", async () => {
    for (const [m, t] of [
      ["POST", "/v1/runs//cancel"],
      ["GET", "/v1/machines//connection"],
      ["GET", "/v1/schedules//runs/1f7bbf7d-00cc-1afb-9a7f-c77c2f1f7fb5"],
    ] as const) {
      const r = await raw(m, t, m === "POST" ? "{}" : undefined);
      expect(envelope(r, 404, "NOT_FOUND").message, t).toBe("No such route.");
    }
  });

  it("dot segments (also %2e) are resolved before matching", async () => {
    expect(envelope(await raw("GET", "/v1/workflows/%2e%2e"), 404, "NOT_FOUND").message).toBe("No such route.");
    // /v1/workflows/x/.. is /v1/workflows: the list
    const list = await raw("GET", "/v1/workflows/x/%2E%2e");
    expect(list.status).toBe(200);
    expect(list.body.object).toBe("list");
  });

  it("a trailing slash or another letter case reaches the operation; a path of no operation is 404", async () => {
    const a = await raw("GET", "/v1/workflows/?x=1");
    expect([a.status, a.body.object]).toEqual([200, "list"]);
    const b = await call(s.url, "GET", "/v1/MODELS", { key });
    expect(b.status).toBe(200);
    expect(b.body.request_id).toMatch(/^req_/);
    expect(envelope(await call(s.url, "GET", "/v1/nope", { key }), 404, "NOT_FOUND").message).toBe("No such route.");
    expect(envelope(await call(s.url, "PUT", "/v1/models", { key, body: {} }), 404, "NOT_FOUND").message).toBe(
      "No such route.",
    );
  });

  it("HEAD on /v1 is an empty 204", async () => {
    const r = await raw("HEAD", "/v1/models");
    expect([r.status, r.text]).toEqual([204, ""]);
  });

  it("a body's own __proto__ field is an unknown field, and path parameters are raw URL segments", async () => {
    const r = await raw("POST", "/v1/ocr", '{"__proto__":{"admin":true}}');
    const e = envelope(r, 422, "VALIDATION_ERROR");
    expect(e.details).toContainEqual({ path: "body.__proto__", message: "unknown field" });
    // an encoded character stays encoded in the id the operation sees (then refused by its id check)
    const m = await raw("GET", "/v1/machines/mch_test_%41");
    expect(m.status).toBe(400);
    expect(m.body.error.message).toContain("mch_test_%41");
  });

  // Issue 16: the models catalog is a frozen constant, validated and serialised once; each answer's text only
  // gets its own request_id, where the per-call path puts it (last: the /v1 output schema names it)
  it("GET /v1/models: the catalog with each call's own request_id, the one of its X-Service-Request-Id", async () => {
    const [a, b] = [await raw("GET", "/v1/models"), await raw("GET", "/v1/models")];
    for (const r of [a, b]) {
      expect(r.status).toBe(200);
      expect(r.body.request_id).toBe(r.headers.get("x-service-request-id"));
      expect(r.text.endsWith(`,"request_id":"${r.body.request_id}"}`)).toBe(true);
      expect(Object.keys(r.body)).toEqual([
        "models",
        "cua_versions",
        "action_types",
        "pricing",
        "managed_machine",
        "request_id",
      ]);
    }
    expect(a.body.request_id).not.toBe(b.body.request_id);
    const { request_id: _a, ...restA } = a.body;
    const { request_id: _b, ...restB } = b.body;
    expect(restA).toEqual(restB);
    expect(restA.pricing.schedules).toBeTruthy();
    expect(restA.models.length).toBeGreaterThan(0);
  });
});
