import { ActionSchema, validateEngineActions } from "@cua/base/actions/action";
import { CoreError } from "@cua/base/errors";
import { makePng } from "@cua/base/images/screenshot";
import { describe, expect, it } from "vitest";
import { SANDBOX_MODEL_ID } from "./models.ts";
import { createSandboxEngine, planSandboxActions, sandboxPoint } from "./sandbox.ts";
import type { DecodedImage, PredictInput } from "./types.ts";

// DECISIONS "Engines": test keys use the deterministic sandbox engine (same input, same output, no
// network). The instruction shapes it reads are documented in the header of sandbox.ts.

const image = (width = 1280, height = 720, seed = 0): DecodedImage => ({
  bytes: makePng(4, 4, (x, y) => [x * 10 + seed, y * 10, 0, 255]),
  mime: "image/png",
  width,
  height,
});
const screen = { width: 1280, height: 720 };

const input = (instruction: string, over: Partial<PredictInput> = {}): PredictInput => ({
  screenshot: image(),
  instruction,
  cuaVersion: "v5",
  maxActions: 10,
  trajectory: [],
  ...over,
});

const click = (x: number, y: number, extra: Record<string, unknown> = {}) => ({
  action_type: "click",
  params: { x, y, button: "left", clicks: 1, ...extra },
});

describe("sandbox predict: imperative instructions (DECISIONS Engines)", () => {
  it.each<[string, unknown[]]>([
    ["click 100,200", [click(100, 200)]],
    ["click at 100 200", [click(100, 200)]],
    ["Click (100, 200)", [click(100, 200)]],
    ["double click at 5,6", [click(5, 6, { clicks: 2 })]],
    ["double-click 5 6", [click(5, 6, { clicks: 2 })]],
    ["triple click 5,6", [click(5, 6, { clicks: 3 })]],
    ["right click 5,6", [click(5, 6, { button: "right" })]],
    ["middle-click on 5, 6", [click(5, 6, { button: "middle" })]],
    ["move to 10,20", [{ action_type: "move", params: { x: 10, y: 20 } }]],
    ["move the mouse to 10 20", [{ action_type: "move", params: { x: 10, y: 20 } }]],
    ["hover 10,20", [{ action_type: "move", params: { x: 10, y: 20 } }]],
    ["drag 10,20 to 30,40", [{ action_type: "drag", params: { x1: 10, y1: 20, x2: 30, y2: 40, button: "left" } }]],
    ["drag from 10 20 to 30 40", [{ action_type: "drag", params: { x1: 10, y1: 20, x2: 30, y2: 40, button: "left" } }]],
    ["type 'abc'", [{ action_type: "type_text", params: { text: "abc" } }]],
    ['type "Hello, World; then more"', [{ action_type: "type_text", params: { text: "Hello, World; then more" } }]],
    ["type hello world", [{ action_type: "type_text", params: { text: "hello world" } }]],
    ["write 'x'", [{ action_type: "type_text", params: { text: "x" } }]],
    ["press enter", [{ action_type: "key_press", params: { keys: ["enter"] } }]],
    ["press Return", [{ action_type: "key_press", params: { keys: ["enter"] } }]],
    ["press page down", [{ action_type: "key_press", params: { keys: ["pagedown"] } }]],
    ["press tab 3 times", [{ action_type: "key_press", params: { keys: ["tab", "tab", "tab"] } }]],
    ["press tab enter", [{ action_type: "key_press", params: { keys: ["tab", "enter"] } }]],
    ["press ctrl+s", [{ action_type: "key_combo", params: { keys: ["ctrl", "s"] } }]],
    ["press Ctrl+Shift+T", [{ action_type: "key_combo", params: { keys: ["ctrl", "shift", "T"] } }]],
    ["hotkey cmd+c", [{ action_type: "key_combo", params: { keys: ["meta", "c"] } }]],
    ["scroll down 3", [{ action_type: "scroll", params: { clicks: -3, direction: "vertical" } }]],
    ["scroll up", [{ action_type: "scroll", params: { clicks: 3, direction: "vertical" } }]],
    ["scroll up 5 times", [{ action_type: "scroll", params: { clicks: 5, direction: "vertical" } }]],
    ["scroll left 2", [{ action_type: "scroll", params: { clicks: -2, direction: "horizontal" } }]],
    [
      "scroll right 1 at 10,20",
      [{ action_type: "scroll", params: { clicks: 1, direction: "horizontal", x: 10, y: 20 } }],
    ],
    ["wait 2", [{ action_type: "wait", params: { seconds: 2 } }]],
    ["wait 2.5 seconds", [{ action_type: "wait", params: { seconds: 2.5 } }]],
    ["wait", [{ action_type: "wait", params: { seconds: 1 } }]],
    ["sleep 600", [{ action_type: "wait", params: { seconds: 60 } }]],
    ["done", [{ action_type: "done", params: {} }]],
    ["Finished.", [{ action_type: "done", params: {} }]],
  ])("%s", async (instruction, expected) => {
    const out = await createSandboxEngine().predict(input(instruction));
    expect(out.actions).toEqual(expected);
    expect(out.model).toBe(SANDBOX_MODEL_ID);
    expect(validateEngineActions(out.actions, screen)).toEqual(out.actions);
  });

  it.each<[string, string[], "continue" | "done" | "fail"]>([
    ["click 1,1", ["click"], "continue"],
    ["click 1,1 then done", ["click", "done"], "done"],
    ["type 'abc'; press enter; done", ["type_text", "key_press", "done"], "done"],
    ["click 1,1\nwait 1\npress enter", ["click", "wait", "key_press"], "continue"],
    ["click 1,1, then type 'x' and then press enter", ["click", "type_text", "key_press"], "continue"],
    ["done then click 1,1", ["done"], "done"],
    ["This task is impossible", ["fail"], "fail"],
    ["click 1,1 and fail", ["fail"], "fail"],
    ["type 'how to fail' then done", ["type_text", "done"], "done"],
    ["click 5000,10", ["fail"], "fail"],
    ["click 1,1 then click 1280,0", ["click", "fail"], "fail"],
  ])("steps and status: %s", async (instruction, types, status) => {
    const out = await createSandboxEngine().predict(input(instruction));
    expect(out.actions.map((a) => a.action_type)).toEqual(types);
    expect(out.status).toBe(status);
  });

  it("out-of-image coordinates give a fail naming them", async () => {
    const out = await createSandboxEngine().predict(input("click 5000,10"));
    expect(out.actions[0]).toEqual({
      action_type: "fail",
      params: { message: expect.stringContaining("outside the 1280x720") },
    });
  });

  it("type 'text' into <target> clicks the target first", async () => {
    const out = await createSandboxEngine().predict(input("type 'cats' into Search"));
    const p = sandboxPoint("Search", screen);
    expect(out.actions).toEqual([click(p.x, p.y), { action_type: "type_text", params: { text: "cats" } }]);
  });

  it.each(["Open the settings page", "click the Save button", "press the big red button", ""])(
    "anything else is a deterministic click inside the image: %j",
    async (instruction) => {
      const engine = createSandboxEngine();
      const a = await engine.predict(input(instruction));
      const b = await createSandboxEngine().predict(input(instruction));
      expect(a).toEqual(b);
      expect(a.actions).toHaveLength(1);
      expect(a.actions[0]!.action_type).toBe("click");
      expect(validateEngineActions(a.actions, screen)).toHaveLength(1);
      expect(a.status).toBe("continue");
    },
  );

  it("different instructions and sizes give different points", () => {
    const points = new Set(
      ["a", "b", "c", "d", "e"].flatMap((t) =>
        [screen, { width: 800, height: 600 }].map((s) => JSON.stringify(sandboxPoint(t, s))),
      ),
    );
    expect(points.size).toBe(10);
  });

  it("hash points stay inside tiny images", () => {
    for (const t of ["x", "y", "z", "long text here"]) {
      const p = sandboxPoint(t, { width: 1, height: 2 });
      expect(p.x).toBe(0);
      expect(p.y).toBeLessThan(2);
    }
  });
});

describe("sandbox predict: maxActions and tools (DECISIONS Precise answers: filterable tools)", () => {
  it("keeps at most maxActions actions", async () => {
    const out = await createSandboxEngine().predict(input("click 1,1; click 2,2; click 3,3; done", { maxActions: 2 }));
    expect(out.actions.map((a) => a.action_type)).toEqual(["click", "click"]);
    expect(out.status).toBe("continue");
  });

  it("drops actions the tools filter excludes", async () => {
    const out = await createSandboxEngine().predict(
      input("click 1,1 then type 'a' then done", { tools: ["type_text"] }),
    );
    expect(out.actions.map((a) => a.action_type)).toEqual(["type_text", "done"]);
  });

  it.each<[string[], string]>([
    [["type_text"], "click 1,1"],
    [[], "press enter"],
  ])("answers fail TOOL_NOT_ALLOWED when nothing is left (tools %j)", async (tools, instruction) => {
    const out = await createSandboxEngine().predict(input(instruction, { tools }));
    expect(out.actions).toEqual([
      { action_type: "fail", params: { code: "TOOL_NOT_ALLOWED", message: expect.any(String) } },
    ]);
    expect(out.status).toBe("fail");
  });

  it("done and fail pass any tools filter", async () => {
    expect((await createSandboxEngine().predict(input("done", { tools: [] }))).actions).toEqual([
      { action_type: "done", params: {} },
    ]);
  });
});

describe("sandbox predict: determinism, usage and directives", () => {
  it("same input, same output", async () => {
    const i = input("click the OK button", { systemPrompt: "be careful", instructions: "x" });
    expect(await createSandboxEngine().predict(i)).toEqual(await createSandboxEngine().predict(i));
  });

  it.each<[Partial<PredictInput>, string, number]>([
    [{}, "abcd", 85 + 1],
    [{ systemPrompt: "12345678", instructions: "1234" }, "abcd", 85 + 4],
    [
      {
        trajectory: [
          { screenshot: image(), actions: [] },
          { screenshot: null, actions: [] },
        ],
      },
      "abcd",
      170 + 1,
    ],
  ])("usage tokens derive from input sizes (%#)", async (over, instruction, inputTokens) => {
    const out = await createSandboxEngine().predict(input(instruction, over));
    expect(out.usage.input_tokens).toBe(inputTokens);
    expect(out.usage.output_tokens).toBe(16 + 12 * out.actions.length);
  });

  it("run directives are ignored (#fail is not the word fail)", async () => {
    const out = await createSandboxEngine().predict(input("#steps=3 #fail #human click 4,5"));
    expect(out.actions).toEqual([click(4, 5)]);
  });

  it("#error fails with 502 PREDICTION_FAILED", async () => {
    await expect(createSandboxEngine().predict(input("click 1,1 #error"))).rejects.toMatchObject({
      code: "PREDICTION_FAILED",
      status: 502,
    });
  });

  it("#slow=MS waits before answering", async () => {
    const t0 = Date.now();
    await createSandboxEngine().predict(input("#slow=120 done"));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
  });

  it("an abort signal cuts #slow short", async () => {
    const ac = new AbortController();
    const p = createSandboxEngine().predict(input("#slow=30000 done", { signal: ac.signal }));
    setTimeout(() => ac.abort(new Error("deadline")), 20);
    await expect(p).rejects.toThrow("deadline");
  });

  it("an aborted signal rejects at once", async () => {
    const ac = new AbortController();
    ac.abort(new Error("gone"));
    await expect(createSandboxEngine().predict(input("done", { signal: ac.signal }))).rejects.toThrow("gone");
  });

  it("every planned action passes the action schema", () => {
    for (const t of [
      "click 1,1",
      "press ctrl+alt+delete",
      "scroll down 200",
      "press a 500 times",
      "type ''",
      "wait 0",
    ]) {
      for (const a of planSandboxActions(t, screen).actions) expect(ActionSchema.parse(a)).toEqual(a);
    }
  });
});

describe("sandbox ground", () => {
  const g = (description: string, img = image()) =>
    createSandboxEngine().ground({ screenshot: img, description, cuaVersion: "v5" });

  it("is deterministic and inside the image", async () => {
    const a = await g("the Save button");
    expect(a).toEqual(await g("the Save button"));
    expect(a.found).toBe(true);
    expect(a.x).toBeGreaterThanOrEqual(0);
    expect(a.x).toBeLessThan(1280);
    expect(a.y).toBeLessThan(720);
    const b = a.bbox!;
    expect(b.x).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width).toBeLessThanOrEqual(1280);
    expect(b.y + b.height).toBeLessThanOrEqual(720);
    expect(a.x!).toBeGreaterThanOrEqual(b.x);
    expect(a.x!).toBeLessThan(b.x + b.width);
    expect(a.confidence).toBeGreaterThanOrEqual(0.8);
    expect(a.confidence).toBeLessThan(1);
    expect(a.usage.input_tokens).toBe(85 + Math.ceil("the Save button".length / 4));
  });

  it("uses x,y named in the description", async () => {
    const a = await g("the icon at 300,400");
    expect([a.x, a.y]).toEqual([300, 400]);
  });

  it.each(["a nonexistent widget", "the Non-existent menu", "a button that does not exist", "something not on screen"])(
    "not found: %s",
    async (d) => {
      expect(await g(d)).toMatchObject({ found: false, x: null, y: null, bbox: null, confidence: 0 });
    },
  );

  it("works on a 1x1 image", async () => {
    const a = await g("anything", image(1, 1));
    expect(a).toMatchObject({ found: true, x: 0, y: 0, bbox: { x: 0, y: 0, width: 1, height: 1 } });
  });

  it("#error fails with PREDICTION_FAILED (GROUNDING_FAILED means nothing matches)", async () => {
    await expect(g("x #error")).rejects.toBeInstanceOf(CoreError);
    await expect(g("x #error")).rejects.toMatchObject({ code: "PREDICTION_FAILED" });
  });
});

describe("sandbox ocr", () => {
  const ocr = (img: DecodedImage) => createSandboxEngine().ocr!(img);

  it("returns a small deterministic result naming the size", async () => {
    const a = await ocr(image());
    expect(a).toEqual(await ocr(image()));
    expect(a.text).toMatch(/^Sandbox OCR 1280x720 [0-9a-f]{8}$/);
    expect(a.words.map((w) => w.text)).toEqual(a.text.split(" "));
    expect(a.lines).toEqual([{ text: a.text, bbox: expect.any(Object) }]);
  });

  it("depends on the image bytes", async () => {
    expect((await ocr(image(1280, 720, 1))).text).not.toBe((await ocr(image(1280, 720, 2))).text);
  });

  it("keeps boxes inside tiny images", async () => {
    const a = await ocr(image(20, 5));
    for (const w of a.words) {
      expect(w.bbox.x + w.bbox.width).toBeLessThanOrEqual(20);
      expect(w.bbox.y + w.bbox.height).toBeLessThanOrEqual(5);
      expect(w.bbox.width).toBeGreaterThan(0);
    }
  });
});
