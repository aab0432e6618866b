// DECISIONS.md "Compatibility amendments (2026-11-25)" through the real server, bullet by bullet where the
// compat client suite (compat-client.test.ts) does not already show it: error types by status, key kind
// header, request_id in success bodies, list limits, prompt budget details, runs' create fields
// (deadline_seconds, awaiting_human_timeout_seconds, metadata, model, llm) and `error` frames, session
// fields, GET /v1/billing/active, health fields, and the OpenAPI document carrying all of it.
import { makePng } from "@cua/base/images/screenshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { createRun, liveMockMachine, testMachine, waitFor, waitRun } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;
const SHOT = makePng(200, 100, (x, y) => [x % 256, y % 256, 7, 255]).toString("base64");

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account({ credits: 300 });
  machine = await testMachine(s, acct.test_key);
});
afterAll(() => s.stop());

describe("errors, headers and bodies", () => {
  it("error type by status: 401 auth_error, 403 forbidden, 404 not_found_error, 400/422 validation_error (409 state_error: compat-client)", async () => {
    expect(envelope(await call(s.url, "GET", "/v1/runs"), 401, "INVALID_API_KEY").type).toBe("auth_error");
    const minted = await call(s.url, "POST", "/v1/keys", { key: acct.live_key, body: { scopes: ["usage"] } });
    expect(minted.status, minted.text).toBe(201);
    const denied = envelope(await call(s.url, "GET", "/v1/runs", { key: minted.body.key }), 403, "INSUFFICIENT_SCOPE");
    expect(denied.type).toBe("forbidden");
    const nf = envelope(
      await call(s.url, "GET", "/v1/runs/run_test_000", { key: acct.test_key }),
      404,
      "RUN_NOT_FOUND",
    );
    expect(nf.type).toBe("not_found_error");
    expect(
      envelope(
        await call(s.url, "GET", "/v1/machines/mch_test_0123456789abcdef", { key: acct.test_key }),
        404,
        "MACHINE_NOT_FOUND",
      ).type,
    ).toBe("not_found_error");
    const lim = envelope(
      await call(s.url, "GET", "/v1/sessions?limit=0", { key: acct.test_key }),
      400,
      "INVALID_LIMIT",
    );
    expect(lim).toMatchObject({ type: "validation_error", actual: "0", min: 1, max: 200 });
    const st = envelope(
      await call(s.url, "GET", "/v1/machines?status=nope", { key: acct.test_key }),
      400,
      "INVALID_STATUS_FILTER",
    );
    expect(st.valid_options).toContain("running");
    const fna = envelope(
      await call(s.url, "GET", "/v1/llm/keys", { key: acct.test_key }),
      400,
      "FEATURE_NOT_AVAILABLE",
    );
    expect(fna.type).toBe("validation_error");
  });

  it("X-Service-Key-Kind on every answer to a key (errors too); request_id in every JSON success body", async () => {
    for (const [key, kind] of [
      [acct.live_key, "live"],
      [acct.test_key, "test"],
    ] as const) {
      for (const p of ["/v1/models", "/v1/usage", "/v1/runs", "/v1/runs/run_test_1"]) {
        const r = await call(s.url, "GET", p, { key });
        expect(r.headers.get("x-service-key-kind"), `${p} ${r.status}`).toBe(kind);
        if (r.status === 200) expect(r.body.request_id).toBe(r.headers.get("x-service-request-id"));
      }
    }
    const h = await call(s.url, "GET", "/v1/health");
    expect(h.headers.get("x-service-key-kind")).toBeNull(); // no key, no kind
    expect(h.body).toMatchObject({ service: "api", api_version: "v1", request_id: expect.any(String) });
    const mh = await call(s.url, "GET", "/v1/machines/health");
    expect(mh.body).toMatchObject({ service: "machines", api_version: "v1" });
  });

  it("INPUT_TOO_LARGE names the fields; a string where an integer belongs is 422 (no coercion)", async () => {
    const big = "x".repeat(16_001);
    const e = envelope(
      await call(s.url, "POST", "/v1/predict", {
        key: acct.test_key,
        body: { screenshot: SHOT, instruction: "x", system_prompt: big, instructions: big },
      }),
      400,
      "INPUT_TOO_LARGE",
    );
    expect(e.details.map((d: { path: string }) => d.path)).toEqual(["body.system_prompt", "body.instructions"]);
    for (const body of [
      { screenshot: SHOT, instruction: "x", max_actions: "3" },
      { screenshot: SHOT, instruction: "x", include_raw_code: "true" },
    ]) {
      const v = envelope(
        await call(s.url, "POST", "/v1/predict", { key: acct.test_key, body }),
        422,
        "VALIDATION_ERROR",
      );
      expect(v.details[0].path).toMatch(/^body\.(max_actions|include_raw_code)$/);
    }
    const run = envelope(
      await createRun(s, acct.test_key, { machine_id: machine, task: "x", max_steps: "3" }),
      422,
      "VALIDATION_ERROR",
    );
    expect(run.details[0].path).toBe("body.max_steps");
  });
});

describe("sessions and prediction options", () => {
  it("session create keeps tools and metadata; llm on a test key without a key header is 422", async () => {
    const c = await call(s.url, "POST", "/v1/sessions", {
      key: acct.test_key,
      body: { tools: ["click"], metadata: { flow: "login" }, max_trajectory_length: 5 },
    });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ tools: ["click"], metadata: { flow: "login" }, max_trajectory_length: 5 });
    // the session's tools filter applies to its predicts
    const p = await call(s.url, "POST", `/v1/sessions/${c.body.session_id}/predict`, {
      key: acct.test_key,
      body: { screenshot: SHOT, instruction: "type 'x'" },
    });
    expect(p.body.actions[0]).toMatchObject({ action_type: "fail", params: { code: "TOOL_NOT_ALLOWED" } });
    envelope(
      await call(s.url, "POST", "/v1/predict", {
        key: acct.test_key,
        body: { screenshot: SHOT, instruction: "x", llm: { provider: "openai", model: "computer-use-preview" } },
      }),
      422,
      "LLM_KEY_NOT_CONFIGURED",
    );
  });
});

describe("runs", () => {
  it("create validates the commercial fields", async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [{ deadline_seconds: 0 }, 422, "VALIDATION_ERROR"],
      [{ deadline_seconds: 86_401 }, 422, "VALIDATION_ERROR"],
      [{ awaiting_human_timeout_seconds: 0 }, 422, "VALIDATION_ERROR"],
      [{ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, "v"])) }, 422, "VALIDATION_ERROR"],
      [{ metadata: { n: 1 } }, 422, "VALIDATION_ERROR"],
      [{ model: "nope" }, 422, "VALIDATION_ERROR"],
      [{ instructions: "x".repeat(16_000), system_prompt: "y".repeat(16_001) }, 400, "INPUT_TOO_LARGE"],
      [{ llm: { provider: "openai" } }, 422, "LLM_PROVIDER_UNSUPPORTED"],
    ];
    for (const [extra, status, code] of cases)
      envelope(await createRun(s, acct.test_key, { machine_id: machine, task: "x", ...extra }), status, code);
  });

  it("deadline_seconds: the run is timed_out when it passes", async () => {
    const c = await createRun(s, acct.test_key, {
      machine_id: machine,
      task: "#steps=50 #slow=400",
      deadline_seconds: 2,
    });
    expect((Date.parse(c.body.deadline_at) - Date.parse(c.body.created_at)) / 1000).toBe(2);
    const r = await waitRun(s, acct.test_key, c.body.id, ["timed_out", "failed", "succeeded"], 20_000);
    expect(r).toMatchObject({ status: "timed_out", error: { code: "DEADLINE_EXCEEDED" }, result: { passed: false } });
  });

  it("awaiting_human_timeout_seconds: a pause longer than it fails the run", async () => {
    const c = await createRun(s, acct.test_key, {
      machine_id: machine,
      task: "#human #steps=2",
      awaiting_human_timeout_seconds: 1,
    });
    const paused = await waitRun(s, acct.test_key, c.body.id, ["awaiting_human"]);
    expect(Date.parse(paused.awaiting_human_since)).toBeGreaterThan(0);
    const r = await waitRun(s, acct.test_key, c.body.id, ["failed", "succeeded", "timed_out"], 20_000);
    expect(r).toMatchObject({
      status: "failed",
      error: { code: "AWAITING_HUMAN_TIMEOUT", reason: "human_requested" },
      awaiting_human_since: null,
      result: { passed: false, status: "failed" },
    });
  });

  it("a step error that does not end the run is an `error` frame; metadata and instructions are kept", async () => {
    const c = await createRun(s, acct.test_key, {
      machine_id: machine,
      task: "#error",
      instructions: "be brief",
      metadata: { ticket: "T-1" },
    });
    expect(c.body).toMatchObject({ instructions: "be brief", metadata: { ticket: "T-1" } });
    const frames = await waitFor(
      "an error frame",
      () => s.app.deps.db.runEvent.findMany({ where: { runId: c.body.id }, orderBy: { seq: "asc" } }),
      (f) => f.some((x) => x.event === "error"),
      30_000,
    );
    const e = frames.find((x) => x.event === "error")!;
    expect(e.data).toMatchObject({ run_id: c.body.id, step: 1, error: { code: "PREDICTION_FAILED" }, retrying: true });
    await call(s.url, "POST", `/v1/runs/${c.body.id}/cancel`, { key: acct.test_key });
  });
});

describe("machines", () => {
  it("create validates the commercial sizing fields and metadata (at most 16 keys)", async () => {
    const post = (body: Record<string, unknown>) => call(s.url, "POST", "/v1/machines", { key: acct.test_key, body });
    for (const bad of [
      { cpu_cores: 0 },
      { cpu_cores: 17 },
      { memory_gb: 65 },
      { storage_gb: 7 },
      { storage_gb: 501 },
      { provider: "aws" },
      { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i])) },
    ])
      envelope(await post(bad), 422, "VALIDATION_ERROR");
    const ok = await post({ cpu_cores: 4, memory_gb: 8, storage_gb: 40 });
    expect(ok.status).toBe(201);
    expect(ok.body.resources).toEqual({ cpu_cores: 4, memory_gb: 8, storage_gb: 40, shared_host: false });
    // a billed operation on a test key says it cost 0
    const snap = await call(s.url, "POST", `/v1/machines/${ok.body.machine.id}/snapshot`, { key: acct.test_key });
    expect(snap.status).toBe(202);
    expect(snap.headers.get("x-credits-charged")).toBe("0");
    await call(s.url, "DELETE", `/v1/machines/${ok.body.machine.id}`, { key: acct.test_key });
  });
});

describe("GET /v1/billing/active", () => {
  it("lists the live machines that accrue credits now, with their rate; a test key meters nothing", async () => {
    const t = await call(s.url, "GET", "/v1/billing/active", { key: acct.test_key });
    expect(t.body).toMatchObject({ mode: "test", machines: [], schedules: [], total_rate_credits_per_hour: 0 });
    const id = await liveMockMachine(s, acct.account_id);
    const l = await call(s.url, "GET", "/v1/billing/active", { key: acct.live_key });
    expect(l.status).toBe(200);
    expect(l.body.machines).toEqual([
      expect.objectContaining({ machine_id: id, status: "running", rate_credits_per_hour: 5, accrued_credits: 0 }),
    ]);
    expect(l.body.total_rate_credits_per_hour).toBe(5);
  });
});

describe("the OpenAPI document states the amendments", () => {
  it("request_id in success bodies, X-Service-Key-Kind, the list shape and the new fields", async () => {
    const doc = (await call(s.url, "GET", "/openapi.json")).body;
    const ok = (path: string, method: string) => {
      const op = doc.paths[path][method];
      const r = op.responses["200"] ?? op.responses["201"] ?? op.responses["202"];
      return { op, r, schema: r.content?.["application/json"]?.schema };
    };
    const runs = ok("/runs", "get");
    expect(runs.schema.required).toEqual(
      expect.arrayContaining(["object", "data", "has_more", "next_cursor", "request_id"]),
    );
    expect(runs.r.headers["X-Service-Key-Kind"]).toBeDefined();
    expect(ok("/sessions", "get").schema.properties.sessions).toBeDefined();
    const predictBody = doc.paths["/predict"].post.requestBody.content["application/json"].schema;
    for (const f of ["include_reasoning", "include_raw_code", "model", "llm"])
      expect(predictBody.properties[f]).toBeDefined();
    expect(doc.paths["/ground"].post.requestBody.content["application/json"].schema.properties.element).toBeDefined();
    const runBody = doc.paths["/runs"].post.requestBody.content["application/json"].schema;
    for (const f of ["instructions", "system_prompt", "deadline_seconds", "awaiting_human_timeout_seconds", "metadata"])
      expect(runBody.properties[f]).toBeDefined();
    expect(ok("/runs/{id}", "get").schema.properties.steps_completed).toBeDefined();
    expect(ok("/billing/active", "get").schema.properties.machines).toBeDefined();
    expect(doc.components.schemas.ErrorEnvelope.properties.error.properties.type.enum).toEqual([
      "validation_error",
      "auth_error",
      "forbidden",
      "billing_error",
      "not_found_error",
      "state_error",
      "client_error",
      "rate_limit_error",
      "server_error",
    ]);
  });
});
