// Issue 2 "HTTP": OpenAPI 3.1 (info.version 1.0.0) at /openapi.json and /.well-known/openapi.json,
// complete (every path, every error status, 201/202 where returned, security schemes), guarded by a
// snapshot; a rendered reference at /docs (SPEC.md "Versioning" 3).
import { ERROR_CODES } from "@cua/base/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "../src/http/openapi.ts";
import { openApiRouter } from "../src/trpc/router.ts";
import { call, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe("the OpenAPI document", () => {
  it("matches the committed snapshot (update deliberately with `npx vitest run -u`)", async () => {
    const doc = buildOpenApiDocument("http://localhost:8080");
    await expect(`${JSON.stringify(doc, null, 2)}\n`).toMatchFileSnapshot("./__snapshots__/openapi.json");
  });

  it("is served identically at /openapi.json and /.well-known/openapi.json, as OpenAPI 3.1 version 1.0.0", async () => {
    const a = await call(s.url, "GET", "/openapi.json");
    const b = await call(s.url, "GET", "/.well-known/openapi.json");
    expect(a.status).toBe(200);
    expect(a.body).toEqual(b.body);
    expect(a.body.openapi).toMatch(/^3\.1\./);
    expect(a.body.info.version).toBe("1.0.0");
    expect(a.body.servers[0].url).toBe(`${s.url}/v1`);
    expect(a.body.components.securitySchemes).toMatchObject({
      ApiKeyHeader: { type: "apiKey", in: "header", name: "X-API-Key" },
      BearerAuth: { type: "http", scheme: "bearer" },
    });
  });

  it("documents every procedure, with its real success status and the envelope on every error status", () => {
    const doc = buildOpenApiDocument("");
    // console-only procedures (served over /trpc) carry no openapi meta and stay out of the document
    const procs = Object.values((openApiRouter as any)._def.procedures as Record<string, any>)
      .map((p) => p._def.meta)
      .filter((m) => m?.openapi);
    expect(procs.length).toBeGreaterThan(15);
    for (const m of procs) {
      const op = doc.paths[m.openapi.path]?.[m.openapi.method.toLowerCase()];
      expect(op, `${m.openapi.method} ${m.openapi.path}`).toBeDefined();
      const statuses = Object.keys(op.responses);
      expect(statuses).toContain(String(m.successStatus ?? 200));
      for (const st of statuses.filter((x) => Number(x) >= 400)) {
        expect(op.responses[st].content["application/json"].schema).toEqual({
          $ref: "#/components/schemas/ErrorEnvelope",
        });
      }
      if (!m.public) {
        expect(statuses).toEqual(expect.arrayContaining(["401", "429", "500", "503"]));
        expect(op.security.length).toBe(2);
        expect(op.responses["401"].headers["WWW-Authenticate"]).toBeDefined();
      }
      if (m.scope) expect(op.responses["403"].description).toContain("INSUFFICIENT_SCOPE");
      for (const code of m.errors ?? []) {
        expect(op.responses[String(ERROR_CODES[code as keyof typeof ERROR_CODES].status)].description).toContain(code);
      }
    }
    expect(doc.paths["/keys"].post.responses["201"]).toBeDefined();
    expect(doc.paths["/keys"].post.responses["200"]).toBeUndefined();
    expect(doc.paths["/keys"].post.parameters.map((p: { name: string }) => p.name)).toContain("Idempotency-Key");
    expect(doc.paths["/health"].get.security).toEqual([]);
  });

  it("lists the whole error table", () => {
    const doc = buildOpenApiDocument("");
    expect(Object.keys(doc["x-error-codes"]).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(doc.components.schemas.ErrorEnvelope.properties.error.properties.code.enum.length).toBe(
      Object.keys(ERROR_CODES).length,
    );
  });
});

describe("/docs", () => {
  it("renders every path offline (no external scripts or styles)", async () => {
    const r = await call(s.url, "GET", "/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/text\/html/);
    const doc = buildOpenApiDocument("");
    for (const p of Object.keys(doc.paths)) expect(r.text).toContain(`/v1${p.replace(/&/g, "&amp;")}`);
    expect(r.text).not.toMatch(/<script[^>]+src=|<link[^>]+href="https?:/);
  });
});
