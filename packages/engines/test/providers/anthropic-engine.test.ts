// The Anthropic engine end to end: the real @anthropic-ai/sdk against the Anthropic stand-in.

import { CoreError } from "@cua/base/errors";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAnthropicEngine } from "../../src/providers/anthropic-engine.ts";
import type { AnthropicToolVersion } from "../../src/providers/anthropic-models.ts";
import { jpegStub, predictInput, solidPng } from "./fixtures.ts";
import {
  type AnthropicStandin,
  anthropicKeyOf,
  anthropicReplies as R,
  startAnthropicStandin,
} from "./standins/anthropic-standin.ts";
import { pngSize } from "./standins/http-standin.ts";

const KEY = "sk-ant-api03-standin-test-key-0123456789";
let standin: AnthropicStandin;

beforeAll(async () => {
  standin = await startAnthropicStandin({ apiKey: KEY });
});
afterAll(async () => {
  await standin.close();
});
afterEach(() => {
  const left = standin.pending();
  standin.reset();
  expect(left, "every scripted reply is consumed").toBe(0);
});

function engine(over: Partial<Parameters<typeof createAnthropicEngine>[0]> = {}) {
  return createAnthropicEngine({ apiKey: KEY, baseURL: standin.url, maxRetries: 0, timeoutMs: 5_000, ...over });
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

const VERSIONS: { model: string; tool: AnthropicToolVersion; beta: string | null }[] = [
  { model: "claude-sonnet-5", tool: "computer_toolset_20260801", beta: null },
  { model: "claude-opus-4-6", tool: "computer_20251124", beta: "computer-use-2025-11-24" },
  { model: "claude-sonnet-4-5", tool: "computer_20250124", beta: "computer-use-2025-01-24" },
];

describe.each(VERSIONS)("predict with $model ($tool)", ({ model, tool, beta }) => {
  it("sends key, version, beta flag, tool, image and instruction; maps the answer", async () => {
    standin.enqueue(
      R.calls(
        [
          { action: "left_click", coordinate: [412, 96] },
          { action: "type", text: "hello" },
          { action: "key", text: "ctrl+s" },
        ],
        "I will open the menu.",
        { input_tokens: 1500, output_tokens: 80, cache_read_input_tokens: 200, cache_creation_input_tokens: 0 },
      ),
    );
    const out = await engine({ model }).predict(predictInput());
    const req = standin.requests[0]!;
    expect(req.path).toBe("/v1/messages");
    expect(anthropicKeyOf(req)).toBe(KEY);
    expect(req.headers["anthropic-version"]).toBeTruthy();
    if (beta) expect(req.headers["anthropic-beta"]).toContain(beta);
    else expect(req.headers["anthropic-beta"] ?? "").not.toMatch(/computer-use/);
    expect(req.body.model).toBe(model);
    expect(req.body.tools[0].type).toBe(tool);
    if (tool === "computer_toolset_20260801") {
      expect(req.body.tools[0].name).toBeUndefined();
      expect(req.body.tools[0].configs.zoom).toEqual({ enabled: false });
    } else {
      expect(req.body.tools[0]).toMatchObject({ name: "computer", display_width_px: 1280, display_height_px: 800 });
    }
    const first = req.body.messages[0];
    expect(first.role).toBe("user");
    expect(first.content[0].type).toBe("image");
    expect(first.content[0].source.media_type).toBe("image/png");
    expect(pngSize(first.content[0].source.data)).toEqual({ width: 1280, height: 800 });
    expect(first.content[0].transformations).toEqual({ oversized_image: "error" });
    expect(first.content[1]).toEqual({ type: "text", text: "Open the Settings menu" });
    expect(req.body.system).toContain("1280x800");

    expect(out.status).toBe("continue");
    expect(out.actions).toEqual([
      { action_type: "click", params: { x: 412, y: 96, button: "left", clicks: 1 } },
      { action_type: "type_text", params: { text: "hello" } },
      { action_type: "key_combo", params: { keys: ["ctrl", "s"] } },
    ]);
    expect(out.reasoning).toContain("I will open the menu.");
    expect(out.usage).toEqual({ input_tokens: 1700, output_tokens: 80 });
    expect(out.model).toBe(model);
  });

  it("replays the trajectory as tool_use and tool_result turns carrying the screenshots", async () => {
    standin.enqueue(R.endTurn("The file is saved."));
    const s0 = solidPng(1280, 800, [10, 10, 10]);
    const s1 = solidPng(1280, 800, [20, 20, 20]);
    const current = solidPng(1280, 800, [30, 30, 30]);
    const out = await engine({ model }).predict(
      predictInput({
        screenshot: current,
        trajectory: [
          {
            screenshot: s0,
            reasoning: "Click File.",
            actions: [
              { action_type: "click", params: { x: 10, y: 20, button: "left", clicks: 1 } },
              { action_type: "key_combo", params: { keys: ["ctrl", "s"] } },
            ],
          },
          { screenshot: s1, actions: [] },
        ],
      }),
    );
    expect(out.status).toBe("done");
    expect(out.actions).toEqual([{ action_type: "done", params: {} }]);
    const msgs = standin.requests[0]!.body.messages;
    expect(msgs.map((m: any) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
    // opening turn: the first step's screenshot, then the task
    expect(msgs[0].content[0].source.data).toBe(s0.bytes.toString("base64"));
    // step 0: reasoning text + two tool uses
    const a0 = msgs[1].content;
    expect(a0[0]).toEqual({ type: "text", text: "Click File." });
    const uses = a0.filter((b: any) => b.type === "tool_use");
    expect(uses).toHaveLength(2);
    const [click, key] = uses;
    if (tool === "computer_toolset_20260801") {
      expect(click).toMatchObject({ name: "left_click", input: { coordinate: [10, 20] }, toolset_name: "computer" });
      expect(key).toMatchObject({ name: "key", input: { text: "ctrl+s" }, toolset_name: "computer" });
    } else {
      expect(click).toMatchObject({ name: "computer", input: { action: "left_click", coordinate: [10, 20] } });
      expect(key).toMatchObject({ name: "computer", input: { action: "key", text: "ctrl+s" } });
    }
    // results: the last one carries the screenshot taken after the step (s1)
    const r0 = msgs[2].content;
    expect(r0.map((b: any) => b.tool_use_id)).toEqual(uses.map((u: any) => u.id));
    expect(r0[1].content[0].source.data).toBe(s1.bytes.toString("base64"));
    // step 1 had no actions: replayed as a screenshot request, answered with the current screenshot
    const a1 = msgs[3].content.filter((b: any) => b.type === "tool_use");
    expect(a1).toHaveLength(1);
    expect(a1[0].name === "screenshot" || a1[0].input.action === "screenshot").toBe(true);
    expect(msgs[4].content[0].content[0].source.data).toBe(current.bytes.toString("base64"));
  });
});

describe("predict: mapping through the wire", () => {
  const CASES: { call: Record<string, unknown> & { action: string }; want: unknown }[] = [
    {
      call: { action: "double_click", coordinate: [5, 6] },
      want: { action_type: "click", params: { x: 5, y: 6, button: "left", clicks: 2 } },
    },
    {
      call: { action: "triple_click", coordinate: [5, 6] },
      want: { action_type: "click", params: { x: 5, y: 6, button: "left", clicks: 3 } },
    },
    {
      call: { action: "right_click", coordinate: [5, 6] },
      want: { action_type: "click", params: { x: 5, y: 6, button: "right", clicks: 1 } },
    },
    {
      call: { action: "middle_click", coordinate: [5, 6] },
      want: { action_type: "click", params: { x: 5, y: 6, button: "middle", clicks: 1 } },
    },
    {
      call: { action: "left_click", coordinate: [5, 6], text: "shift" },
      want: { action_type: "click", params: { x: 5, y: 6, button: "left", clicks: 1, hold_keys: ["shift"] } },
    },
    { call: { action: "mouse_move", coordinate: [7, 8] }, want: { action_type: "move", params: { x: 7, y: 8 } } },
    {
      call: { action: "left_click_drag", start_coordinate: [1, 2], coordinate: [300, 400] },
      want: { action_type: "drag", params: { x1: 1, y1: 2, x2: 300, y2: 400, button: "left" } },
    },
    { call: { action: "type", text: "abc" }, want: { action_type: "type_text", params: { text: "abc" } } },
    { call: { action: "key", text: "Return" }, want: { action_type: "key_press", params: { keys: ["enter"] } } },
    {
      call: { action: "key", text: "ctrl+shift+t" },
      want: { action_type: "key_combo", params: { keys: ["ctrl", "shift", "t"] } },
    },
    {
      call: { action: "scroll", coordinate: [640, 400], scroll_direction: "down", scroll_amount: 5 },
      want: { action_type: "scroll", params: { clicks: -5, direction: "vertical", x: 640, y: 400 } },
    },
    {
      call: { action: "scroll", coordinate: [640, 400], scroll_direction: "up", scroll_amount: 2 },
      want: { action_type: "scroll", params: { clicks: 2, direction: "vertical", x: 640, y: 400 } },
    },
    {
      call: { action: "scroll", coordinate: [640, 400], scroll_direction: "left", scroll_amount: 3 },
      want: { action_type: "scroll", params: { clicks: -3, direction: "horizontal", x: 640, y: 400 } },
    },
    {
      call: { action: "scroll", coordinate: [640, 400], scroll_direction: "right", scroll_amount: 1 },
      want: { action_type: "scroll", params: { clicks: 1, direction: "horizontal", x: 640, y: 400 } },
    },
    { call: { action: "wait", duration: 2 }, want: { action_type: "wait", params: { seconds: 2 } } },
  ];
  it.each(CASES)("$call.action $call", async ({ call, want }) => {
    standin.enqueue(R.calls([call]));
    const out = await engine().predict(predictInput());
    expect(out.actions).toEqual([want]);
    expect(out.status).toBe("continue");
  });

  it("a screenshot request yields no action and status continue", async () => {
    standin.enqueue(R.calls([{ action: "screenshot" }]));
    const out = await engine().predict(predictInput());
    expect(out).toMatchObject({ actions: [], status: "continue" });
  });

  it("end_turn with FAIL: is status fail with the reason", async () => {
    standin.enqueue(R.endTurn("FAIL: the site requires a login I do not have."));
    const out = await engine().predict(predictInput());
    expect(out.status).toBe("fail");
    expect(out.actions).toEqual([
      { action_type: "fail", params: { message: "the site requires a login I do not have." } },
    ]);
  });

  it("a refusal is status fail and stays visible in safety_checks", async () => {
    standin.enqueue(R.refusal("This request could cause harm.", "general_harms"));
    const out = await engine().predict(predictInput());
    expect(out.status).toBe("fail");
    expect(out.actions[0]).toMatchObject({ action_type: "fail", params: { code: "PROVIDER_REFUSAL" } });
    expect(out.safety_checks).toEqual([
      { code: "anthropic_refusal_general_harms", message: "This request could cause harm." },
    ]);
  });

  it("malformed tool input is PREDICTION_FAILED", async () => {
    standin.enqueue(R.calls([{ action: "left_click", coordinate: "here" }]));
    const err = await rejection(engine().predict(predictInput()));
    expect(err.code).toBe("PREDICTION_FAILED");
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/left_click/);
  });

  it("an unknown action is PREDICTION_FAILED; after a good one it only ends the batch", async () => {
    standin.enqueue(R.calls([{ action: "hold_key", text: "shift", duration: 2 }]));
    expect((await rejection(engine().predict(predictInput()))).code).toBe("PREDICTION_FAILED");
    standin.enqueue(
      R.calls([
        { action: "left_click", coordinate: [1, 1] },
        { action: "hold_key", text: "shift", duration: 2 },
      ]),
    );
    const out = await engine().predict(predictInput());
    expect(out.actions).toHaveLength(1);
    expect(out.reasoning).toMatch(/hold_key/);
  });

  it("a click far outside the screenshot is PREDICTION_FAILED", async () => {
    standin.enqueue(R.calls([{ action: "left_click", coordinate: [5000, 10] }]));
    expect((await rejection(engine().predict(predictInput()))).code).toBe("PREDICTION_FAILED");
  });

  it("respects max_actions: parallel tool use off at 1, extra actions dropped", async () => {
    standin.enqueue(
      R.calls([
        { action: "left_click", coordinate: [1, 1] },
        { action: "type", text: "x" },
      ]),
    );
    const out = await engine().predict(predictInput({ maxActions: 1 }));
    expect(standin.requests[0]!.body.tool_choice).toEqual({ type: "auto", disable_parallel_tool_use: true });
    expect(standin.requests[0]!.body.system).toContain("exactly one action");
    expect(out.actions).toEqual([{ action_type: "click", params: { x: 1, y: 1, button: "left", clicks: 1 } }]);
    expect(out.reasoning).toMatch(/max_actions is 1/);
  });

  it("respects the tools filter: members switched off, prompt told, excluded actions refused", async () => {
    standin.enqueue(R.calls([{ action: "type", text: "nope" }]));
    const err = await rejection(engine().predict(predictInput({ tools: ["click", "scroll"] })));
    expect(err.code).toBe("PREDICTION_FAILED");
    expect(err.message).toMatch(/type_text is not among the allowed tools/);
    const tool = standin.requests[0]!.body.tools[0];
    expect(tool.configs.type).toEqual({ enabled: false });
    expect(tool.configs.key).toEqual({ enabled: false });
    expect(tool.configs.left_click).toBeUndefined();
    expect(tool.configs.scroll).toBeUndefined();
    expect(standin.requests[0]!.body.system).toMatch(
      /Only these kinds of action are allowed: clicking .*; scrolling\./,
    );
  });

  it("system prompt: system_prompt replaces the base prompt, instructions are appended, each cut at 16,000", async () => {
    standin.enqueue(R.endTurn("ok"), R.endTurn("ok"));
    await engine().predict(predictInput({ instructions: "Prefer keyboard shortcuts." }));
    const withBase = standin.requests[0]!.body.system as string;
    expect(withBase).toMatch(/^You operate a computer/);
    expect(withBase).toContain("Prefer keyboard shortcuts.");
    await engine().predict(
      predictInput({ systemPrompt: `S${"a".repeat(20_000)}`, instructions: `I${"b".repeat(20_000)}` }),
    );
    const custom = standin.requests[1]!.body.system as string;
    expect(custom.startsWith("S")).toBe(true);
    expect(custom).not.toMatch(/You operate a computer/);
    expect(custom).toContain(`S${"a".repeat(15_999)}\n\nI${"b".repeat(15_999)}\n\nProtocol`);
  });

  it("downscales a large PNG itself and scales the answer back", async () => {
    standin.enqueue(R.calls([{ action: "left_click", coordinate: [100, 50] }]));
    const big = solidPng(3840, 2160);
    const out = await engine().predict(predictInput({ screenshot: big }));
    const img = standin.requests[0]!.body.messages[0].content[0];
    const sent = pngSize(img.source.data)!;
    expect(sent.width).toBeLessThanOrEqual(2576);
    expect(sent.width * sent.height).toBeLessThanOrEqual(3_750_000);
    expect(standin.requests[0]!.body.system).toContain(`${sent.width}x${sent.height}`);
    const click = out.actions[0] as { params: { x: number; y: number } };
    expect(click.params.x).toBe(Math.round(((100 + 0.5) * 3840) / sent.width - 0.5));
    expect(click.params.y).toBe(Math.round(((50 + 0.5) * 2160) / sent.height - 0.5));
  });

  it("sends a JPEG as JPEG", async () => {
    standin.enqueue(R.endTurn("done"));
    await engine().predict(predictInput({ screenshot: jpegStub(1024, 768) }));
    expect(standin.requests[0]!.body.messages[0].content[0].source.media_type).toBe("image/jpeg");
  });
});

describe("ground", () => {
  it("asks for a single left_click and returns its point and stated confidence", async () => {
    standin.enqueue(R.calls([{ action: "left_click", coordinate: [321, 123] }], "confidence=0.9"));
    const out = await engine().ground({
      screenshot: solidPng(1280, 800),
      description: "the Save button",
      cuaVersion: "v5",
    });
    expect(out).toEqual({
      found: true,
      x: 321,
      y: 123,
      bbox: null,
      confidence: 0.9,
      usage: { input_tokens: 1000, output_tokens: 50 },
    });
    const req = standin.requests[0]!;
    expect(req.body.messages[0].content[1].text).toContain("the Save button");
    const configs = req.body.tools[0].configs;
    expect(configs.left_click).toBeUndefined();
    expect(configs.type).toEqual({ enabled: false });
  });

  it("found=false when the model says it cannot find it", async () => {
    standin.enqueue(R.endTurn("NOT_FOUND"));
    const out = await engine().ground({ screenshot: solidPng(1280, 800), description: "a unicorn", cuaVersion: "v5" });
    expect(out).toMatchObject({ found: false, x: null, y: null, bbox: null, confidence: 0 });
  });

  it("a non-click answer is PREDICTION_FAILED (an engine failure, 502)", async () => {
    standin.enqueue(R.calls([{ action: "type", text: "x" }]));
    const err = await rejection(
      engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" }),
    );
    expect(err.code).toBe("PREDICTION_FAILED");
  });

  it("provider errors during ground keep their mapping", async () => {
    standin.enqueue(R.overloaded());
    const err = await rejection(
      engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" }),
    );
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
  });
});

describe("errors", () => {
  it("a wrong key is LLM_KEY_INVALID (422) and never echoes the key", async () => {
    const bad = "sk-ant-api03-WRONG-key-abcdefghijkl";
    const err = await rejection(
      createAnthropicEngine({ apiKey: bad, baseURL: standin.url, maxRetries: 0 }).predict(predictInput()),
    );
    expect(err.code).toBe("LLM_KEY_INVALID");
    expect(err.status).toBe(422);
    expect(JSON.stringify({ m: err.message, e: err.extras })).not.toContain(bad);
  });

  it("a rejected managed key is UPSTREAM_UNAVAILABLE, not the caller's fault", async () => {
    const err = await rejection(
      createAnthropicEngine({
        apiKey: "sk-ant-wrong",
        baseURL: standin.url,
        maxRetries: 0,
        keySource: "managed",
      }).predict(predictInput()),
    );
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
  });

  it.each([
    [
      "403 permission_error",
      R.error(403, "permission_error", "Your API key does not have permission"),
      "LLM_KEY_INVALID",
    ],
    ["402 billing_error", R.error(402, "billing_error", "Your credit balance is too low"), "LLM_KEY_INVALID"],
    ["429 rate_limit_error", R.rateLimited("7"), "UPSTREAM_UNAVAILABLE"],
    ["500 api_error", R.serverError(), "UPSTREAM_UNAVAILABLE"],
    ["529 overloaded_error", R.overloaded(), "UPSTREAM_UNAVAILABLE"],
    ["400 invalid_request_error", R.error(400, "invalid_request_error", "image too large"), "PREDICTION_FAILED"],
    ["404 not_found_error", R.error(404, "not_found_error", "model: claude-nope"), "PREDICTION_FAILED"],
  ] as const)("%s -> %s", async (_name, reply, code) => {
    standin.enqueue(reply);
    const err = await rejection(engine().predict(predictInput()));
    expect(err.code).toBe(code);
    expect(err.extras.provider).toBe("anthropic");
  });

  it("429 carries retry_after and the provider request id", async () => {
    standin.enqueue(R.rateLimited("7"));
    const err = await rejection(engine().predict(predictInput()));
    expect(err.extras.retry_after).toBe(7);
    expect(err.extras.upstream_request_id).toMatch(/^req_standin_/);
  });

  it("a reply slower than the timeout is UPSTREAM_TIMEOUT", async () => {
    standin.enqueue(R.delay(2_000, R.endTurn("late")));
    const started = Date.now();
    const err = await rejection(engine({ timeoutMs: 300 }).predict(predictInput()));
    expect(err.code).toBe("UPSTREAM_TIMEOUT");
    expect(err.status).toBe(504);
    expect(Date.now() - started).toBeLessThan(1_900);
  });

  it("a dropped connection is UPSTREAM_UNAVAILABLE", async () => {
    standin.enqueue(R.hangup());
    expect((await rejection(engine().predict(predictInput()))).code).toBe("UPSTREAM_UNAVAILABLE");
  });

  it("connection refused is UPSTREAM_UNAVAILABLE", async () => {
    const dead = await startAnthropicStandin({ apiKey: KEY });
    const url = dead.url;
    await dead.close();
    const err = await rejection(
      createAnthropicEngine({ apiKey: KEY, baseURL: url, maxRetries: 0 }).predict(predictInput()),
    );
    expect(err.code).toBe("UPSTREAM_UNAVAILABLE");
  });

  it("the SDK retries a 529 when retries are allowed", async () => {
    standin.enqueue(R.overloaded(), R.endTurn("done"));
    const out = await engine({ maxRetries: 1 }).predict(predictInput());
    expect(out.status).toBe("done");
    expect(standin.requests).toHaveLength(2);
  });

  it("an abort by the caller is rethrown as the caller's abort, not mapped", async () => {
    standin.enqueue(R.delay(2_000, R.endTurn("late")));
    const ac = new AbortController();
    const p = engine().predict(predictInput({ signal: ac.signal }));
    setTimeout(() => ac.abort(new Error("client went away")), 100);
    await expect(p).rejects.toThrow("client went away");
  });
});
