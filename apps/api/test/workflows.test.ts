// Workflows API through the real server (SPEC.md "Workflows"; DECISIONS.md "Workflows", its Compatibility
// amendment (DSL 2026-06-01: slug, inputs_schema, status, records), "Tiers and numeric limits" (200 steps,
// 8 levels, 16 branches), "Cross-cutting rules" (201 on create, lists, 404 codes, check order)).
// Execution is in workflows-exec.test.ts.
// biome-ignore-all lint/suspicious/noThenProperty: `then` is the DSL's field of an if step
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { testMachine } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let other: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account();
  other = await s.account();
  machine = await testMachine(s, acct.test_key);
});
afterAll(() => s.stop());

const req = (method: string, p: string, body?: unknown, key = acct.test_key) => call(s.url, method, p, { key, body });
const task = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: "task", task: "do #steps=1", ...extra });
const simple = { steps: [{ id: "ok", type: "succeed", output: { x: 1 } }] };

describe("create, get, list, update, delete", () => {
  it("POST /v1/workflows answers 201 with version 1, the DSL version and a slug derived from the name", async () => {
    const r = await req("POST", "/v1/workflows", { name: "Export Report!", definition: simple, description: "d" });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      object: "workflow",
      name: "Export Report!",
      slug: "export-report",
      version: 1,
      dsl_version: "2026-06-01",
      definition: simple,
      inputs_schema: null,
      description: "d",
      status: "active",
      metadata: {},
      request_id: r.headers.get("x-service-request-id"),
    });
    expect(r.body.id).toMatch(/^wf_test_[0-9a-f]{24}$/);
    const again = await req("POST", "/v1/workflows", { name: "Export report", definition: simple });
    expect(again.body.slug).toBe("export-report-2");
    const g = await req("GET", `/v1/workflows/${r.body.id}`);
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ id: r.body.id, version: 1, definition: simple });
  });

  it("an explicit slug in use, or malformed, is 422 at body.slug", async () => {
    const a = await req("POST", "/v1/workflows", { name: "a", slug: "taken-slug", definition: simple });
    expect(a.status).toBe(201);
    const b = await req("POST", "/v1/workflows", { name: "b", slug: "taken-slug", definition: simple });
    envelope(b, 422, "VALIDATION_ERROR");
    expect(b.body.error.details).toEqual([{ path: "body.slug", message: expect.stringContaining("already") }]);
    const c = await req("POST", "/v1/workflows", { name: "c", slug: "Bad Slug", definition: simple });
    envelope(c, 422, "VALIDATION_ERROR");
    expect(c.body.error.details[0].path).toBe("body.slug");
    // another account may use the same slug
    const d = await req("POST", "/v1/workflows", { name: "d", slug: "taken-slug", definition: simple }, other.test_key);
    expect(d.status).toBe(201);
  });

  it("PUT writes version N+1 and keeps the old one; status archived; metadata only keeps the version", async () => {
    const c = await req("POST", "/v1/workflows", { name: "versions", definition: simple });
    const def2 = { steps: [{ id: "two", type: "succeed" }] };
    const u = await req("PUT", `/v1/workflows/${c.body.id}`, { definition: def2 });
    expect(u.status).toBe(200);
    expect(u.body).toMatchObject({ version: 2, definition: def2 });
    const rows = await s.app.deps.db.workflowVersion.findMany({
      where: { workflowId: c.body.id },
      orderBy: { version: "asc" },
    });
    expect(rows.map((r) => [r.version, r.definition])).toEqual([
      [1, simple],
      [2, def2],
    ]);
    const hist = await req("GET", `/v1/workflows/${c.body.id}/versions`);
    expect(hist.status).toBe(200);
    expect(hist.body).toMatchObject({ object: "list", has_more: false });
    expect(hist.body.data.map((v: any) => [v.object, v.version, v.definition])).toEqual([
      ["workflow.version", 2, def2],
      ["workflow.version", 1, simple],
    ]);
    envelope(
      await req("GET", `/v1/workflows/${c.body.id}/versions`, undefined, other.test_key),
      404,
      "WORKFLOW_NOT_FOUND",
    );
    const m = await req("PUT", `/v1/workflows/${c.body.id}`, { metadata: { team: "ops" }, status: "archived" });
    expect(m.body).toMatchObject({ version: 2, status: "archived", metadata: { team: "ops" } });
    const empty = await req("PUT", `/v1/workflows/${c.body.id}`, {});
    envelope(empty, 400, "EMPTY_UPDATE");
    const bad = await req("PUT", `/v1/workflows/${c.body.id}`, { status: "paused" });
    envelope(bad, 422, "VALIDATION_ERROR");
    expect(bad.body.error.details[0].path).toBe("body.status");
    const archivedList = await req("GET", "/v1/workflows?status=archived");
    expect(archivedList.body.data.map((w: any) => w.id)).toContain(c.body.id);
  });

  it("GET /v1/workflows is the list shape, newest first, paginated; bad limit/status/cursor are 400", async () => {
    const acct2 = await s.account();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await req("POST", "/v1/workflows", { name: `w${i}`, definition: simple }, acct2.test_key)).body.id);
    const p1 = await req("GET", "/v1/workflows?limit=2", undefined, acct2.test_key);
    expect(p1.body).toMatchObject({ object: "list", has_more: true });
    expect(p1.body.data.map((w: any) => w.id)).toEqual([ids[2], ids[1]]);
    const p2 = await req("GET", `/v1/workflows?limit=2&cursor=${p1.body.next_cursor}`, undefined, acct2.test_key);
    expect(p2.body).toMatchObject({ has_more: false, next_cursor: null });
    expect(p2.body.data.map((w: any) => w.id)).toEqual([ids[0]]);
    envelope(await req("GET", "/v1/workflows?limit=0", undefined, acct2.test_key), 400, "INVALID_LIMIT");
    envelope(await req("GET", "/v1/workflows?status=nope", undefined, acct2.test_key), 400, "INVALID_STATUS_FILTER");
    envelope(await req("GET", "/v1/workflows?cursor=zzz", undefined, acct2.test_key), 400, "INVALID_CURSOR");
    // live and test are separate worlds
    const live = await req("GET", "/v1/workflows", undefined, acct2.live_key);
    expect(live.body.data).toEqual([]);
  });

  it("DELETE answers {id, deleted: true}; then 404 WORKFLOW_NOT_FOUND; another account's or a malformed id is 404", async () => {
    const c = await req("POST", "/v1/workflows", { name: "gone", definition: simple });
    envelope(await req("GET", `/v1/workflows/${c.body.id}`, undefined, other.test_key), 404, "WORKFLOW_NOT_FOUND");
    envelope(await req("GET", `/v1/workflows/${c.body.id}`, undefined, acct.live_key), 404, "WORKFLOW_NOT_FOUND");
    const d = await req("DELETE", `/v1/workflows/${c.body.id}`);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ id: c.body.id, object: "workflow", deleted: true });
    envelope(await req("GET", `/v1/workflows/${c.body.id}`), 404, "WORKFLOW_NOT_FOUND");
    envelope(await req("DELETE", `/v1/workflows/${c.body.id}`), 404, "WORKFLOW_NOT_FOUND");
    envelope(await req("PUT", `/v1/workflows/${c.body.id}`, { name: "x" }), 404, "WORKFLOW_NOT_FOUND");
    envelope(await req("GET", "/v1/workflows/not-an-id!"), 404, "WORKFLOW_NOT_FOUND");
    // a NUL byte never reaches the database (PostgreSQL refuses it): 404 like any malformed id
    envelope(await req("GET", "/v1/workflows/wf%00x"), 404, "WORKFLOW_NOT_FOUND");
    envelope(await req("GET", "/v1/workflows/runs/wfr%00x"), 404, "WORKFLOW_RUN_NOT_FOUND");
    envelope(await req("GET", "/v1/workflows/runs/wfr%00x/events"), 404, "WORKFLOW_RUN_NOT_FOUND");
    const nulCursor = Buffer.from(JSON.stringify({ c: new Date().toISOString(), i: "a\u0000b" })).toString("base64url");
    envelope(await req("GET", `/v1/workflows/runs?cursor=${nulCursor}`), 400, "INVALID_CURSOR");
  });

  it("scopes: workflows:read lists, workflows:write creates (403 INSUFFICIENT_SCOPE)", async () => {
    const k = await req("POST", "/v1/keys", { name: "ro", scopes: ["workflows:read"] });
    expect(k.status).toBe(201);
    expect((await req("GET", "/v1/workflows", undefined, k.body.key)).status).toBe(200);
    envelope(
      await req("POST", "/v1/workflows", { name: "x", definition: simple }, k.body.key),
      403,
      "INSUFFICIENT_SCOPE",
    );
    envelope(await req("POST", "/v1/workflows/runs", { definition: simple }, k.body.key), 403, "INSUFFICIENT_SCOPE");
  });
});

describe("definition validation: 422 VALIDATION_ERROR with each problem's path (create, update, ad-hoc start)", () => {
  const nest = (depth: number): Record<string, unknown> =>
    depth === 1 ? task("leaf") : { id: `l${depth}`, type: "retry", max_attempts: 1, body: [nest(depth - 1)] };
  const cases: Array<[string, unknown, string]> = [
    [
      "201 steps (containers count)",
      {
        steps: [
          { id: "r", type: "retry", max_attempts: 1, body: Array.from({ length: 200 }, (_, i) => task(`s${i}`)) },
        ],
      },
      "body.definition.steps.0.body.199",
    ],
    ["nesting over 8 levels", { steps: [nest(9)] }, `body.definition.steps.0${".body.0".repeat(8)}`],
    [
      "17 branches",
      { steps: [{ id: "p", type: "parallel", branches: Array.from({ length: 17 }, (_, i) => [task(`b${i}`)]) }] },
      "body.definition.steps.0.branches",
    ],
    [
      "human_approval in a branch",
      { steps: [{ id: "p", type: "parallel", branches: [[{ id: "h", type: "human_approval" }]] }] },
      "body.definition.steps.0.branches.0.0.type",
    ],
    [
      "succeed deep in a branch",
      {
        steps: [
          {
            id: "p",
            type: "parallel",
            branches: [[{ id: "l", type: "loop", count: 1, body: [{ id: "s", type: "succeed" }] }]],
          },
        ],
      },
      "body.definition.steps.0.branches.0.0.body.0.type",
    ],
    [
      "fail in a branch",
      { steps: [{ id: "p", type: "parallel", branches: [[{ id: "f", type: "fail" }]] }] },
      "body.definition.steps.0.branches.0.0.type",
    ],
    ["duplicate step id", { steps: [task("a"), task("a")] }, "body.definition.steps.1.id"],
    ["malformed step id", { steps: [task("a.b")] }, "body.definition.steps.0.id"],
    ["save_as inputs", { steps: [task("a", { save_as: "inputs" })] }, "body.definition.steps.0.save_as"],
    ["save_as vars", { steps: [task("a", { save_as: "vars" })] }, "body.definition.steps.0.save_as"],
    [
      "unknown op",
      { steps: [{ id: "a", type: "assert", condition: { op: "regex", left: "a", right: "b" } }] },
      "body.definition.steps.0.condition.op",
    ],
    ["unknown step type", { steps: [{ id: "a", type: "script" }] }, "body.definition.steps.0.type"],
    [
      "reference to a later step",
      { steps: [task("a", { task: "{{b.result}}" }), task("b")] },
      "body.definition.steps.0.task",
    ],
    [
      "reference to a sibling branch",
      { steps: [{ id: "p", type: "parallel", branches: [[task("a")], [task("b", { task: "{{a.result}}" })]] }] },
      "body.definition.steps.0.branches.1.0.task",
    ],
    [
      "retry max_attempts 21",
      { steps: [{ id: "r", type: "retry", max_attempts: 21, body: [task("a")] }] },
      "body.definition.steps.0.max_attempts",
    ],
    ["no steps", { steps: [] }, "body.definition.steps"],
  ];
  it.each(cases)("create: %s", async (_n, definition, path) => {
    const r = await req("POST", "/v1/workflows", { name: "bad", definition });
    envelope(r, 422, "VALIDATION_ERROR");
    expect(r.body.error.details.map((d: any) => d.path)).toEqual([path]);
  });
  it("update and ad-hoc start validate the same way", async () => {
    const c = await req("POST", "/v1/workflows", { name: "valid", definition: simple });
    const u = await req("PUT", `/v1/workflows/${c.body.id}`, { definition: { steps: [task("a"), task("a")] } });
    envelope(u, 422, "VALIDATION_ERROR");
    expect(u.body.error.details).toEqual([
      { path: "body.definition.steps.1.id", message: expect.stringContaining("duplicate") },
    ]);
    expect((await req("GET", `/v1/workflows/${c.body.id}`)).body.version).toBe(1);
    const a = await req("POST", "/v1/workflows/runs", {
      definition: { steps: [{ id: "p", type: "parallel", branches: [[{ id: "h", type: "human_approval" }]] }] },
    });
    envelope(a, 422, "VALIDATION_ERROR");
    expect(a.body.error.details[0].path).toBe("body.definition.steps.0.branches.0.0.type");
  });
  it("several problems are all reported", async () => {
    const r = await req("POST", "/v1/workflows", {
      name: "many",
      definition: { steps: [task("a b"), { id: "x", type: "assert", condition: { op: "eq", left: 1 } }] },
    });
    expect(r.body.error.details.map((d: any) => d.path)).toEqual([
      "body.definition.steps.0.id",
      "body.definition.steps.1.condition.right",
    ]);
  });
  it("inputs_schema must be a JSON Schema (422 at body.inputs_schema)", async () => {
    const r = await req("POST", "/v1/workflows", { name: "s", definition: simple, inputs_schema: { type: "nope" } });
    envelope(r, 422, "VALIDATION_ERROR");
    expect(r.body.error.details[0].path).toBe("body.inputs_schema");
  });
  it("unknown body fields are 422 at their path", async () => {
    const r = await req("POST", "/v1/workflows", { name: "s", definition: simple, color: "red" });
    envelope(r, 422, "VALIDATION_ERROR");
    expect(r.body.error.details).toEqual([{ path: "body.color", message: "unknown field" }]);
  });
});

describe("starting runs", () => {
  const schema = {
    type: "object",
    properties: { total: { type: "integer" }, who: { type: "string" } },
    required: ["total"],
    additionalProperties: false,
  };
  it("inputs are checked against inputs_schema at start: 422 with body.inputs paths", async () => {
    const c = await req("POST", "/v1/workflows", { name: "inputs", definition: simple, inputs_schema: schema });
    const missing = await req("POST", `/v1/workflows/${c.body.id}/runs`, { inputs: { who: 5 } });
    envelope(missing, 422, "VALIDATION_ERROR");
    expect(missing.body.error.details.map((d: any) => d.path).sort()).toEqual(["body.inputs.total", "body.inputs.who"]);
    const ok = await req("POST", `/v1/workflows/${c.body.id}/runs`, { inputs: { total: 3 } });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({
      object: "workflow.run",
      status: "queued",
      workflow_id: c.body.id,
      workflow_version: 1,
      inputs: { total: 3 },
      output: null,
      error: null,
      budget_cents: 0,
      spent_cents: 0,
      iterations_used: 0,
      max_iterations: 1000,
      webhook_secret: null,
      steps: [{ id: "ok", type: "succeed", status: "pending", output: null, run_id: null }],
    });
    expect(ok.body.id).toMatch(/^wfr_test_[0-9a-f]{24}$/);
    // ad-hoc runs take an inline inputs_schema
    const adhoc = await req("POST", "/v1/workflows/runs", { definition: simple, inputs_schema: schema, inputs: {} });
    envelope(adhoc, 422, "VALIDATION_ERROR");
    expect(adhoc.body.error.details[0].path).toBe("body.inputs.total");
  });

  it("an archived workflow starts no run (409 INVALID_STATE); an unknown one is 404", async () => {
    const c = await req("POST", "/v1/workflows", { name: "arch", definition: simple });
    await req("PUT", `/v1/workflows/${c.body.id}`, { status: "archived" });
    envelope(await req("POST", `/v1/workflows/${c.body.id}/runs`, {}), 409, "INVALID_STATE");
    envelope(await req("POST", "/v1/workflows/wf_test_000000000000000000000000/runs", {}), 404, "WORKFLOW_NOT_FOUND");
  });

  it("task steps without machine_id need the run's machine_id (422 body.machine_id); machine ids are checked", async () => {
    const def = { steps: [task("t")] };
    const r = await req("POST", "/v1/workflows/runs", { definition: def });
    envelope(r, 422, "VALIDATION_ERROR");
    expect(r.body.error.details[0].path).toBe("body.machine_id");
    envelope(
      await req("POST", "/v1/workflows/runs", { definition: def, machine_id: "nope" }),
      400,
      "INVALID_MACHINE_ID",
    );
    const ok = await req("POST", "/v1/workflows/runs", { definition: def, machine_id: machine });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ workflow_id: null, workflow_version: null, machine_id: machine });
  });

  it("Idempotency-Key: a repeated start answers the same run (with its webhook_secret) and starts nothing more", async () => {
    const headers = { "Idempotency-Key": `wf-start-${Date.now()}` };
    const body = { definition: simple, webhook_url: "https://93.184.215.14/hook" };
    const a = await call(s.url, "POST", "/v1/workflows/runs", { key: acct.test_key, body, headers });
    const b = await call(s.url, "POST", "/v1/workflows/runs", { key: acct.test_key, body, headers });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.id).toBe(a.body.id);
    expect(b.body.webhook_secret).toBe(a.body.webhook_secret);
    const other = await call(s.url, "POST", "/v1/workflows/runs", {
      key: acct.test_key,
      body: { definition: { steps: [{ id: "x", type: "fail" }] } },
      headers,
    });
    envelope(other, 422, "IDEMPOTENCY_KEY_REUSED");
  });

  it("webhook_secret appears once, in the start response", async () => {
    const r = await call(s.url, "POST", "/v1/workflows/runs", {
      key: acct.test_key,
      body: { definition: simple, webhook_url: "https://93.184.215.14/hook" },
    });
    expect(r.status).toBe(201);
    expect(r.body.webhook_secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect((await req("GET", `/v1/workflows/runs/${r.body.id}`)).body.webhook_secret).toBe(null);
    const insecure = await req("POST", "/v1/workflows/runs", {
      definition: simple,
      webhook_url: "https://127.0.0.1/x",
    });
    expect(insecure.status).toBe(422);
  });

  it("GET /v1/workflows/runs lists (filters status and workflow_id); unknown run ids are 404 WORKFLOW_RUN_NOT_FOUND", async () => {
    const acct3 = await s.account();
    const c = await req("POST", "/v1/workflows", { name: "lst", definition: simple }, acct3.test_key);
    const a = await req("POST", `/v1/workflows/${c.body.id}/runs`, {}, acct3.test_key);
    const b = await req("POST", "/v1/workflows/runs", { definition: simple }, acct3.test_key);
    const all = await req("GET", "/v1/workflows/runs", undefined, acct3.test_key);
    expect(all.body.object).toBe("list");
    expect(all.body.data.map((r: any) => r.id)).toEqual([b.body.id, a.body.id]);
    const mine = await req("GET", `/v1/workflows/runs?workflow_id=${c.body.id}`, undefined, acct3.test_key);
    expect(mine.body.data.map((r: any) => r.id)).toEqual([a.body.id]);
    envelope(
      await req("GET", "/v1/workflows/runs?status=done", undefined, acct3.test_key),
      400,
      "INVALID_STATUS_FILTER",
    );
    envelope(
      await req("GET", `/v1/workflows/runs/${a.body.id}`, undefined, other.test_key),
      404,
      "WORKFLOW_RUN_NOT_FOUND",
    );
    envelope(await req("GET", "/v1/workflows/runs/wfr_test_nope"), 404, "WORKFLOW_RUN_NOT_FOUND");
    envelope(await req("POST", "/v1/workflows/runs/wfr_test_nope/cancel"), 404, "WORKFLOW_RUN_NOT_FOUND");
    envelope(
      await req("POST", "/v1/workflows/runs/wfr_test_nope/resume", { approved: true }),
      404,
      "WORKFLOW_RUN_NOT_FOUND",
    );
    const badResume = await req("POST", `/v1/workflows/runs/${a.body.id}/resume`, {}, acct3.test_key);
    envelope(badResume, 422, "VALIDATION_ERROR");
    expect(badResume.body.error.details[0].path).toBe("body.approved");
  });
});
