// Sessions (SPEC.md "Session" resource and state table, POST/GET/DELETE /v1/sessions...; DECISIONS.md
// "Prediction": session info shape, reset/delete bodies, compaction at 20, SESSION_LIMIT_REACHED; as amended by
// "Compatibility amendments (2026-11-25)": list shape, status "ok", screen_size, max_trajectory_length).
import { makePng } from "@cua/base/images/screenshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
const SHOT = makePng(200, 100, (x, y) => [x % 256, y % 256, 50, 255]).toString("base64");
const HD = makePng(1400, 800, () => [9, 9, 9, 255]).toString("base64");

beforeAll(async () => {
  s = await startTestServer();
  acct = await s.account({ credits: 500 });
});
afterAll(() => s.stop());

const create = (key: string, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  call(s.url, "POST", "/v1/sessions", { key, body, headers });
const step = (key: string, id: string, body: Record<string, unknown> = {}) =>
  call(s.url, "POST", `/v1/sessions/${id}/predict`, {
    key,
    body: { screenshot: SHOT, instruction: "click 1,2", ...body },
  });

describe("session lifecycle", () => {
  it("create (201) -> get -> list -> predict (step counts) -> reset -> delete -> 404", async () => {
    const c = await create(acct.test_key, {
      cua_version: "v4",
      screen_width: 200,
      screen_height: 100,
      instructions: "be careful",
    });
    expect(c.status).toBe(201);
    expect(c.body.session_id).toMatch(/^ses_[0-9a-f]{24}$/);
    expect(c.body).toMatchObject({
      status: "active",
      cua_version: "v4",
      screen_width: 200,
      screen_height: 100,
      step_count: 0,
      screen_size: { width: 200, height: 100 },
      max_trajectory_length: 20,
      total_credits_used: 0,
      metadata: {},
      llm: null,
    });
    expect(c.body.usage).toEqual({ input_tokens: 0, output_tokens: 0, credits_charged: 0, cost_cents: 0 });
    const ttl = (Date.parse(c.body.expires_at) - Date.parse(c.body.last_used_at)) / 1000;
    expect(ttl).toBe(7200);
    const id = c.body.session_id;

    expect((await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key })).body.session_id).toBe(id);
    const list = await call(s.url, "GET", "/v1/sessions", { key: acct.test_key });
    expect(list.body).toMatchObject({ object: "list", has_more: false, next_cursor: null });
    expect(list.body.request_id).toBe(list.headers.get("x-service-request-id"));
    expect(list.body.data.map((x: { session_id: string }) => x.session_id)).toContain(id);
    expect(list.body.sessions).toEqual(list.body.data); // SPEC's own name for the same array

    const p1 = await step(acct.test_key, id);
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({
      step: 1,
      actions: [{ action_type: "click", params: { x: 1, y: 2 } }],
      coordinate_space: { width: 200, height: 100 },
    });
    expect((await step(acct.test_key, id)).body.step).toBe(2);
    expect((await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key })).body.step_count).toBe(2);

    const reset = await call(s.url, "POST", `/v1/sessions/${id}/reset`, { key: acct.test_key });
    expect(reset.body).toEqual({
      status: "ok",
      session_id: id,
      reset: true,
      step_count: 0,
      request_id: reset.headers.get("x-service-request-id"),
    });
    // a reset clears the trajectory but does not restart `step` numbering (issue 12)
    expect((await step(acct.test_key, id)).body.step).toBe(3);
    const after = (await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key })).body;
    expect(after).toMatchObject({ step_count: 1, total_steps: 3 });

    const del = await call(s.url, "DELETE", `/v1/sessions/${id}`, { key: acct.test_key });
    expect(del.body).toEqual({
      status: "ok",
      session_id: id,
      deleted: true,
      request_id: del.headers.get("x-service-request-id"),
    });
    envelope(await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key }), 404, "SESSION_NOT_FOUND");
    envelope(await step(acct.test_key, id), 404, "SESSION_NOT_FOUND");
    envelope(await call(s.url, "DELETE", `/v1/sessions/${id}`, { key: acct.test_key }), 404, "SESSION_NOT_FOUND");
  });

  it("a session's screen size binds its screenshots", async () => {
    const id = (await create(acct.test_key, { screen_width: 300, screen_height: 100 })).body.session_id;
    const e = envelope(await step(acct.test_key, id), 422, "VALIDATION_ERROR");
    expect(e.details[0].path).toBe("body.screen_width");
  });

  it("the session's action policy applies to every step", async () => {
    const id = (await create(acct.test_key, { action_policy: { blocked_actions: ["click"] } })).body.session_id;
    const r = await step(acct.test_key, id);
    expect(r.body.actions).toEqual([
      {
        action_type: "fail",
        params: expect.objectContaining({ code: "ACTION_POLICY_VIOLATION" }),
        description: expect.any(String),
      },
    ]);
  });

  it("an idle session expires: later calls are 404 SESSION_NOT_FOUND", async () => {
    const id = (await create(acct.test_key)).body.session_id;
    await s.app.deps.db.predictSession.update({ where: { id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    envelope(await step(acct.test_key, id), 404, "SESSION_NOT_FOUND");
    expect(
      (await call(s.url, "GET", "/v1/sessions", { key: acct.test_key })).body.data.map(
        (x: { session_id: string }) => x.session_id,
      ),
    ).not.toContain(id);
  });

  it("predict and reset restart the idle TTL", async () => {
    const id = (await create(acct.test_key)).body.session_id;
    await s.app.deps.db.predictSession.update({ where: { id }, data: { expiresAt: new Date(Date.now() + 60_000) } });
    await step(acct.test_key, id);
    const info = (await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key })).body;
    expect(Date.parse(info.expires_at) - Date.now()).toBeGreaterThan(7100 * 1000);
  });

  it("sessions belong to the key that made them, and to its mode", async () => {
    const id = (await create(acct.test_key)).body.session_id;
    envelope(await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.live_key }), 404, "SESSION_NOT_FOUND");
    const other = await s.account();
    envelope(await step(other.test_key, id), 404, "SESSION_NOT_FOUND");
  });

  it("keeps the newest 20 steps (compaction, never an error) while step keeps counting", async () => {
    const id = (await create(acct.test_key)).body.session_id;
    let last = 0;
    for (let i = 0; i < 22; i++) last = (await step(acct.test_key, id)).body.step;
    expect(last).toBe(22);
    const kept = await s.app.deps.db.sessionStep.findMany({ where: { sessionId: id }, orderBy: { seq: "asc" } });
    expect(kept.length).toBe(20);
    expect(kept[0]!.seq).toBe(3);
    // step_count is what the trajectory holds: it stays at 20 (issue 12)
    expect((await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key })).body.step_count).toBe(20);
  });

  it("max_trajectory_length (1-20) bounds the kept steps; out of range or a string is 422", async () => {
    const id = (await create(acct.test_key, { max_trajectory_length: 3 })).body.session_id;
    for (let i = 0; i < 5; i++) await step(acct.test_key, id);
    const info = (await call(s.url, "GET", `/v1/sessions/${id}`, { key: acct.test_key })).body;
    expect(info).toMatchObject({ max_trajectory_length: 3, step_count: 3, total_steps: 5 });
    const kept = await s.app.deps.db.sessionStep.findMany({ where: { sessionId: id }, orderBy: { seq: "asc" } });
    expect(kept.map((k) => k.seq)).toEqual([3, 4, 5]);
    for (const bad of [0, 21, "3"]) {
      const e = envelope(await create(acct.test_key, { max_trajectory_length: bad }), 422, "VALIDATION_ERROR");
      expect(e.details[0].path).toBe("body.max_trajectory_length");
    }
  });
});

describe("limits and billing", () => {
  it("the free tier allows 2 concurrent sessions (429 SESSION_LIMIT_REACHED with Retry-After); delete frees a slot", async () => {
    const f = await s.account({ tier: "free", credits: 100 });
    const a = await create(f.test_key);
    await create(f.test_key);
    const r = await create(f.test_key);
    const e = envelope(r, 429, "SESSION_LIMIT_REACHED");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(e.retryable).toBe(true);
    // counted per mode: live has its own two
    expect((await create(f.live_key)).status).toBe(201);
    await call(s.url, "DELETE", `/v1/sessions/${a.body.session_id}`, { key: f.test_key });
    expect((await create(f.test_key)).status).toBe(201);
  });

  it("concurrent creates cannot exceed the limit", async () => {
    const f = await s.account({ tier: "free", credits: 100 });
    const rs = await Promise.all(Array.from({ length: 6 }, () => create(f.test_key)));
    expect(rs.filter((r) => r.status === 201).length).toBe(2);
    expect(rs.filter((r) => r.status === 429).length).toBe(4);
  });

  it("live: creation costs 10; a step costs 4 base plus the trajectory and HD surcharges", async () => {
    const a = await s.account({ credits: 100 });
    const c = await create(a.live_key);
    expect(c.headers.get("x-credits-charged")).toBe("10");
    expect(c.body.usage.credits_charged).toBe(10);
    expect(c.headers.get("x-credits-remaining")).toBe("90");
    // the live managed engine is the local engine here; an HD blank image gives a fail action, still billed
    const id = c.body.session_id;
    const p1 = await call(s.url, "POST", `/v1/sessions/${id}/predict`, {
      key: a.live_key,
      body: { screenshot: HD, instruction: "press enter" },
    });
    expect(p1.status).toBe(200);
    expect(p1.headers.get("x-credits-charged")).toBe("5"); // 4 + HD
    const p2 = await call(s.url, "POST", `/v1/sessions/${id}/predict`, {
      key: a.live_key,
      body: { screenshot: SHOT, instruction: "press enter" },
    });
    expect(p2.headers.get("x-credits-charged")).toBe("7"); // 4 + one visible trajectory image (2) + its HD (1)
    const u = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
    expect(u.body.credits_charged).toBe(22);
    expect(u.body.wallet.balance_credits).toBe(78);
  });

  it("a BYOK session holds its key in memory; without an explicit key a test key cannot name a provider", async () => {
    envelope(await create(acct.test_key, { llm_provider: "openai" }), 422, "LLM_KEY_NOT_CONFIGURED");
    const c = await create(
      acct.test_key,
      {},
      { "X-LLM-Provider": "openai", "X-LLM-Api-Key": "sk-byok-session-0123456789" },
    );
    expect(c.status).toBe(201);
    expect(c.body.llm).toEqual({ provider: "openai", model: expect.any(String) });
    expect(c.body.usage.credits_charged).toBe(0);
    const row = await s.app.deps.db.predictSession.findUniqueOrThrow({ where: { id: c.body.session_id } });
    expect(JSON.stringify(row)).not.toContain("sk-byok-session");
  });

  it("bad bodies are 422 and a bad prompt budget is 400", async () => {
    envelope(await create(acct.test_key, { cua_version: "v2" }), 422, "VALIDATION_ERROR");
    envelope(await create(acct.test_key, { instructions: "x".repeat(32_001) }), 400, "INPUT_TOO_LARGE");
    const id = (await create(acct.test_key)).body.session_id;
    // session predict takes no trajectory (the session holds it)
    const e = envelope(await step(acct.test_key, id, { trajectory: [] }), 422, "VALIDATION_ERROR");
    expect(e.details[0]).toEqual({ path: "body.trajectory", message: "unknown field" });
  });
});
