// The OpenAI engine end to end: the real openai SDK (Responses API) against the OpenAI stand-in.

import { CoreError } from "@cua/base/errors";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOpenAIEngine, type OpenAIEngineOptions } from "../../src/providers/openai-engine.ts";
import { predictInput, solidPng } from "./fixtures.ts";
import { bearerOf, type OpenAIStandin, openaiReplies as R, startOpenAIStandin } from "./standins/openai-standin.ts";

const KEY = "sk-proj-standin-openai-key-abcdefghijklmnop";
let standin: OpenAIStandin;

beforeAll(async () => {
  standin = await startOpenAIStandin({ apiKey: KEY });
});
afterAll(async () => {
  await standin.close();
});
afterEach(() => {
  const left = standin.pending();
  standin.reset();
  expect(left, "every scripted reply is consumed").toBe(0);
});

function engine(over: Partial<OpenAIEngineOptions> = {}) {
  return createOpenAIEngine({ apiKey: KEY, baseURL: `${standin.url}/v1`, maxRetries: 0, timeoutMs: 5_000, ...over });
}

async function rejection(p: Promise<unknown>): Promise<CoreError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CoreError);
    return e as CoreError;
  }
  throw new Error("expected a rejection");
}

describe.each([
  { model: "gpt-5.4", tool: "computer" },
  { model: "computer-use-preview", tool: "computer_use_preview" },
] as const)("predict with $model ($tool)", ({ model, tool }) => {
  it("sends the key, the tool, the screenshot and the instruction; maps a batch", async () => {
    standin.enqueue(
      R.calls(
        [
          { type: "click", button: "left", x: 100, y: 200 },
          { type: "type", text: "hello" },
          { type: "keypress", keys: ["CTRL", "S"] },
        ],
        { summary: "Clicking the search box.", usage: { input_tokens: 2100, output_tokens: 77 } },
      ),
    );
    const out = await engine({ model }).predict(predictInput());
    const req = standin.requests[0]!;
    expect(req.path).toBe("/v1/responses");
    expect(bearerOf(req)).toBe(KEY);
    expect(req.body.model).toBe(model);
    expect(req.body.store).toBe(false);
    if (tool === "computer") {
      expect(req.body.tools).toEqual([{ type: "computer" }]);
      expect(req.body.truncation).toBeUndefined();
    } else {
      expect(req.body.tools).toEqual([
        { type: "computer_use_preview", display_width: 1280, display_height: 800, environment: "linux" },
      ]);
      expect(req.body.truncation).toBe("auto");
    }
    const [msg] = req.body.input;
    expect(msg.role).toBe("user");
    expect(msg.content[0]).toEqual({ type: "input_text", text: "Open the Settings menu" });
    expect(msg.content[1].type).toBe("input_image");
    expect(msg.content[1].image_url).toMatch(/^data:image\/png;base64,/);
    expect(msg.content[1].detail).toBe(tool === "computer" ? "original" : "high");
    expect(req.body.instructions).toContain("1280x800");

    expect(out.status).toBe("continue");
    expect(out.actions).toEqual([
      { action_type: "click", params: { x: 100, y: 200, button: "left", clicks: 1 } },
      { action_type: "type_text", params: { text: "hello" } },
      { action_type: "key_combo", params: { keys: ["ctrl", "s"] } },
    ]);
    expect(out.reasoning).toContain("Clicking the search box.");
    expect(out.usage).toEqual({ input_tokens: 2100, output_tokens: 77 });
    expect(out.model).toBe(model);
  });

  it("replays the trajectory as computer_call + computer_call_output items", async () => {
    standin.enqueue(R.text("All done."));
    const s0 = solidPng(1280, 800, [1, 2, 3]);
    const s1 = solidPng(1280, 800, [4, 5, 6]);
    const current = solidPng(1280, 800, [7, 8, 9]);
    const out = await engine({ model }).predict(
      predictInput({
        screenshot: current,
        trajectory: [
          {
            screenshot: s0,
            reasoning: "Open the menu.",
            actions: [
              { action_type: "click", params: { x: 10, y: 20, button: "left", clicks: 1 } },
              { action_type: "scroll", params: { clicks: -3, direction: "vertical", x: 5, y: 6 } },
            ],
          },
          { screenshot: s1, actions: [{ action_type: "key_press", params: { keys: ["enter"] } }] },
        ],
      }),
    );
    expect(out).toMatchObject({ status: "done", actions: [{ action_type: "done", params: {} }] });
    const items = standin.requests[0]!.body.input as any[];
    expect(items[0].content[1].image_url).toBe(`data:image/png;base64,${s0.bytes.toString("base64")}`);
    expect(items[1]).toEqual({ role: "assistant", content: "Open the menu." });
    const calls = items.filter((i) => i.type === "computer_call");
    const outputs = items.filter((i) => i.type === "computer_call_output");
    if (tool === "computer") {
      expect(calls).toHaveLength(2);
      expect(calls[0].actions).toEqual([
        { type: "click", button: "left", x: 10, y: 20 },
        { type: "scroll", x: 5, y: 6, scroll_x: 0, scroll_y: 300 },
      ]);
      expect(calls[1].actions).toEqual([{ type: "keypress", keys: ["ENTER"] }]);
      expect(outputs[0].output).toEqual({
        type: "computer_screenshot",
        image_url: `data:image/png;base64,${s1.bytes.toString("base64")}`,
        detail: "original",
      });
    } else {
      expect(calls).toHaveLength(3);
      expect(calls[0].action).toEqual({ type: "click", button: "left", x: 10, y: 20 });
      expect(calls[1].action).toEqual({ type: "scroll", x: 5, y: 6, scroll_x: 0, scroll_y: 300 });
    }
    for (const c of calls) {
      expect(c.id).toMatch(/^cu_[0-9a-f]{40}$/);
      expect(c.pending_safety_checks).toEqual([]);
      expect(outputs.some((o) => o.call_id === c.call_id)).toBe(true);
    }
    expect(outputs.at(-1).output.image_url).toBe(`data:image/png;base64,${current.bytes.toString("base64")}`);
  });
});

describe("predict: mapping through the wire", () => {
  const CASES: { action: Record<string, unknown>; want: unknown[] }[] = [
    {
      action: { type: "click", button: "right", x: 3, y: 4 },
      want: [{ action_type: "click", params: { x: 3, y: 4, button: "right", clicks: 1 } }],
    },
    {
      action: { type: "click", button: "wheel", x: 3, y: 4 },
      want: [{ action_type: "click", params: { x: 3, y: 4, button: "middle", clicks: 1 } }],
    },
    {
      action: { type: "click", button: "back", x: 3, y: 4 },
      want: [{ action_type: "key_combo", params: { keys: ["alt", "left"] } }],
    },
    {
      action: { type: "click", button: "forward", x: 3, y: 4 },
      want: [{ action_type: "key_combo", params: { keys: ["alt", "right"] } }],
    },
    {
      action: { type: "click", button: "left", x: 3, y: 4, keys: ["SHIFT"] },
      want: [{ action_type: "click", params: { x: 3, y: 4, button: "left", clicks: 1, hold_keys: ["shift"] } }],
    },
    {
      action: { type: "double_click", x: 3, y: 4, keys: null },
      want: [{ action_type: "click", params: { x: 3, y: 4, button: "left", clicks: 2 } }],
    },
    {
      action: {
        type: "drag",
        path: [
          { x: 1, y: 1 },
          { x: 50, y: 50 },
          { x: 90, y: 80 },
        ],
      },
      want: [{ action_type: "drag", params: { x1: 1, y1: 1, x2: 90, y2: 80, button: "left" } }],
    },
    {
      action: { type: "keypress", keys: ["ENTER"] },
      want: [{ action_type: "key_press", params: { keys: ["enter"] } }],
    },
    {
      action: { type: "keypress", keys: ["CTRL", "ALT", "T"] },
      want: [{ action_type: "key_combo", params: { keys: ["ctrl", "alt", "t"] } }],
    },
    {
      action: { type: "keypress", keys: ["ArrowDown"] },
      want: [{ action_type: "key_press", params: { keys: ["down"] } }],
    },
    { action: { type: "move", x: 640, y: 400 }, want: [{ action_type: "move", params: { x: 640, y: 400 } }] },
    {
      action: { type: "scroll", x: 640, y: 400, scroll_x: 0, scroll_y: 300 },
      want: [{ action_type: "scroll", params: { clicks: -3, direction: "vertical", x: 640, y: 400 } }],
    },
    {
      action: { type: "scroll", x: 640, y: 400, scroll_x: 0, scroll_y: -40 },
      want: [{ action_type: "scroll", params: { clicks: 1, direction: "vertical", x: 640, y: 400 } }],
    },
    {
      action: { type: "scroll", x: 640, y: 400, scroll_x: -250, scroll_y: 0 },
      want: [{ action_type: "scroll", params: { clicks: -3, direction: "horizontal", x: 640, y: 400 } }],
    },
    {
      action: { type: "scroll", x: 640, y: 400, scroll_x: 100, scroll_y: 100 },
      want: [
        { action_type: "scroll", params: { clicks: -1, direction: "vertical", x: 640, y: 400 } },
        { action_type: "scroll", params: { clicks: 1, direction: "horizontal", x: 640, y: 400 } },
      ],
    },
    { action: { type: "type", text: "hi there" }, want: [{ action_type: "type_text", params: { text: "hi there" } }] },
    { action: { type: "wait" }, want: [{ action_type: "wait", params: { seconds: 2 } }] },
  ];
  it.each(CASES)("$action.type $action", async ({ action, want }) => {
    standin.enqueue(R.calls([action]));
    const out = await engine().predict(predictInput());
    expect(out.actions).toEqual(want);
  });

  it("a screenshot request yields no action and status continue", async () => {
    standin.enqueue(R.calls([{ type: "screenshot" }]));
    expect(await engine().predict(predictInput())).toMatchObject({ actions: [], status: "continue" });
  });

  it("pending safety checks are surfaced, never dropped", async () => {
    standin.enqueue(
      R.safety(
        [{ type: "click", button: "left", x: 9, y: 9 }],
        [
          {
            id: "cu_sc_1",
            code: "malicious_instructions",
            message: "The page contains instructions that may be a prompt injection.",
          },
          { id: "cu_sc_2", code: "sensitive_domain", message: "You are on a banking site." },
        ],
      ),
    );
    const out = await engine().predict(predictInput());
    expect(out.actions).toHaveLength(1);
    expect(out.safety_checks).toEqual([
      { code: "malicious_instructions", message: "The page contains instructions that may be a prompt injection." },
      { code: "sensitive_domain", message: "You are on a banking site." },
    ]);
  });

  it("safety checks stay visible with the preview tool too", async () => {
    standin.enqueue(
      R.safety(
        [{ type: "click", button: "left", x: 9, y: 9 }],
        [{ id: "cu_sc_3", code: "irrelevant_domain", message: "Off-task site." }],
      ),
    );
    const out = await engine({ model: "computer-use-preview" }).predict(predictInput());
    expect(out.safety_checks).toEqual([{ code: "irrelevant_domain", message: "Off-task site." }]);
  });

  it("text without a call is done; FAIL: is fail; a refusal is fail and a safety check", async () => {
    standin.enqueue(R.text("The form is submitted."), R.text("FAIL: captcha"), R.refusal("I can't help with that."));
    expect(await engine().predict(predictInput())).toMatchObject({
      status: "done",
      actions: [{ action_type: "done", params: {} }],
    });
    expect(await engine().predict(predictInput())).toMatchObject({
      status: "fail",
      actions: [{ action_type: "fail", params: { message: "captcha" } }],
    });
    const refused = await engine().predict(predictInput());
    expect(refused.status).toBe("fail");
    expect(refused.safety_checks).toEqual([{ code: "openai_refusal", message: "I can't help with that." }]);
  });

  it("malformed or unmappable actions are PREDICTION_FAILED", async () => {
    standin.enqueue(
      R.calls([{ type: "click", button: "left", x: "ten", y: 3 }]),
      R.calls([{ type: "drag", path: [{ x: 1, y: 1 }] }]),
      R.calls([{ type: "teleport" }]),
    );
    for (let i = 0; i < 3; i++)
      expect((await rejection(engine().predict(predictInput()))).code).toBe("PREDICTION_FAILED");
  });

  it("an incomplete response without a call is PREDICTION_FAILED", async () => {
    standin.enqueue({ kind: "response", status: "incomplete", incomplete_reason: "max_output_tokens" });
    const err = await rejection(engine().predict(predictInput()));
    expect(err.code).toBe("PREDICTION_FAILED");
    expect(err.message).toMatch(/max_output_tokens/);
  });

  it("max_actions truncates the batch; the tools filter refuses excluded actions", async () => {
    standin.enqueue(
      R.calls([
        { type: "move", x: 1, y: 1 },
        { type: "click", button: "left", x: 1, y: 1 },
        { type: "type", text: "a" },
      ]),
    );
    const out = await engine().predict(predictInput({ maxActions: 2 }));
    expect(out.actions.map((a) => a.action_type)).toEqual(["move", "click"]);
    standin.enqueue(R.calls([{ type: "type", text: "a" }]));
    const err = await rejection(engine().predict(predictInput({ tools: ["click"] })));
    expect(err.message).toMatch(/type_text is not among the allowed tools/);
    expect(standin.requests[1]!.body.instructions).toMatch(/Only these kinds of action are allowed: clicking/);
  });
});

describe("ground", () => {
  it("returns the click point", async () => {
    standin.enqueue(R.calls([{ type: "click", button: "left", x: 500, y: 60 }], { text: "confidence=0.75" }));
    const out = await engine().ground({
      screenshot: solidPng(1280, 800),
      description: "the Submit button",
      cuaVersion: "v5",
    });
    expect(out).toEqual({
      found: true,
      x: 500,
      y: 60,
      bbox: null,
      confidence: 0.75,
      usage: { input_tokens: 2000, output_tokens: 60 },
    });
    expect(standin.requests[0]!.body.input[0].content[0].text).toContain("the Submit button");
  });

  it("found=false without a click", async () => {
    standin.enqueue(R.text("NOT_FOUND"));
    expect(
      await engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" }),
    ).toMatchObject({ found: false, x: null, y: null });
  });

  it("a non-pointing answer is PREDICTION_FAILED (an engine failure, 502)", async () => {
    standin.enqueue(R.calls([{ type: "type", text: "x" }]));
    expect(
      (await rejection(engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" }))).code,
    ).toBe("PREDICTION_FAILED");
  });
});

describe("errors", () => {
  it("a wrong key is LLM_KEY_INVALID and the masked key OpenAI echoes is not passed on", async () => {
    const bad = "sk-proj-WRONGWRONGWRONGWRONG-1234";
    const err = await rejection(
      createOpenAIEngine({ apiKey: bad, baseURL: `${standin.url}/v1`, maxRetries: 0 }).predict(predictInput()),
    );
    expect(err.code).toBe("LLM_KEY_INVALID");
    const shown = JSON.stringify({ m: err.message, e: err.extras });
    expect(shown).not.toContain(bad);
    expect(shown).not.toContain("sk-proj-");
    expect(shown).not.toContain("1234");
  });

  it.each([
    [
      "403",
      R.error(403, "invalid_request_error", "unsupported_country_region_territory", "Country not supported"),
      "LLM_KEY_INVALID",
    ],
    ["429 insufficient_quota", R.quota(), "LLM_KEY_INVALID"],
    ["429 rate limit", R.rateLimited("3"), "UPSTREAM_UNAVAILABLE"],
    ["500", R.serverError(500), "UPSTREAM_UNAVAILABLE"],
    ["503", R.serverError(503), "UPSTREAM_UNAVAILABLE"],
    ["400", R.error(400, "invalid_request_error", null, "Invalid image"), "PREDICTION_FAILED"],
  ] as const)("%s -> %s", async (_n, reply, code) => {
    standin.enqueue(reply);
    const err = await rejection(engine().predict(predictInput()));
    expect(err.code).toBe(code);
    expect(err.extras.provider).toBe("openai");
  });

  it("429 keeps retry_after and the request id", async () => {
    standin.enqueue(R.rateLimited("3"));
    const err = await rejection(engine().predict(predictInput()));
    expect(err.extras).toMatchObject({ retry_after: 3, upstream_status: 429 });
    expect(err.extras.upstream_request_id).toMatch(/^req_standin_/);
  });

  it("a reply slower than the timeout is UPSTREAM_TIMEOUT", async () => {
    standin.enqueue(R.delay(2_000, R.text("late")));
    const err = await rejection(engine({ timeoutMs: 300 }).predict(predictInput()));
    expect(err.code).toBe("UPSTREAM_TIMEOUT");
  });

  it("a dropped connection is UPSTREAM_UNAVAILABLE", async () => {
    standin.enqueue(R.hangup());
    expect((await rejection(engine().predict(predictInput()))).code).toBe("UPSTREAM_UNAVAILABLE");
  });

  it("a managed key rejected upstream is UPSTREAM_UNAVAILABLE", async () => {
    const err = await rejection(
      createOpenAIEngine({
        apiKey: "sk-wrong-managed-key-0000",
        baseURL: `${standin.url}/v1`,
        maxRetries: 0,
        keySource: "managed",
      }).predict(predictInput()),
    );
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
  });
});
