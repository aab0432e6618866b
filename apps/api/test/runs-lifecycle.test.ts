// Task runs through the real server with test keys (SPEC.md "Run", "States and transitions / Run",
// "Runs", "Errors", "Limits"; DECISIONS.md "Runs", "Engines" sandbox directives, "Cross-cutting rules",
// "Precise answers"). Test keys run the deterministic sandbox on mock machines, driven by directives.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { createRun, getRun, liveMockMachine, sleep, testMachine, waitFor, waitRun } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let other: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;

beforeAll(async () => {
  s = await startTestServer({ RUN_CALLBACK_TIMEOUT_MS: "300", MACHINE_PROVIDER: "none" });
  acct = await s.account();
  other = await s.account();
  machine = await testMachine(s, acct.test_key);
});
afterAll(() => s.stop());

const run = (body: Record<string, unknown>, headers: Record<string, string> = {}, key = acct.test_key) =>
  createRun(s, key, { machine_id: machine, ...body }, headers);
const post = (p: string, body?: unknown, key = acct.test_key) => call(s.url, "POST", p, { key, body });
const events = async (id: string) =>
  (await s.app.deps.db.runEvent.findMany({ where: { runId: id }, orderBy: { seq: "asc" } })).map((e) => ({
    seq: e.seq,
    event: e.event,
    data: e.data as any,
  }));

describe("create, get, list", () => {
  it("POST /v1/runs answers 201 with the run queued, then the sandbox drives it to succeeded", async () => {
    const r = await run({ task: "type 'hello' then press enter #steps=3" });
    expect(r.status).toBe(201);
    expect(r.headers.get("x-service-test-mode")).toBe("true");
    expect(r.body).toMatchObject({
      object: "agent.run",
      status: "queued",
      machine_id: machine,
      task: "type 'hello' then press enter #steps=3",
      cua_version: "v5",
      max_steps: 50,
      max_iterations: 100,
      on_awaiting_human: "pause",
      budget_cents: 0,
      webhook_url: null,
      webhook_secret: null,
      step_count: 0,
      steps_completed: 0,
      awaiting_human_reason: null,
      awaiting_human_since: null,
      result: null,
      error: null,
      usage: { credits_charged: 0, cost_cents: 0 },
      credits_charged: 0,
      cost_cents: 0,
      metadata: {},
      instructions: null,
      request_id: r.headers.get("x-service-request-id"),
      started_at: null,
      finished_at: null,
      callbacks: [],
    });
    expect(r.body.id).toMatch(/^run_test_[0-9a-f]{24}$/);
    expect((Date.parse(r.body.deadline_at) - Date.parse(r.body.created_at)) / 1000).toBe(86_400);
    const done = await waitRun(s, acct.test_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({
      status: "succeeded",
      step_count: 3,
      steps_completed: 3,
      iteration_count: 3,
      error: null,
      // DECISIONS.md "Compatibility amendments": result {passed, status, summary, verdict?} plus own fields
      result: { passed: true, status: "succeeded", summary: "Sandbox: done.", verdict: "pass", steps: 3 },
    });
    expect(done.started_at).not.toBeNull();
    expect(done.finished_at).not.toBeNull();
    const ev = await events(r.body.id);
    expect(ev.map((e) => e.event)).toEqual([
      "status",
      "status",
      "step",
      "billing",
      "step",
      "billing",
      "step",
      "billing",
      "status",
      "terminal",
    ]);
    expect(ev.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(ev.filter((e) => e.event === "step").map((e) => e.data.action.action_type)).toEqual([
      "type_text",
      "key_press",
      "done",
    ]);
  });

  it("validates the body (422 with the field path) and the run's limits", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ task: undefined }, "body.task"],
      [{ task: "" }, "body.task"],
      [{ task: "x", max_steps: 0 }, "body.max_steps"],
      [{ task: "x", max_steps: 1001 }, "body.max_steps"],
      [{ task: "x", max_iterations: 1001 }, "body.max_iterations"],
      [{ task: "x", on_awaiting_human: "wait" }, "body.on_awaiting_human"],
      [{ task: "x", cua_version: "v2" }, "body.cua_version"],
      [{ task: "x", budget_cents: -1 }, "body.budget_cents"],
      [{ task: "x", surprise: 1 }, "body.surprise"],
    ];
    for (const [body, path] of cases) {
      const e = envelope(await run(body), 422, "VALIDATION_ERROR");
      expect(e.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  });

  it("machine errors: 400 INVALID_MACHINE_ID, 404 MACHINE_NOT_FOUND (unknown, another account's, the other mode's), 409 INVALID_STATE", async () => {
    envelope(await run({ task: "x", machine_id: "not-a-machine" }), 400, "INVALID_MACHINE_ID");
    envelope(await run({ task: "x", machine_id: "mch_test_abcdef" }), 404, "MACHINE_NOT_FOUND");
    envelope(await run({ task: "x", machine_id: await testMachine(s, other.test_key) }), 404, "MACHINE_NOT_FOUND");
    envelope(await run({ task: "x", machine_id: await liveMockMachine(s, acct.account_id) }), 404, "MACHINE_NOT_FOUND");
    const stopped = await testMachine(s, acct.test_key);
    expect((await post(`/v1/machines/${stopped}/stop`)).status).toBe(200);
    const e = envelope(await run({ task: "x", machine_id: stopped }), 409, "INVALID_STATE");
    expect(e.current_state).toBe("stopped");
  });

  it("BYOK intent on a test key is 422 LLM_PROVIDER_UNSUPPORTED before anything runs", async () => {
    const before = await s.app.deps.db.run.count();
    envelope(
      await run({ task: "x" }, { "X-LLM-Provider": "openai", "X-LLM-Api-Key": "sk-test-0123456789abcdefghij" }),
      422,
      "LLM_PROVIDER_UNSUPPORTED",
    );
    envelope(await run({ task: "x" }, { "X-LLM-Provider": "anthropic" }), 422, "LLM_PROVIDER_UNSUPPORTED");
    expect(await s.app.deps.db.run.count()).toBe(before);
  });

  it("webhook_url must be https and must not point at loopback, private, link-local or metadata addresses", async () => {
    for (const url of [
      "http://93.184.216.34/hook",
      "https://127.0.0.1/hook",
      "https://localhost:8443/hook",
      "https://10.1.2.3/hook",
      "https://172.16.0.1/hook",
      "https://192.168.1.1/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/hook",
      "https://[fd00:ec2::254]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://user:pw@93.184.216.34/hook",
      "ftp://93.184.216.34/hook",
      "not a url",
    ]) {
      const e = envelope(await run({ task: "x", webhook_url: url }), 422, "VALIDATION_ERROR");
      expect(e.details[0].path).toBe("body.webhook_url");
    }
  });

  it("a webhook_url run returns webhook_secret (whsec_<64 hex>) on create and its exact replay only", async () => {
    const body = { task: "#human", webhook_url: "https://93.184.216.34/hook" };
    const r = await run(body, { "Idempotency-Key": "run-create-1" });
    expect(r.status).toBe(201);
    expect(r.body.webhook_secret).toMatch(/^whsec_[0-9a-f]{64}$/);
    expect(r.body.webhook_url).toBe("https://93.184.216.34/hook");
    const replay = await run(body, { "Idempotency-Key": "run-create-1" });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(replay.body.id).toBe(r.body.id);
    expect(replay.body.webhook_secret).toBe(r.body.webhook_secret);
    envelope(
      await run({ ...body, task: "other" }, { "Idempotency-Key": "run-create-1" }),
      422,
      "IDEMPOTENCY_KEY_REUSED",
    );
    expect(await s.app.deps.db.run.count({ where: { task: "#human", webhookUrl: { not: null } } })).toBe(1);
    expect((await getRun(s, acct.test_key, r.body.id)).body.webhook_secret).toBeNull();
    const listed = (await call(s.url, "GET", "/v1/runs?limit=200", { key: acct.test_key })).body.data.find(
      (x: any) => x.id === r.body.id,
    );
    expect(listed.webhook_secret).toBeNull();
    // the secret is stored encrypted, never in clear
    const row = await s.app.deps.db.run.findUniqueOrThrow({ where: { id: r.body.id } });
    expect(Buffer.from(row.webhookSecretSealed!).toString("latin1")).not.toContain(r.body.webhook_secret.slice(6, 30));
    expect((await post(`/v1/runs/${r.body.id}/cancel`)).status).toBe(200);
  });

  it("GET /v1/runs/{id}: 400 INVALID_RUN_ID, 404 RUN_NOT_FOUND for unknown, another account's and the other mode's runs", async () => {
    const id = (await run({ task: "#steps=1" })).body.id;
    envelope(await getRun(s, acct.test_key, "bad.id"), 400, "INVALID_RUN_ID");
    envelope(await getRun(s, acct.test_key, "x".repeat(129)), 400, "INVALID_RUN_ID");
    envelope(await getRun(s, acct.test_key, "run_test_000000000000000000000000"), 404, "RUN_NOT_FOUND");
    envelope(await getRun(s, other.test_key, id), 404, "RUN_NOT_FOUND");
    envelope(await getRun(s, acct.live_key, id), 404, "RUN_NOT_FOUND");
    envelope(await post(`/v1/runs/${id}/cancel`, undefined, other.test_key), 404, "RUN_NOT_FOUND");
    envelope(await post(`/v1/runs/${id}/resume`, {}, acct.live_key), 404, "RUN_NOT_FOUND");
    envelope(await post("/v1/runs/bad.id/cancel"), 400, "INVALID_RUN_ID");
    envelope(await post("/v1/runs/bad.id/resume", { note: 5 }), 400, "INVALID_RUN_ID"); // 400 path format before 422 body
    expect((await getRun(s, acct.test_key, id)).status).toBe(200);
  });

  it("GET /v1/runs: newest first, status filter, limit 1..200, cursor pagination, scoped to account and mode", async () => {
    const mine = (await call(s.url, "GET", "/v1/runs?limit=200", { key: acct.test_key })).body;
    expect(mine.data.length).toBeGreaterThan(2);
    // DECISIONS.md "Compatibility amendments": the list shape
    expect(mine).toMatchObject({ object: "list", next_cursor: null, has_more: false, request_id: expect.any(String) });
    expect(mine.runs).toBeUndefined();
    const created = mine.data.map((r: any) => Date.parse(r.created_at));
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    expect((await call(s.url, "GET", "/v1/runs", { key: other.test_key })).body.data).toEqual([]);
    expect((await call(s.url, "GET", "/v1/runs", { key: acct.live_key })).body.data).toEqual([]);

    const ok = (await call(s.url, "GET", "/v1/runs?status=succeeded&limit=200", { key: acct.test_key })).body.data;
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.every((r: any) => r.status === "succeeded")).toBe(true);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/v1/runs?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page: any = (await call(s.url, "GET", q, { key: acct.test_key })).body;
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((r: any) => r.id));
      expect(page.has_more).toBe(page.next_cursor !== null);
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(mine.data.map((r: any) => r.id));

    // the default page is 20 (DECISIONS.md "Compatibility amendments": lists)
    if (mine.data.length > 20)
      expect((await call(s.url, "GET", "/v1/runs", { key: acct.test_key })).body.data).toHaveLength(20);
    for (const q of ["limit=0", "limit=201", "limit=abc", "limit=1.5", "limit=-1"]) {
      const e = envelope(await call(s.url, "GET", `/v1/runs?${q}`, { key: acct.test_key }), 400, "INVALID_LIMIT");
      expect(e).toMatchObject({ actual: q.slice(6), min: 1, max: 200 });
    }
    for (const q of ["status=done", "status=RUNNING", "status=queued,running"]) {
      const e = envelope(
        await call(s.url, "GET", `/v1/runs?${q}`, { key: acct.test_key }),
        400,
        "INVALID_STATUS_FILTER",
      );
      expect(e.valid_options).toEqual([
        "queued",
        "running",
        "awaiting_human",
        "succeeded",
        "failed",
        "cancelled",
        "timed_out",
      ]);
    }
    envelope(await call(s.url, "GET", "/v1/runs?cursor=zzz", { key: acct.test_key }), 400, "INVALID_CURSOR");
    expect((await call(s.url, "GET", "/v1/runs?limit=200&status=queued", { key: acct.test_key })).status).toBe(200);
  });

  it("scopes: runs:read for reads, runs:write for create, cancel and resume (403 INSUFFICIENT_SCOPE); 401 without a key", async () => {
    const mint = async (scopes: string[]) =>
      (await call(s.url, "POST", "/v1/keys", { key: acct.test_key, body: { scopes } })).body.key as string;
    const reader = await mint(["runs:read"]);
    const writer = await mint(["runs:write"]);
    const id = (await run({ task: "#human" })).body.id;
    expect((await getRun(s, reader, id)).status).toBe(200);
    expect(envelope(await run({ task: "x" }, {}, reader), 403, "INSUFFICIENT_SCOPE").required_scope).toBe("runs:write");
    envelope(await post(`/v1/runs/${id}/cancel`, undefined, reader), 403, "INSUFFICIENT_SCOPE");
    envelope(await post(`/v1/runs/${id}/resume`, {}, reader), 403, "INSUFFICIENT_SCOPE");
    envelope(await getRun(s, writer, id), 403, "INSUFFICIENT_SCOPE");
    envelope(await call(s.url, "GET", "/v1/runs", { key: writer }), 403, "INSUFFICIENT_SCOPE");
    envelope(await call(s.url, "GET", `/v1/runs/${id}/events`, { key: writer }), 403, "INSUFFICIENT_SCOPE");
    envelope(await call(s.url, "GET", `/v1/runs/${id}`), 401, "INVALID_API_KEY");
    envelope(await call(s.url, "GET", `/v1/runs/${id}/events`), 401, "INVALID_API_KEY");
    envelope(
      await call(s.url, "POST", "/v1/runs", { body: { task: "x", machine_id: machine } }),
      401,
      "INVALID_API_KEY",
    );
    expect((await post(`/v1/runs/${id}/cancel`, undefined, writer)).status).toBe(200);
  });
});

describe("transitions (SPEC States and transitions / Run)", () => {
  it("#fail: the last step answers fail; the run fails with TASK_FAILED; terminal states are immutable", async () => {
    const id = (await run({ task: "open the report #steps=2 #fail" })).body.id;
    const r = await waitRun(s, acct.test_key, id, ["failed", "succeeded"]);
    expect(r).toMatchObject({
      status: "failed",
      step_count: 2,
      result: { passed: false, status: "failed", summary: r.error.message, verdict: "fail" },
    });
    expect(r.error.code).toBe("TASK_FAILED");
    const c = envelope(await post(`/v1/runs/${id}/cancel`), 409, "INVALID_STATE");
    expect(c.current_state).toBe("failed");
    expect(c.allowed_from).toEqual(["queued", "running", "awaiting_human"]);
    expect(envelope(await post(`/v1/runs/${id}/resume`, {}), 409, "NOT_AWAITING_HUMAN").current_state).toBe("failed");
    expect((await getRun(s, acct.test_key, id)).body).toMatchObject({
      status: "failed",
      step_count: 2,
      updated_at: r.updated_at,
    });
  });

  it("#human: pauses before the last step (awaiting_human), POST /resume with a note continues it to succeeded", async () => {
    const id = (await run({ task: "fill the form #steps=3 #human" })).body.id;
    const paused = await waitRun(s, acct.test_key, id, ["awaiting_human", "succeeded", "failed"]);
    expect(paused).toMatchObject({ status: "awaiting_human", awaiting_human_reason: "human_requested", step_count: 2 });
    await sleep(300);
    expect((await getRun(s, acct.test_key, id)).body).toMatchObject({ status: "awaiting_human", step_count: 2 });
    const res = await post(`/v1/runs/${id}/resume`, { note: "captcha solved" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: "running", awaiting_human_reason: null });
    const done = await waitRun(s, acct.test_key, id, ["succeeded", "failed"]);
    expect(done).toMatchObject({ status: "succeeded", step_count: 3 });
    const ev = await events(id);
    expect(ev.find((e) => e.event === "awaiting_human")?.data).toEqual({ run_id: id, reason: "human_requested" });
    expect(ev.filter((e) => e.event === "status").map((e) => e.data.status)).toEqual([
      "queued",
      "running",
      "awaiting_human",
      "running",
      "succeeded",
    ]);
    expect(ev.find((e) => e.event === "status" && e.data.note)?.data.note).toBe("captcha solved");
    envelope(await post(`/v1/runs/${id}/resume`, {}), 409, "NOT_AWAITING_HUMAN");
  });

  it("resume of a running run is 409 NOT_AWAITING_HUMAN; of racing resumes exactly one wins, the others get RESUME_CONFLICT", async () => {
    const slow = (await run({ task: "#slow=400 #steps=20" })).body.id;
    await waitRun(s, acct.test_key, slow, ["running"]);
    const e = envelope(await post(`/v1/runs/${slow}/resume`, {}), 409, "NOT_AWAITING_HUMAN");
    expect(e.current_state).toBe("running");
    await post(`/v1/runs/${slow}/cancel`);

    let conflicts = 0;
    for (let round = 0; round < 3 && conflicts === 0; round++) {
      const id = (await run({ task: "#steps=2 #human" })).body.id;
      await waitRun(s, acct.test_key, id, ["awaiting_human"]);
      const all = await Promise.all(
        Array.from({ length: 12 }, (_, i) => post(`/v1/runs/${id}/resume`, { note: `r${i}` })),
      );
      const wins = all.filter((r) => r.status === 200);
      expect(wins).toHaveLength(1);
      for (const r of all.filter((x) => x.status !== 200)) {
        expect(r.status).toBe(409);
        expect(["RESUME_CONFLICT", "NOT_AWAITING_HUMAN"]).toContain(r.body.error.code);
        if (r.body.error.code === "RESUME_CONFLICT") conflicts++;
      }
      expect(await waitRun(s, acct.test_key, id, ["succeeded", "failed"])).toMatchObject({ status: "succeeded" });
      expect((await events(id)).filter((x) => x.event === "status" && x.data.status === "running")).toHaveLength(2);
    }
    expect(conflicts).toBeGreaterThan(0);
  });

  it("on_awaiting_human fail / cancel: the run never reaches awaiting_human", async () => {
    const f = (await run({ task: "#human", on_awaiting_human: "fail" })).body.id;
    const c = (await run({ task: "#human", on_awaiting_human: "cancel" })).body.id;
    const rf = await waitRun(s, acct.test_key, f, ["failed", "succeeded", "cancelled"]);
    const rc = await waitRun(s, acct.test_key, c, ["failed", "succeeded", "cancelled"]);
    expect(rf).toMatchObject({
      status: "failed",
      error: { code: "HUMAN_REQUIRED", reason: "human_requested" },
      step_count: 2,
    });
    expect(rc).toMatchObject({ status: "cancelled", error: { code: "HUMAN_REQUIRED" }, step_count: 2 });
    for (const id of [f, c])
      expect((await events(id)).some((e) => e.event === "awaiting_human" || e.data.status === "awaiting_human")).toBe(
        false,
      );
  });

  it("cancel: a running run stops between steps; the step in flight is not counted; an awaiting run cancels too", async () => {
    const id = (await run({ task: "#slow=600 #steps=20" })).body.id;
    await waitFor(
      "a step",
      () => getRun(s, acct.test_key, id),
      (r) => r.body.step_count >= 1,
    );
    const c = await post(`/v1/runs/${id}/cancel`);
    expect(c.status).toBe(200);
    expect(c.body.status).toBe("cancelled");
    const at = c.body.step_count;
    await sleep(1500);
    const after = (await getRun(s, acct.test_key, id)).body;
    expect(after).toMatchObject({ status: "cancelled", step_count: at, updated_at: c.body.updated_at });
    const ev = await events(id);
    expect(ev.at(-1)).toMatchObject({ event: "terminal", data: { status: "cancelled" } });

    const h = (await run({ task: "#human" })).body.id;
    await waitRun(s, acct.test_key, h, ["awaiting_human"]);
    expect((await post(`/v1/runs/${h}/cancel`)).body).toMatchObject({
      status: "cancelled",
      awaiting_human_reason: null,
    });
    envelope(await post(`/v1/runs/${h}/resume`, {}), 409, "NOT_AWAITING_HUMAN");
  });

  it("#timeout: the run behaves as if its deadline had passed (timed_out)", async () => {
    const id = (await run({ task: "#timeout" })).body.id;
    const r = await waitRun(s, acct.test_key, id, ["timed_out", "succeeded", "failed"]);
    expect(r).toMatchObject({ status: "timed_out", step_count: 0, error: { code: "DEADLINE_EXCEEDED" } });
  });

  it("max_steps: a run that does not finish within max_steps fails with MAX_STEPS_EXCEEDED", async () => {
    const id = (await run({ task: "#steps=10", max_steps: 3 })).body.id;
    const r = await waitRun(s, acct.test_key, id, ["failed", "succeeded"]);
    expect(r).toMatchObject({ status: "failed", step_count: 3, error: { code: "MAX_STEPS_EXCEEDED" } });
  });

  it("max_iterations: pauses and retries count; the run fails with MAX_ITERATIONS_EXCEEDED", async () => {
    const id = (await run({ task: "#steps=10", max_iterations: 4 })).body.id;
    const r = await waitRun(s, acct.test_key, id, ["failed", "succeeded"]);
    expect(r).toMatchObject({
      status: "failed",
      step_count: 4,
      iteration_count: 4,
      error: { code: "MAX_ITERATIONS_EXCEEDED" },
    });
  });

  it("stall guard: the same action on an unchanged screen three times pauses the run with reason stalled", async () => {
    const id = (await run({ task: "#stall #steps=20" })).body.id;
    const r = await waitRun(s, acct.test_key, id, ["awaiting_human", "failed", "succeeded"]);
    // step 1 changes the screen (the click ring appears); steps 2 and 3 see the same screen; the 4th
    // identical click on it is not executed
    expect(r).toMatchObject({ status: "awaiting_human", awaiting_human_reason: "stalled", step_count: 3 });
    expect(r.usage.credits_charged).toBe(0);
    // a resume gives three fresh tries
    await post(`/v1/runs/${id}/resume`, { note: "moved the window" });
    await waitFor(
      "the second stall",
      () => getRun(s, acct.test_key, id),
      (x) => x.body.status === "awaiting_human" && x.body.step_count > 3,
    );
    expect((await getRun(s, acct.test_key, id)).body).toMatchObject({
      awaiting_human_reason: "stalled",
      step_count: 5,
    });
    await post(`/v1/runs/${id}/cancel`);

    // a fresh machine: the first one's screen already shows the repeated click
    const fresh = await testMachine(s, acct.test_key);
    const f = (await run({ task: "#stall #steps=20", on_awaiting_human: "fail", machine_id: fresh })).body.id;
    const rf = await waitRun(s, acct.test_key, f, ["failed", "awaiting_human", "succeeded"]);
    expect(rf).toMatchObject({ status: "failed", step_count: 3, error: { code: "STALLED", reason: "stalled" } });
    expect(rf.error.message).toMatch(/same action on an unchanged screen/);
  });

  it("an engine that keeps failing: the step is retried, then the run fails with the engine's error", async () => {
    const id = (await run({ task: "#error" })).body.id;
    const r = await waitRun(s, acct.test_key, id, ["failed", "succeeded"], 60_000);
    expect(r).toMatchObject({ status: "failed", step_count: 0, error: { code: "PREDICTION_FAILED" } });
  }, 60_000);
});

describe("the run deadline (a sleep race)", () => {
  let d: TestServer;
  let a: Awaited<ReturnType<TestServer["account"]>>;
  let m: string;
  beforeAll(async () => {
    d = await startTestServer({ RUN_DEADLINE_SECONDS: "3", MACHINE_PROVIDER: "none" });
    a = await d.account();
    m = await testMachine(d, a.test_key);
  });
  afterAll(() => d.stop());

  it("a run waiting for a human times out at its deadline", async () => {
    const c = await createRun(d, a.test_key, { machine_id: m, task: "#human" });
    expect((Date.parse(c.body.deadline_at) - Date.parse(c.body.created_at)) / 1000).toBe(3);
    await waitRun(d, a.test_key, c.body.id, ["awaiting_human"]);
    const r = await waitRun(d, a.test_key, c.body.id, ["timed_out", "failed"], 15_000);
    expect(r).toMatchObject({ status: "timed_out", error: { code: "DEADLINE_EXCEEDED" }, awaiting_human_reason: null });
    const late = (Date.parse(r.finished_at) - Date.parse(r.deadline_at)) / 1000;
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(3);
    envelope(
      await call(d.url, "POST", `/v1/runs/${c.body.id}/resume`, { key: a.test_key, body: {} }),
      409,
      "NOT_AWAITING_HUMAN",
    );
  });

  it("a running run times out at its deadline, between or during steps", async () => {
    const c = await createRun(d, a.test_key, { machine_id: m, task: "#slow=700 #steps=50" });
    const r = await waitRun(d, a.test_key, c.body.id, ["timed_out", "failed", "succeeded"], 15_000);
    expect(r.status).toBe("timed_out");
    expect(r.step_count).toBeGreaterThan(0);
    expect(r.step_count).toBeLessThan(50);
    const late = (Date.parse(r.finished_at) - Date.parse(r.deadline_at)) / 1000;
    expect(late).toBeLessThan(2);
  });
});
