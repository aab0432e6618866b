// The OpenAI-compatible engine end to end: the openai SDK's Chat Completions against the stand-in's
// /v1/chat/completions (the surface vLLM and Ollama expose).

import { CoreError } from "@cua/base/errors";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createOpenAICompatibleEngine,
  extractJsonObject,
  NO_KEY_PLACEHOLDER,
  type OpenAICompatibleEngineOptions,
  predictAnswerSchema,
} from "../../src/providers/openai-compatible-engine.ts";
import { predictInput, solidPng } from "./fixtures.ts";
import { bearerOf, type OpenAIStandin, openaiReplies as R, startOpenAIStandin } from "./standins/openai-standin.ts";

let open: OpenAIStandin; // no key required, like a local vLLM
let keyed: OpenAIStandin;

beforeAll(async () => {
  open = await startOpenAIStandin({ apiKey: null });
  keyed = await startOpenAIStandin({ apiKey: "gateway-key-123456" });
});
afterAll(async () => {
  await open.close();
  await keyed.close();
});
afterEach(() => {
  for (const s of [open, keyed]) {
    const left = s.pending();
    s.reset();
    expect(left, "every scripted reply is consumed").toBe(0);
  }
});

function engine(over: Partial<OpenAICompatibleEngineOptions> = {}) {
  return createOpenAICompatibleEngine({
    baseURL: `${open.url}/v1`,
    model: "Qwen/Qwen2.5-VL-7B-Instruct",
    maxRetries: 0,
    timeoutMs: 5_000,
    ...over,
  });
}

const answer = (o: unknown) => R.chat(JSON.stringify(o));

async function rejection(p: Promise<unknown>): Promise<CoreError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(CoreError);
    return e as CoreError;
  }
  throw new Error("expected a rejection");
}

describe("predict", () => {
  it("asks with an image part and a JSON-schema response format; returns validated actions", async () => {
    open.enqueue(
      answer({
        reasoning: "Click the gear.",
        status: "continue",
        actions: [
          { action_type: "click", params: { x: 1200, y: 40 } },
          { action_type: "key_combo", params: { keys: ["Control", "S"] } },
        ],
      }),
    );
    const out = await engine().predict(predictInput());
    const req = open.requests[0]!;
    expect(req.path).toBe("/v1/chat/completions");
    expect(bearerOf(req)).toBe(NO_KEY_PLACEHOLDER);
    expect(req.body.model).toBe("Qwen/Qwen2.5-VL-7B-Instruct");
    expect(req.body.temperature).toBe(0);
    expect(req.body.messages[0].role).toBe("system");
    expect(req.body.messages[0].content).toContain('"status": "continue" | "done" | "fail"');
    const user = req.body.messages[1];
    expect(user.content[0]).toEqual({ type: "text", text: "Task: Open the Settings menu" });
    expect(user.content[1].type).toBe("image_url");
    expect(user.content[1].image_url.url).toMatch(/^data:image\/png;base64,/);
    expect(req.body.response_format.type).toBe("json_schema");
    expect(req.body.response_format.json_schema.schema.properties.actions.maxItems).toBe(5);
    expect(out).toMatchObject({
      status: "continue",
      reasoning: "Click the gear.",
      usage: { input_tokens: 900, output_tokens: 40 },
      actions: [
        { action_type: "click", params: { x: 1200, y: 40, button: "left", clicks: 1 } },
        { action_type: "key_combo", params: { keys: ["ctrl", "S"] } },
      ],
    });
  });

  it("sends the configured key as a bearer token", async () => {
    keyed.enqueue(answer({ reasoning: "", status: "done", actions: [] }));
    const e = createOpenAICompatibleEngine({
      baseURL: `${keyed.url}/v1`,
      model: "m",
      apiKey: "gateway-key-123456",
      maxRetries: 0,
    });
    expect((await e.predict(predictInput())).status).toBe("done");
    expect(bearerOf(keyed.requests[0]!)).toBe("gateway-key-123456");
  });

  it("tolerates code fences and prose around the JSON", async () => {
    open.enqueue(
      R.chat(
        'Sure!\n```json\n{"reasoning": "ok", "status": "continue", "actions": [{"action_type": "type_text", "params": {"text": "a}b"}}]}\n```',
      ),
    );
    const out = await engine().predict(predictInput());
    expect(out.actions).toEqual([{ action_type: "type_text", params: { text: "a}b" } }]);
  });

  it("done and fail: status with no actions, or a terminal action after others", async () => {
    open.enqueue(
      answer({ reasoning: "All saved.", status: "done", actions: [] }),
      answer({ reasoning: "Login required.", status: "fail", actions: [] }),
      answer({
        reasoning: "Type then finish.",
        status: "continue",
        actions: [
          { action_type: "type_text", params: { text: "x" } },
          { action_type: "done", params: {} },
        ],
      }),
    );
    expect(await engine().predict(predictInput())).toMatchObject({
      status: "done",
      actions: [{ action_type: "done", params: {} }],
    });
    expect(await engine().predict(predictInput())).toMatchObject({
      status: "fail",
      actions: [{ action_type: "fail", params: { message: "Login required." } }],
    });
    expect(await engine().predict(predictInput())).toMatchObject({
      status: "done",
      actions: [
        { action_type: "type_text", params: { text: "x" } },
        { action_type: "done", params: {} },
      ],
    });
  });

  it.each([
    ["not JSON", R.chat("I would click the gear icon.")],
    ["wrong shape", R.chat(JSON.stringify({ actions: "click" }))],
    [
      "unknown action",
      answer({ reasoning: "", status: "continue", actions: [{ action_type: "teleport", params: {} }] }),
    ],
    [
      "invalid params",
      answer({ reasoning: "", status: "continue", actions: [{ action_type: "click", params: { x: -50, y: "top" } }] }),
    ],
    [
      "off-screen",
      answer({ reasoning: "", status: "continue", actions: [{ action_type: "click", params: { x: 9000, y: 10 } }] }),
    ],
    [
      "unknown key",
      answer({
        reasoning: "",
        status: "continue",
        actions: [{ action_type: "key_press", params: { keys: ["hyperdrive"] } }],
      }),
    ],
    ["nothing to do", answer({ reasoning: "", status: "continue", actions: [] })],
    ["cut off", R.chat('{"reasoning": "long', { finish_reason: "length" })],
  ])("%s is PREDICTION_FAILED", async (_n, reply) => {
    open.enqueue(reply);
    const err = await rejection(engine().predict(predictInput()));
    expect(err.code).toBe("PREDICTION_FAILED");
    expect(err.extras.provider).toBe("openai-compatible");
  });

  it("the tools filter narrows the schema and refuses excluded actions; max_actions truncates", async () => {
    open.enqueue(
      answer({ reasoning: "", status: "continue", actions: [{ action_type: "scroll", params: { clicks: -3 } }] }),
    );
    const err = await rejection(engine().predict(predictInput({ tools: ["click", "type_text"] })));
    expect(err.message).toMatch(/scroll is not among the allowed tools/);
    const variants = open.requests[0]!.body.response_format.json_schema.schema.properties.actions.items.anyOf;
    expect(variants.map((v: any) => v.properties.action_type.const)).toEqual(["click", "type_text"]);

    open.enqueue(
      answer({
        reasoning: "",
        status: "continue",
        actions: [
          { action_type: "move", params: { x: 1, y: 1 } },
          { action_type: "move", params: { x: 2, y: 2 } },
        ],
      }),
    );
    const out = await engine().predict(predictInput({ maxActions: 1 }));
    expect(out.actions).toEqual([{ action_type: "move", params: { x: 1, y: 1 } }]);
  });

  it("tool mode forces one function; json_object mode asks for JSON only", async () => {
    open.enqueue(
      R.chat(null, {
        tool_calls: [
          { name: "propose_actions", arguments: JSON.stringify({ reasoning: "", status: "done", actions: [] }) },
        ],
      }),
    );
    expect((await engine({ responseFormat: "tool" }).predict(predictInput())).status).toBe("done");
    const req = open.requests[0]!;
    expect(req.body.tool_choice).toEqual({ type: "function", function: { name: "propose_actions" } });
    expect(req.body.tools[0].function.parameters.required).toEqual(["reasoning", "status", "actions"]);
    expect(req.body.response_format).toBeUndefined();

    open.enqueue(answer({ reasoning: "", status: "done", actions: [] }));
    await engine({ responseFormat: "json_object" }).predict(predictInput());
    expect(open.requests[1]!.body.response_format).toEqual({ type: "json_object" });
  });

  it("normalized-1000 coordinates are scaled to pixels", async () => {
    open.enqueue(
      answer({ reasoning: "", status: "continue", actions: [{ action_type: "click", params: { x: 500, y: 250 } }] }),
    );
    const out = await engine({ coordinates: "normalized-1000" }).predict(predictInput());
    expect(out.actions).toEqual([{ action_type: "click", params: { x: 640, y: 200, button: "left", clicks: 1 } }]);
  });

  it("replays the trajectory as earlier JSON answers; only the current screenshot is an image by default", async () => {
    open.enqueue(answer({ reasoning: "", status: "done", actions: [] }));
    const current = solidPng(1280, 800, [9, 9, 9]);
    await engine().predict(
      predictInput({
        screenshot: current,
        trajectory: [
          {
            screenshot: solidPng(1280, 800, [1, 1, 1]),
            reasoning: "open menu",
            actions: [{ action_type: "click", params: { x: 3, y: 4, button: "left", clicks: 1 } }],
          },
          { screenshot: null, actions: [{ action_type: "type_text", params: { text: "abc" } }] },
        ],
      }),
    );
    const msgs = open.requests[0]!.body.messages;
    expect(msgs.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"]);
    expect(JSON.parse(msgs[2].content)).toEqual({
      reasoning: "open menu",
      status: "continue",
      actions: [{ action_type: "click", params: { x: 3, y: 4, button: "left", clicks: 1 } }],
    });
    const images = msgs
      .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
      .filter((p: any) => p.type === "image_url");
    expect(images).toHaveLength(1);
    expect(images[0].image_url.url).toBe(`data:image/png;base64,${current.bytes.toString("base64")}`);
  });

  it("historyImages sends the newest trajectory screenshots too", async () => {
    open.enqueue(answer({ reasoning: "", status: "done", actions: [] }));
    await engine({ historyImages: 1 }).predict(
      predictInput({
        trajectory: [
          { screenshot: solidPng(64, 64, [1, 1, 1]), actions: [] },
          { screenshot: solidPng(64, 64, [2, 2, 2]), actions: [] },
        ],
      }),
    );
    const images = open.requests[0]!.body.messages.flatMap((m: any) =>
      Array.isArray(m.content) ? m.content : [],
    ).filter((p: any) => p.type === "image_url");
    expect(images).toHaveLength(2);
  });
});

describe("ground", () => {
  it("returns point, bbox and confidence from the JSON answer", async () => {
    open.enqueue(
      answer({ found: true, x: 100, y: 200, bbox: { x: 80, y: 190, width: 40, height: 20 }, confidence: 0.8 }),
    );
    const out = await engine().ground({
      screenshot: solidPng(1280, 800),
      description: "the OK button",
      cuaVersion: "v5",
    });
    expect(out).toEqual({
      found: true,
      x: 100,
      y: 200,
      bbox: { x: 80, y: 190, width: 40, height: 20 },
      confidence: 0.8,
      usage: { input_tokens: 900, output_tokens: 40 },
    });
    expect(open.requests[0]!.body.response_format.json_schema.name).toBe("locate_element");
  });

  it("the bbox centre stands in for a missing point; not found is found=false", async () => {
    open.enqueue(
      answer({ found: true, x: null, y: null, bbox: { x: 10, y: 10, width: 20, height: 10 }, confidence: 0.6 }),
      answer({ found: false, x: null, y: null, bbox: null, confidence: 0 }),
    );
    expect(
      await engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" }),
    ).toMatchObject({ found: true, x: 20, y: 15 });
    expect(
      await engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" }),
    ).toMatchObject({ found: false, x: null, y: null, bbox: null });
  });

  it("malformed or off-screen answers are PREDICTION_FAILED (an engine failure, 502)", async () => {
    open.enqueue(R.chat("the button is at the top"), answer({ found: true, x: 5000, y: 1, bbox: null, confidence: 1 }));
    for (let i = 0; i < 2; i++) {
      expect(
        (await rejection(engine().ground({ screenshot: solidPng(1280, 800), description: "x", cuaVersion: "v5" })))
          .code,
      ).toBe("PREDICTION_FAILED");
    }
  });
});

describe("errors", () => {
  it.each([
    ["401", R.error(401, "invalid_request_error", "invalid_api_key", "bad key"), "UPSTREAM_UNAVAILABLE"],
    ["429", R.rateLimited(), "UPSTREAM_UNAVAILABLE"],
    ["500", R.serverError(500), "UPSTREAM_UNAVAILABLE"],
    [
      "400",
      R.error(400, "invalid_request_error", null, "response_format json_schema is not supported"),
      "PREDICTION_FAILED",
    ],
  ] as const)("%s -> %s (operator-configured upstream)", async (_n, reply, code) => {
    open.enqueue(reply);
    expect((await rejection(engine().predict(predictInput()))).code).toBe(code);
  });

  it("a BYOK key rejected by the upstream is LLM_KEY_INVALID", async () => {
    const e = createOpenAICompatibleEngine({
      baseURL: `${keyed.url}/v1`,
      model: "m",
      apiKey: "wrong",
      keySource: "byok",
      maxRetries: 0,
    });
    expect((await rejection(e.predict(predictInput()))).code).toBe("LLM_KEY_INVALID");
  });

  it("timeout is UPSTREAM_TIMEOUT", async () => {
    open.enqueue(R.delay(2_000, R.chat("{}")));
    expect((await rejection(engine({ timeoutMs: 300 }).predict(predictInput()))).code).toBe("UPSTREAM_TIMEOUT");
  });
});

describe("pure helpers", () => {
  it.each([
    ['{"a": 1}', { a: 1 }],
    ['```json\n{"a": "}"}\n```', { a: "}" }],
    ['answer: {"a": {"b": [1, {"c": "\\"}"}]}} trailing', { a: { b: [1, { c: '"}' }] } }],
  ])("extractJsonObject(%j)", (text, want) => {
    expect(extractJsonObject(text)).toEqual(want);
  });

  it("extractJsonObject rejects text without an object", () => {
    expect(() => extractJsonObject("no json here")).toThrow();
    expect(() => extractJsonObject('{"open": ')).toThrow();
  });

  it("predictAnswerSchema allows no actions when every tool is filtered out", () => {
    expect((predictAnswerSchema([], 3).properties as any).actions).toEqual({ type: "array", maxItems: 0 });
  });
});
