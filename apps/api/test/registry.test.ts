// Issue 11 "One definition per operation": walks core's operation registry and proves that every consumer
// generated from a definition exists and agrees with it: the REST route (a real request reaches it: 401
// without a credential, 403 naming the definition's scope), the OpenAPI entry (path, method, scope, request
// and response fields equal to the definition's schemas, every error code it lists), the console procedure
// (401 without a session) and the MCP tool (DECISIONS "Compatibility amendments", bullet "MCP server").
import { ERROR_CODES, type ErrorCode } from "@cua/base/errors";
import { insertKey } from "@cua/core/keys/create-key";
import { type AnyOperation, pathParams, servedByRouter } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { INNGEST_PATH } from "../src/http/inngest-serve.ts";
import { buildOpenApiDocument } from "../src/http/openapi.ts";
import { operationErrors } from "../src/http/openapi-operations.ts";
import { v1Operations } from "../src/http/v1-routes.ts";
import { mcpOperations } from "../src/mcp/operations.ts";
import { generateTools } from "../src/mcp/tools.ts";
import { appRouter, openApiRouter } from "../src/trpc/router.ts";
import { trpc } from "./console-helpers.ts";
import { call, startTestServer, type TestServer } from "./helpers.ts";

const ops = operations as unknown as readonly AnyOperation[];
const rest = ops.filter((o) => o.path !== null);

// DECISIONS.md "Compatibility amendments", bullet "MCP server": tool -> group (schedules come with schedules)
const MCP_NAMES: Record<string, string> = {
  predict: "predict",
  ground: "predict",
  parse: "predict",
  create_session: "predict",
  session_predict: "predict",
  end_session: "predict",
  list_machines: "machines",
  create_machine: "machines",
  get_machine: "machines",
  start_machine: "machines",
  stop_machine: "machines",
  terminate_machine: "machines",
  get_screenshot: "machines",
  run_action: "machines",
  run_actions_batch: "machines",
  browser_op: "machines",
  terminal_exec: "machines",
  file_op: "machines",
  list_schedules: "schedules",
  create_schedule: "schedules",
  pause_schedule: "schedules",
  resume_schedule: "schedules",
  run_schedule_now: "schedules",
  get_usage: "account",
  get_capabilities: "public",
  get_pricing: "public",
};

const fill = (path: string) => `/v1${path.replace(/\{[^}]+\}/g, "x1")}`;
const props = (schema: Record<string, any> | undefined) => Object.keys(schema?.properties ?? {}).sort();
const jsonIn = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Record<string, any>;
const jsonOut = (s: z.ZodType) => z.toJSONSchema(s, { io: "output", unrepresentable: "any" }) as Record<string, any>;
const ownFields = (op: AnyOperation, schema: Record<string, any>) =>
  props(schema).filter((k) => !pathParams(op.path).includes(k));
/** A JSON Schema with its keys sorted; zod-openapi's `type: "object"` beside a oneOf is dropped. */
const norm = (x: any): any => {
  if (Array.isArray(x)) return x.map(norm);
  if (!x || typeof x !== "object") return x;
  const keys = Object.keys(x).filter((k) => !(k === "type" && x.oneOf && x[k] === "object") && k !== "$schema");
  return Object.fromEntries(keys.sort().map((k) => [k, norm(x[k])]));
};
/** Every property the definition declares has exactly the definition's schema in the document. */
const sameFields = (documented: Record<string, any> | undefined, defined: Record<string, any>, names: string[]) => {
  for (const k of names) expect(norm(documented?.properties?.[k]), k).toEqual(norm(defined.properties?.[k]));
};

let s: TestServer;
let noScopeKey: string;
const doc = buildOpenApiDocument("");

beforeAll(async () => {
  s = await startTestServer({ RATE_LIMIT_SCALE: "100" });
  const acct = await s.account();
  noScopeKey = (await insertKey(s.app.deps.db, { accountId: acct.account_id, mode: "live", name: "none", scopes: [] }))
    .raw;
});
afterAll(() => s.stop());

describe("the registry", () => {
  it("has unique ids and unique REST routes", () => {
    expect(new Set(ops.map((o) => o.id)).size).toBe(ops.length);
    const routes = rest.map((o) => `${o.method} ${o.path}`);
    expect(new Set(routes).size).toBe(routes.length);
  });

  it("describes every path of /openapi.json (nothing undeclared), and /openapi.json every REST operation", () => {
    const declared = new Set(rest.map((o) => `${o.method.toLowerCase()} ${o.path}`));
    const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, item]) =>
      Object.keys(item).map((m) => `${m} ${p}`),
    );
    expect(documented.filter((d) => !declared.has(d))).toEqual([]);
    expect([...declared].filter((d) => !documented.includes(d))).toEqual([]);
  });

  it("generates exactly one /v1 procedure per router-served operation, with the definition's route and scope", () => {
    // the OpenAPI document's procedures (trpc-to-openapi generates /openapi.json from them)
    const procs = (openApiRouter as any)._def.procedures as Record<string, { _def: { meta?: any } }>;
    for (const op of ops) {
      const p = procs[op.id];
      if (!servedByRouter(op)) {
        expect(p?._def.meta?.openapi, op.id).toBeUndefined();
        continue;
      }
      expect(p, op.id).toBeDefined();
      expect(p!._def.meta.openapi).toMatchObject({ method: op.method, path: op.path });
      expect(p!._def.meta.scope).toBe(op.scope);
      expect(p!._def.meta.op).toBe(op);
    }
    // no /v1 operation is reachable over the console's /trpc
    for (const op of ops) expect((appRouter as any)._def.procedures[op.id], op.id).toBeUndefined();
  });

  it("compiles exactly one /v1 route per router-served operation, from its definition", () => {
    expect(v1Operations.map((c) => c.op)).toEqual(ops.filter(servedByRouter));
    for (const c of v1Operations) {
      expect(c.endpoint).toBe(`${c.op.method} /v1${c.op.path}`);
      expect(c.url).toBe(`/v1${c.op.path!.replace(/\{([^}]+)\}/g, ":$1")}`);
      expect(c.rule?.scope).toBe(c.op.auth === "public" ? undefined : c.op.scope);
    }
  });
});

describe.each(rest.map((o) => [`${o.method} ${o.path} (${o.id})`, o] as const))("%s", (_name, op) => {
  it("has its OpenAPI entry: scope, security, success status, every error code, the definition's fields", () => {
    const entry = doc.paths[op.path!]?.[op.method.toLowerCase()];
    expect(entry).toBeDefined();
    expect(entry["x-required-scope"]).toBe(op.scope);
    if (op.auth === "api_key") expect(entry.security).toEqual([{ ApiKeyHeader: [] }, { BearerAuth: [] }]);
    if (op.auth === "public") expect(entry.security).toEqual([]);
    if (op.auth === "device_token") expect(entry.security).toEqual([{ DeviceToken: [] }]);
    expect(Object.keys(entry.responses)).toContain(String(op.successStatus));
    // every code it can answer (its own and the cross-cutting ones) is listed under its status
    const codes = operationErrors(op, Boolean(entry.requestBody));
    for (const code of codes) {
      const status = String(ERROR_CODES[code as ErrorCode].status);
      expect(entry.responses[status]?.description ?? "", `${code} under ${status}`).toContain(`${code}:`);
    }
    for (const code of op.errors) expect(codes).toContain(code);
    if (op.auth === "api_key") expect(Object.keys(entry.responses)).toEqual(expect.arrayContaining(["401", "429"]));
    if (op.scope) expect(entry.responses["403"].description).toContain("INSUFFICIENT_SCOPE");
    // request fields: path parameters, then query parameters (GET) or body properties
    const input = jsonIn(op.input);
    const params = (entry.parameters ?? []) as { name: string; in: string; schema?: unknown }[];
    expect(
      params
        .filter((p) => p.in === "path")
        .map((p) => p.name)
        .sort(),
    ).toEqual(pathParams(op.path).sort());
    if (op.method === "GET" || op.method === "DELETE") {
      const query = params
        .filter((p) => p.in === "query")
        .map((p) => p.name)
        .sort();
      expect(query).toEqual(op.method === "GET" ? ownFields(op, input) : query);
      for (const p of params.filter((x) => x.in === "query")) {
        const { description: _d, ...own } = input.properties?.[p.name] ?? {};
        const { description: _e, ...documented } = (p.schema ?? {}) as Record<string, unknown>;
        expect(norm(documented), p.name).toEqual(norm(own));
      }
    } else if (ownFields(op, input).length > 0) {
      const body = entry.requestBody?.content?.["application/json"]?.schema;
      expect(props(body)).toEqual(ownFields(op, input));
      sameFields(body, input, ownFields(op, input));
    }
    // response fields: the definition's (the transport may add request_id)
    const content = entry.responses[String(op.successStatus)].content ?? {};
    if (op.transport === "json") {
      const out = jsonOut(op.output);
      expect(props(content["application/json"]?.schema)).toEqual(expect.arrayContaining(props(out)));
      sameFields(content["application/json"]?.schema, out, props(out));
    }
    if (op.transport === "sse") expect(content["text/event-stream"]).toBeDefined();
    for (const alt of op.alsoServes ?? []) expect(content[alt], alt).toBeDefined();
  });

  it("is served: a real request reaches it (its credential check answers, not a 404)", async () => {
    const r = await call(s.url, op.method, fill(op.path!), op.method === "GET" ? {} : { body: {} });
    if (op.auth === "api_key") {
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("INVALID_API_KEY");
    } else if (op.auth === "device_token") {
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("INVALID_DEVICE_TOKEN");
    } else if (op.auth === "signature") {
      expect(r.status).toBe(401); // an unsigned body (the webhook fire: SPEC Authentication 6)
      expect(r.body.error.code).toBe("INVALID_SIGNATURE");
    } else {
      expect(r.body?.error?.code).not.toBe("NOT_FOUND");
      expect([200, 503]).toContain(r.status);
    }
  });
});

describe.each(rest.filter((o) => o.scope).map((o) => [`${o.method} ${o.path} (${o.id})`, o] as const))(
  "%s with a key that lacks its scope",
  (_name, op) => {
    it("refuses a key without its scope: 403 naming the definition's scope", async () => {
      const r = await call(s.url, op.method, fill(op.path!), {
        key: noScopeKey,
        ...(op.method === "GET" ? {} : { body: {} }),
      });
      expect(r.status).toBe(403);
      expect(r.body.error).toMatchObject({ code: "INSUFFICIENT_SCOPE", required_scope: op.scope });
    });
  },
);

describe("routes outside /v1", () => {
  it.each(ops.filter((o) => o.route).map((o) => [o.id, o] as const))(
    "%s is mounted at its route (runs-inngest-serve.test.ts calls it) and kept out of the public OpenAPI",
    (_id, op) => {
      expect(INNGEST_PATH).toBe(op.route);
      expect(Object.keys(doc.paths)).not.toContain(op.route);
      expect(Object.keys(doc.paths)).not.toContain(op.route!.replace(/^\/v1/, ""));
    },
  );
});

describe("console procedures", () => {
  const procs = (appRouter as any)._def.procedures as Record<string, unknown>;

  it("exist exactly for the operations the console exposes", () => {
    for (const op of ops) {
      if (op.console === false) expect(procs[`console.${op.id}`], op.id).toBeUndefined();
      else expect(procs[`console.${op.id}`], op.id).toBeDefined();
      // operator-only operations never get a /v1 route
      if (op.console === "operator-only") expect(op.path, op.id).toBeNull();
    }
  });

  it.each(ops.filter((o) => o.console !== false).map((o) => [o.id, o] as const))(
    "console.%s needs the operator's session (401 UNAUTHENTICATED)",
    async (_id, op) => {
      if (op.transport === "sse") {
        // a subscription answers over server-sent events: the refusal is the stream's error event
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), 5000);
        const r = await fetch(`${s.url}/trpc/console.${op.id}?input=${encodeURIComponent('{"id":"x1"}')}`, {
          signal: ac.signal,
        });
        let text = "";
        const reader = r.body!.getReader();
        while (!text.includes("UNAUTHENTICATED")) {
          const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
          if (done) break;
          text += new TextDecoder().decode(value);
        }
        clearTimeout(timer);
        ac.abort();
        expect(text).toContain("UNAUTHENTICATED");
        return;
      }
      const r = await trpc(s.url, `console.${op.id}`, op.method === "GET" ? { query: true } : { input: {} });
      expect(r.status).toBe(401);
      expect(r.error.code).toBe("UNAUTHENTICATED");
    },
  );
});

describe("MCP tools", () => {
  const tools = generateTools(mcpOperations());

  it("carry the names and groups DECISIONS gives, one per definition that names one", () => {
    for (const op of ops.filter((o) => o.mcp)) {
      expect(MCP_NAMES[op.mcp!.tool], op.mcp!.tool).toBe(op.mcp!.group);
      const tool = tools.find((t) => t.name === op.mcp!.tool);
      expect(tool, op.mcp!.tool).toBeDefined();
      expect(tool!.op.id).toBe(op.id);
      expect(tool!.listing._meta?.["svc/scope"]).toBe(op.scope);
      expect(tool!.listing._meta?.["svc/rest"]).toBe(op.path ? `${op.method} /v1${op.path}` : undefined);
      expect(props(tool!.listing.inputSchema as Record<string, any>)).toEqual(
        op.input instanceof z.ZodVoid ? [] : props(jsonIn(op.input)),
      );
    }
    // every DECISIONS tool but the schedule group (built with schedules) has its definition in the registry
    const named = new Set(ops.flatMap((o) => (o.mcp ? [o.mcp.tool] : [])));
    const missing = Object.entries(MCP_NAMES)
      .filter(([tool, group]) => group !== "schedules" && !named.has(tool))
      .map(([t]) => t);
    expect(missing).toEqual([]);
  });
});
