// Issue 3 through the real server: POST /v1/predict, /v1/ground, /v1/ocr, /v1/parse (SPEC.md "Prediction
// and grounding", "Limits", "Errors"; DECISIONS.md "Prediction", "Engines", "Precise answers").
// Test keys use the deterministic sandbox; live keys use a managed OpenAI upstream played by the
// stand-in server (the official SDK speaks to it), so billing, refunds and BYOK are observable.
import { makePng, toDataUri } from "@cua/base/images/screenshot";
import { ledgerSum } from "@cua/core/wallet/wallet";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type OpenAIStandin,
  openaiReplies,
  startOpenAIStandin,
} from "../../../packages/engines/test/providers/standins/openai-standin.ts";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";

const MANAGED_KEY = "sk-managed-upstream-0123456789";
const BYOK_KEY = "sk-byok-caller-0123456789abcdef";
let s: TestServer;
let managed: OpenAIStandin;
let byok: OpenAIStandin;
let acct: Awaited<ReturnType<TestServer["account"]>>;

const png = (w: number, h: number) => makePng(w, h, (x, y) => [(x * 7) % 256, (y * 3) % 256, 120, 255]);
const SHOT = png(320, 200).toString("base64");
const HD_SHOT = png(1281, 720).toString("base64");
const EXACT_720P = png(1280, 720).toString("base64");

beforeAll(async () => {
  managed = await startOpenAIStandin({ apiKey: MANAGED_KEY });
  byok = await startOpenAIStandin({ apiKey: BYOK_KEY });
  s = await startTestServer({
    MANAGED_ENGINE: "openai",
    MANAGED_ENGINE_API_KEY: MANAGED_KEY,
    MANAGED_ENGINE_BASE_URL: `${managed.url}/v1`,
    MANAGED_ENGINE_MODEL: "gpt-5.4",
    OPENAI_BASE_URL: `${byok.url}/v1`,
    PROVIDER_MAX_RETRIES: "0",
    PROVIDER_TIMEOUT_MS: "5000",
  });
  acct = await s.account({ credits: 1000 });
});
afterAll(async () => {
  await s.stop();
  await managed.close();
  await byok.close();
});
beforeEach(() => {
  managed.reset();
  byok.reset();
});

const predict = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(s.url, "POST", "/v1/predict", { key, body: { screenshot: SHOT, instruction: "click 10,20", ...body }, headers });
const balance = async () =>
  (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: acct.account_id } })).balanceCredits;

describe("test keys: the deterministic sandbox", () => {
  it("answers validated actions, bills nothing, and says which space its coordinates are in", async () => {
    const r = await predict(acct.test_key, { instruction: "click 10,20 then type 'hello' then press ctrl+s" });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-service-test-mode")).toBe("true");
    // DECISIONS.md "Compatibility amendments": billed answers to a test key say they cost 0
    expect(r.headers.get("x-credits-charged")).toBe("0");
    expect(r.headers.get("x-service-key-kind")).toBe("test");
    expect(r.body.request_id).toBe(r.headers.get("x-service-request-id"));
    expect(r.body.actions).toEqual([
      {
        action_type: "click",
        params: { x: 10, y: 20, button: "left", clicks: 1 },
        description: "Click at (10, 20)",
      },
      { action_type: "type_text", params: { text: "hello" }, description: 'Type "hello"' },
      { action_type: "key_combo", params: { keys: ["ctrl", "s"] }, description: "Press ctrl+s" },
    ]);
    expect(r.body).toMatchObject({ cua_version: "v5", screen_width: 320, screen_height: 200 });
    expect(r.body.status).toBe("continue");
    expect(r.body.usage).toMatchObject({ credits_charged: 0, cost_cents: 0 });
    expect(r.body.llm).toEqual({ provider: "managed", model: "svc-sandbox", billed_to: "platform" });
    expect(r.body.coordinate_space).toEqual({ width: 320, height: 200 });
    const again = await predict(acct.test_key, { instruction: "click 10,20 then type 'hello' then press ctrl+s" });
    expect(again.body.actions).toEqual(r.body.actions);
  });

  it("max_actions and the tools filter bound the answer", async () => {
    const r = await predict(acct.test_key, { instruction: "click 1,1 then click 2,2 then click 3,3", max_actions: 2 });
    expect(r.body.actions.length).toBe(2);
    const t = await predict(acct.test_key, { instruction: "type 'x'", tools: ["click"] });
    expect(t.body.actions).toEqual([
      {
        action_type: "fail",
        params: expect.objectContaining({ code: "TOOL_NOT_ALLOWED" }),
        description: expect.any(String),
      },
    ]);
  });

  it("done and fail instructions set the status", async () => {
    expect((await predict(acct.test_key, { instruction: "done" })).body.status).toBe("done");
    expect((await predict(acct.test_key, { instruction: "this is impossible" })).body.status).toBe("fail");
  });
});

describe("the action policy is enforced after the engine, before anything is returned", () => {
  it.each([
    [{ blocked_actions: ["type_text"] }, "click 1,1 then type 'x'"],
    [{ allowed_actions: ["click"] }, "press enter"],
    [{ blocked_keys: ["ctrl+s"] }, "press ctrl+s"],
    [{ block_window_close: true }, "press alt+f4"],
    [{ max_actions: 1 }, "click 1,1 then click 2,2"],
    [{ coordinate_bounds: { min_x: 0, min_y: 0, max_x: 5, max_y: 5 } }, "click 10,20"],
  ])("%j rejects the whole batch with one fail action ACTION_POLICY_VIOLATION", async (policy, instruction) => {
    const r = await predict(acct.test_key, { instruction, action_policy: policy });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("fail");
    expect(r.body.actions).toHaveLength(1);
    expect(r.body.actions[0]).toMatchObject({ action_type: "fail", params: { code: "ACTION_POLICY_VIOLATION" } });
  });

  it("a batch inside the policy passes unchanged", async () => {
    const r = await predict(acct.test_key, {
      instruction: "click 3,4",
      action_policy: { allowed_actions: ["click"], coordinate_bounds: { max_x: 5, max_y: 5 } },
    });
    expect(r.body.actions).toEqual([
      { action_type: "click", params: { x: 3, y: 4, button: "left", clicks: 1 }, description: "Click at (3, 4)" },
    ]);
  });

  it("a malformed policy is 422 with its path", async () => {
    const e = envelope(
      await predict(acct.test_key, { action_policy: { max_actions: "many" } }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("body.action_policy.max_actions");
  });
});

describe("bad inputs (SPEC limits)", () => {
  it.each([
    ["not base64", "!!!!".repeat(40)],
    ["too short", "iVBORw0KGgo="],
    ["base64 of text", Buffer.from("hello world ".repeat(20)).toString("base64")],
    ["data URI with jpg", `data:image/jpg;base64,${SHOT}`],
    ["data URI mime that lies", `data:image/jpeg;base64,${SHOT}`],
  ])("%s is 400 INVALID_SCREENSHOT", async (_n, screenshot) => {
    const e = envelope(await predict(acct.test_key, { screenshot }), 400, "INVALID_SCREENSHOT");
    expect(e.type).toBe("validation_error");
  });

  it("an exact PNG data URI is accepted", async () => {
    expect((await predict(acct.test_key, { screenshot: toDataUri(png(320, 200)) })).status).toBe(200);
  });

  it("a screenshot over 10,485,760 base64 characters is 413 PAYLOAD_TOO_LARGE", async () => {
    envelope(await predict(acct.test_key, { screenshot: "A".repeat(10_485_764) }), 413, "PAYLOAD_TOO_LARGE");
  });

  it("screen_width/height that differ from the image are 422 at that field", async () => {
    const e = envelope(
      await predict(acct.test_key, { screen_width: 640, screen_height: 200 }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details).toEqual([{ path: "body.screen_width", message: expect.stringContaining("320") }]);
    expect((await predict(acct.test_key, { screen_width: 320, screen_height: 200 })).status).toBe(200);
  });

  it.each([
    [{ max_actions: 0 }, "body.max_actions"],
    [{ max_actions: 11 }, "body.max_actions"],
    [{ max_actions: 2.5 }, "body.max_actions"],
    [{ tools: ["click", "click", "click", "click", "click", "click", "click", "click", "click"] }, "body.tools"],
    [{ tools: ["teleport"] }, "body.tools.0"],
    [{ cua_version: "v9" }, "body.cua_version"],
    [{ instruction: "" }, "body.instruction"],
    [{ trajectory: Array.from({ length: 20 }, () => ({ screenshot: SHOT, actions: [] })) }, "body.trajectory"],
    [
      { trajectory: [{ screenshot: SHOT, actions: [{ action_type: "click", params: { x: -1, y: 0 } }] }] },
      "body.trajectory.0.actions.0.params.x",
    ],
    [{ surprise: true }, "body.surprise"],
  ])("%j is 422 at %s", async (extra, path) => {
    const e = envelope(await predict(acct.test_key, extra), 422, "VALIDATION_ERROR");
    expect(e.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  it("a bad trajectory screenshot is 400 with its index in the message", async () => {
    const e = envelope(
      await predict(acct.test_key, { trajectory: [{ screenshot: "x".repeat(200), actions: [] }] }),
      400,
      "INVALID_SCREENSHOT",
    );
    expect(e.message).toContain("body.trajectory.0.screenshot");
  });

  it("system_prompt plus instructions: 32,000 characters pass, 32,001 are 400 INPUT_TOO_LARGE", async () => {
    expect(
      (await predict(acct.test_key, { system_prompt: "a".repeat(16_000), instructions: "b".repeat(16_000) })).status,
    ).toBe(200);
    envelope(
      await predict(acct.test_key, { system_prompt: "a".repeat(16_001), instructions: "b".repeat(16_000) }),
      400,
      "INPUT_TOO_LARGE",
    );
  });
});

describe("live keys: billing (SPEC Surcharges)", () => {
  const click = () => managed.enqueue(openaiReplies.calls([{ type: "click", button: "left", x: 5, y: 6 }]));

  it("charges the base price, reports it in headers, usage and the ledger", async () => {
    click();
    const before = await balance();
    const r = await predict(acct.live_key, {});
    expect(r.status).toBe(200);
    expect(r.body.actions).toEqual([
      { action_type: "click", params: { x: 5, y: 6, button: "left", clicks: 1 }, description: "Click at (5, 6)" },
    ]);
    expect(r.body.llm).toEqual({ provider: "managed", model: "gpt-5.4", billed_to: "platform" });
    expect(r.headers.get("x-credits-charged")).toBe("5");
    expect(r.headers.get("x-credits-remaining")).toBe(String(before - 5));
    expect(r.body.usage).toMatchObject({ credits_charged: 5, cost_cents: 5 });
    expect(r.body.usage.input_tokens).toBeGreaterThan(0);
    expect(await balance()).toBe(before - 5);
    expect(await ledgerSum(s.app.deps, acct.account_id)).toBe(before - 5);
    // the upstream was called with the managed key, never the caller's
    expect(managed.requests.at(-1)!.headers.authorization).toBe(`Bearer ${MANAGED_KEY}`);
  });

  it.each([
    ["an image strictly above 1280x720 (+1)", { screenshot: HD_SHOT }, 6],
    ["exactly 1280x720 (no surcharge)", { screenshot: EXACT_720P }, 5],
    ["cua_version v1 (+3)", { cua_version: "v1" }, 8],
    [
      "two trajectory screenshots (+2 each)",
      {
        trajectory: [
          { screenshot: SHOT, actions: [] },
          { screenshot: SHOT, actions: [] },
        ],
      },
      9,
    ],
    ["an HD trajectory screenshot (+2 +1)", { trajectory: [{ screenshot: HD_SHOT, actions: [] }] }, 8],
    [
      "prompts of exactly 500 trimmed characters (free)",
      { system_prompt: `  ${"a".repeat(300)}  `, instructions: "b".repeat(200) },
      5,
    ],
    ["prompts of 501 characters (+1)", { system_prompt: "a".repeat(300), instructions: "b".repeat(201) }, 6],
  ])("%s costs %#", async (_n, extra, credits) => {
    managed.enqueue(openaiReplies.calls([{ type: "click", button: "left", x: 5, y: 6 }]));
    const r = await predict(acct.live_key, extra as Record<string, unknown>);
    expect(r.status).toBe(200);
    expect(Number(r.headers.get("x-credits-charged"))).toBe(credits);
  });

  it("PREDICTION_FAILED (an engine answer that does not validate) refunds with X-Credits-Refunded", async () => {
    managed.enqueue(openaiReplies.calls([{ type: "click", button: "left", x: 5000, y: 6 }]));
    const before = await balance();
    const r = await predict(acct.live_key, {});
    const e = envelope(r, 502, "PREDICTION_FAILED");
    expect(e.type).toBe("server_error");
    expect(r.headers.get("x-credits-refunded")).toBe("5");
    expect(await balance()).toBe(before);
    expect(await ledgerSum(s.app.deps, acct.account_id)).toBe(before);
  });

  it("upstream outages map to SPEC codes and refund", async () => {
    managed.enqueue(openaiReplies.serverError(503));
    const before = await balance();
    const r = await predict(acct.live_key, {});
    envelope(r, 503, "UPSTREAM_UNAVAILABLE");
    expect(r.headers.get("x-credits-refunded")).toBe("5");
    expect(await balance()).toBe(before);
  });

  it("a wallet below the price is 402 INSUFFICIENT_CREDITS with required and balance, and nothing runs", async () => {
    const poor = await s.account({ credits: 7 });
    const r = await predict(poor.live_key, { cua_version: "v1" });
    const e = envelope(r, 402, "INSUFFICIENT_CREDITS");
    expect(e).toMatchObject({ type: "billing_error", required: 8, balance: 7 });
    expect(managed.requests.length).toBe(0);
  });

  it("concurrent predictions never overdraw: 12 requests on 30 credits, exactly 6 succeed", async () => {
    const poor = await s.account({ credits: 30 });
    for (let i = 0; i < 12; i++) click();
    const rs = await Promise.all(Array.from({ length: 12 }, () => predict(poor.live_key, {})));
    expect(rs.filter((r) => r.status === 200).length).toBe(6);
    expect(rs.filter((r) => r.status === 402).length).toBe(6);
    const bal = (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: poor.account_id } })).balanceCredits;
    expect(bal).toBe(0);
    expect(await ledgerSum(s.app.deps, poor.account_id)).toBe(0);
  });

  it("usage by endpoint agrees with the ledger", async () => {
    const a = await s.account({ credits: 100 });
    click();
    click();
    await predict(a.live_key, {});
    await predict(a.live_key, { cua_version: "v1" });
    const u = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
    expect(u.body.by_endpoint.find((e: { endpoint: string }) => e.endpoint === "POST /v1/predict")).toEqual({
      endpoint: "POST /v1/predict",
      requests: 2,
      credits_charged: 13,
    });
    expect(u.body.credits_charged).toBe(13);
    expect(u.body.wallet.balance_credits).toBe(87);
  });

  it("idempotent predict: a replay returns the same actions and charges once", async () => {
    click();
    const before = await balance();
    const a = await predict(acct.live_key, {}, { "Idempotency-Key": "predict-once" });
    const b = await predict(acct.live_key, {}, { "Idempotency-Key": "predict-once" });
    expect(b.headers.get("x-service-idempotent-replay")).toBe("true");
    expect(b.body).toEqual(a.body);
    expect(b.headers.get("x-credits-charged")).toBe("5");
    expect(await balance()).toBe(before - 5);
    // the same key on another endpoint is refused
    const g = await call(s.url, "POST", "/v1/ground", {
      key: acct.live_key,
      body: { screenshot: SHOT, description: "x" },
      headers: { "Idempotency-Key": "predict-once" },
    });
    envelope(g, 422, "IDEMPOTENCY_KEY_REUSED");
  });
});

describe("BYOK (SPEC Authentication 4, DECISIONS Engines)", () => {
  it("a live key with a stored OpenAI key and X-LLM-Provider uses the provider and bills 0", async () => {
    await call(s.url, "PUT", "/v1/llm/keys/openai", { key: acct.live_key, body: { api_key: BYOK_KEY } });
    byok.enqueue(
      openaiReplies.calls([{ type: "click", button: "left", x: 1, y: 2 }], {
        usage: { input_tokens: 1234, output_tokens: 56 },
      }),
    );
    const before = await balance();
    const r = await predict(acct.live_key, {}, { "X-LLM-Provider": "openai" });
    expect(r.status).toBe(200);
    expect(r.body.llm).toMatchObject({ provider: "openai", billed_to: "provider" });
    expect(r.body.usage).toEqual({ input_tokens: 1234, output_tokens: 56, credits_charged: 0, cost_cents: 0 });
    expect(r.headers.get("x-credits-charged")).toBeNull();
    expect(await balance()).toBe(before);
    expect(byok.requests.at(-1)!.headers.authorization).toBe(`Bearer ${BYOK_KEY}`);
    expect(r.text).not.toContain(BYOK_KEY);
  });

  it("an explicit X-LLM-Api-Key works on a test key too", async () => {
    byok.enqueue(openaiReplies.calls([{ type: "click", button: "left", x: 1, y: 2 }]));
    const r = await predict(acct.test_key, {}, { "X-LLM-Provider": "openai", "X-LLM-Api-Key": BYOK_KEY });
    expect(r.status).toBe(200);
    expect(r.body.llm.billed_to).toBe("provider");
  });

  it("a key the provider rejects is 422 LLM_KEY_INVALID and the key is not echoed", async () => {
    const bad = "sk-wrong-key-000000000000000";
    const r = await predict(acct.test_key, {}, { "X-LLM-Provider": "openai", "X-LLM-Api-Key": bad });
    envelope(r, 422, "LLM_KEY_INVALID");
    expect(r.text).not.toContain(bad);
  });

  it.each([
    [
      "a test key naming a provider without a key header",
      "test",
      { "X-LLM-Provider": "openai" },
      {},
      422,
      "LLM_KEY_NOT_CONFIGURED",
    ],
    [
      "a test key with a body provider and no key header",
      "test",
      {},
      { llm_provider: "openai" },
      422,
      "LLM_KEY_NOT_CONFIGURED",
    ],
    [
      "a live key without a stored anthropic key",
      "live",
      { "X-LLM-Provider": "anthropic" },
      {},
      422,
      "LLM_KEY_NOT_CONFIGURED",
    ],
    ["an unsupported provider", "live", { "X-LLM-Provider": "gemini" }, {}, 422, "LLM_PROVIDER_UNSUPPORTED"],
    [
      "header and body providers that differ",
      "live",
      { "X-LLM-Provider": "openai" },
      { llm_provider: "anthropic" },
      422,
      "VALIDATION_ERROR",
    ],
    ["a key header without a provider", "live", { "X-LLM-Api-Key": BYOK_KEY }, {}, 422, "VALIDATION_ERROR"],
  ])("%s: %s %s", async (_n, mode, headers, body, status, code) => {
    const key = mode === "test" ? acct.test_key : acct.live_key;
    envelope(
      await predict(key, body as Record<string, unknown>, headers as Record<string, string>),
      status as number,
      code as string,
    );
  });
});

describe("Accept: text/event-stream", () => {
  it("streams keepalive events, then one result event, then ends", async () => {
    const r = await fetch(`${s.url}/v1/predict`, {
      method: "POST",
      headers: { "X-API-Key": acct.test_key, "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ screenshot: SHOT, instruction: "click 10,20 #slow=5500" }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/text\/event-stream/);
    const text = await r.text();
    const events = [...text.matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].map((m) => [m[1], JSON.parse(m[2]!)]);
    expect(events.filter(([e]) => e === "keepalive").length).toBeGreaterThanOrEqual(2);
    expect(events.at(-1)![0]).toBe("result");
    expect(events.at(-1)![1].actions[0]).toMatchObject({ action_type: "click", params: { x: 10, y: 20 } });
    expect(events.filter(([e]) => e === "result").length).toBe(1);
  });

  it("errors arrive as one error event carrying the envelope", async () => {
    const r = await fetch(`${s.url}/v1/predict`, {
      method: "POST",
      headers: { "X-API-Key": acct.test_key, "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ screenshot: "nope".repeat(40), instruction: "x" }),
    });
    const text = await r.text();
    const last = [...text.matchAll(/event: (\w+)\ndata: (.*)\n\n/g)].at(-1)!;
    expect(last[1]).toBe("error");
    expect(JSON.parse(last[2]!).error.code).toBe("INVALID_SCREENSHOT");
  });
});

describe("POST /v1/ground and /v1/ocr", () => {
  // DECISIONS.md "Compatibility amendments": nothing found is 422 GROUNDING_FAILED with the charge refunded
  it("ground finds a point inside the image (billed 3, +1 HD); nothing found is 422 GROUNDING_FAILED, refunded", async () => {
    const t = await call(s.url, "POST", "/v1/ground", {
      key: acct.test_key,
      body: { screenshot: SHOT, description: "the Save button" },
    });
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({ found: true, coordinate_space: { width: 320, height: 200 } });
    expect(t.body.x).toBeGreaterThanOrEqual(0);
    expect(t.body.x).toBeLessThan(320);
    const n = await call(s.url, "POST", "/v1/ground", {
      key: acct.test_key,
      body: { screenshot: SHOT, element: "a nonexistent thing" },
    });
    expect(envelope(n, 422, "GROUNDING_FAILED").type).toBe("validation_error");
    expect(n.headers.get("x-credits-refunded")).toBe("0");
    const before = await balance();
    managed.enqueue(openaiReplies.text("NOT_FOUND"));
    const live = await call(s.url, "POST", "/v1/ground", {
      key: acct.live_key,
      body: { screenshot: SHOT, description: "the missing thing" },
    });
    envelope(live, 422, "GROUNDING_FAILED");
    expect(live.headers.get("x-credits-refunded")).toBe("3");
    expect(await balance()).toBe(before);
    managed.enqueue(openaiReplies.calls([{ type: "click", button: "left", x: 640, y: 10 }]));
    const hd = await call(s.url, "POST", "/v1/ground", {
      key: acct.live_key,
      body: { screenshot: HD_SHOT, description: "the corner" },
    });
    expect(hd.status).toBe(200);
    expect(hd.headers.get("x-credits-charged")).toBe("4");
  });

  it("ground validates its body", async () => {
    const e = envelope(
      await call(s.url, "POST", "/v1/ground", { key: acct.test_key, body: { screenshot: SHOT } }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("body.description");
  });

  it("ocr on a test key is deterministic and free", async () => {
    const r = await call(s.url, "POST", "/v1/ocr", { key: acct.test_key, body: { screenshot: SHOT } });
    expect(r.status).toBe(200);
    expect(r.body.text).toMatch(/^Sandbox OCR 320x200 [0-9a-f]{8}$/);
    expect(r.body.words.length).toBeGreaterThan(0);
    expect(r.body.usage.credits_charged).toBe(0);
  });
});

describe("POST /v1/parse", () => {
  it("turns pyautogui code into actions without running it", async () => {
    const code =
      "import pyautogui\npyautogui.click(100, 200)\npyautogui.write('hi')\npyautogui.press('enter', presses=2)\npyautogui.hotkey('ctrl', 'c')";
    const r = await call(s.url, "POST", "/v1/parse", { key: acct.test_key, body: { code } });
    expect(r.status).toBe(200);
    expect(r.body.actions).toEqual([
      { action_type: "click", params: { x: 100, y: 200, button: "left", clicks: 1 } },
      { action_type: "type_text", params: { text: "hi" } },
      { action_type: "key_press", params: { keys: ["enter", "enter"] } },
      { action_type: "key_combo", params: { keys: ["ctrl", "c"] } },
    ]);
    expect(r.body.skipped).toEqual([]);
  });

  it("strict mode rejects unsupported statements with their line; non-strict skips them", async () => {
    const code = "pyautogui.click(1, 2)\nos.system('rm -rf /')";
    const e = envelope(
      await call(s.url, "POST", "/v1/parse", { key: acct.test_key, body: { code } }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("code:2");
    const r = await call(s.url, "POST", "/v1/parse", { key: acct.test_key, body: { code, strict: false } });
    expect(r.body.actions.length).toBe(1);
    expect(r.body.skipped).toEqual([{ line: 2, code: "os.system('rm -rf /')", reason: expect.any(String) }]);
  });

  it("is free and needs the parse scope", async () => {
    const k = (await call(s.url, "POST", "/v1/keys", { key: acct.live_key, body: { scopes: ["predict"] } })).body.key;
    const e = envelope(
      await call(s.url, "POST", "/v1/parse", { key: k, body: { code: "pyautogui.click(1,1)" } }),
      403,
      "INSUFFICIENT_SCOPE",
    );
    expect(e.required_scope).toBe("parse");
  });
});
