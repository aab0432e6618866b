// The instruction interpreter is pure logic: these tests ground against stubbed OCR runs (no image).

import type { Action } from "@cua/base/actions/action";
import { validateEngineActions } from "@cua/base/actions/action";
import { describe, expect, it } from "vitest";
import { groundInContext, groundingContext } from "../../src/local/ground.ts";
import {
  type Plan,
  type PlanOptions,
  parseInstruction,
  parseStep,
  planActions,
  progressMarker,
  resumePoint,
  splitSteps,
} from "../../src/local/interpreter.ts";
import { contains, run } from "./helpers.ts";

const RUNS = {
  save: run("Save", 100, 100),
  cancel: run("Cancel", 200, 100),
  search: run("Search", 100, 200),
  email: run("Email address", 100, 300),
  remember: run("Remember me", 130, 400),
  pricing: run("Pricing", 400, 20),
  results: run("Results", 500, 500),
  itemA: run("Item A", 100, 600),
  trash: run("Trash", 600, 600),
  sending: run("Sending...", 900, 650),
};
const THANKS = run("Thank you for your order!", 300, 680);

function screen(extra: ReturnType<typeof run>[] = []) {
  const ctx = groundingContext({ runs: [...Object.values(RUNS), ...extra], width: 1280, height: 720 }, null);
  return (d: string) => groundInContext(ctx, d);
}

function plan(instruction: string, opts: Partial<PlanOptions> = {}, extra: ReturnType<typeof run>[] = []): Plan {
  const p = planActions(parseInstruction(instruction), screen(extra), {
    maxActions: 10,
    width: 1280,
    height: 720,
    ...opts,
  });
  // whatever the interpreter emits must be valid SPEC actions inside the screen
  validateEngineActions(p.actions, { width: 1280, height: 720 });
  return p;
}

function at(a: Action | undefined): { x: number; y: number } {
  if (!a || !("x" in a.params)) throw new Error(`no point in ${JSON.stringify(a)}`);
  return { x: Number(a.params.x), y: Number(a.params.y) };
}

describe("splitSteps", () => {
  it.each([
    ["click Save then click Cancel", ["click Save", "click Cancel"]],
    ["click Save, then type 'a, then b' into Search", ["click Save", "type 'a, then b' into Search"]],
    ["click Save; press enter\nwait 2 seconds", ["click Save", "press enter", "wait 2 seconds"]],
    ["type 'hello' and press Enter", ["type 'hello'", "press Enter"]],
    ["1. click Save\n2. click Cancel.", ["click Save", "click Cancel"]],
    ["if the text 'Thank you' is visible, done", ["if the text 'Thank you' is visible, done"]],
    ["click Salt and Pepper", ["click Salt and Pepper"]],
  ])("%s", (instruction, expected) => {
    expect(splitSteps(instruction)).toEqual(expected);
  });
});

describe("parseStep", () => {
  it.each([
    ["click the Save button", { kind: "click", target: "the Save button", button: "left", clicks: 1, holdKeys: [] }],
    ["double-click Item A", { kind: "click", target: "Item A", button: "left", clicks: 2, holdKeys: [] }],
    ["right click on Trash", { kind: "click", target: "Trash", button: "right", clicks: 1, holdKeys: [] }],
    ["ctrl+click Item A", { kind: "click", target: "Item A", button: "left", clicks: 1, holdKeys: ["ctrl"] }],
    ["hold shift and click Save", { kind: "click", target: "Save", button: "left", clicks: 1, holdKeys: ["shift"] }],
    ["click Save while holding ctrl", { kind: "click", target: "Save", button: "left", clicks: 1, holdKeys: ["ctrl"] }],
    ["press ctrl+s", { kind: "keys", keys: ["ctrl", "s"], combo: true, repeat: 1 }],
    ["press Ctrl + Shift + T", { kind: "keys", keys: ["ctrl", "shift", "T"], combo: true, repeat: 1 }],
    ["press Enter twice", { kind: "keys", keys: ["enter"], combo: false, repeat: 2 }],
    ["press the Tab key 3 times", { kind: "keys", keys: ["tab"], combo: false, repeat: 3 }],
    ["press down arrow", { kind: "keys", keys: ["down"], combo: false, repeat: 1 }],
    ["press up, up, down", { kind: "keys", keys: ["up", "up", "down"], combo: false, repeat: 1 }],
    ["paste", { kind: "keys", keys: ["ctrl", "v"], combo: true, repeat: 1 }],
    ["Escape", { kind: "keys", keys: ["escape"], combo: false, repeat: 1 }],
    ["type 'abc' into Search", { kind: "type", text: "abc", target: "Search" }],
    ['type "hello world"', { kind: "type", text: "hello world", target: null }],
    ["type hello world", { kind: "type", text: "hello world", target: null }],
    [
      "type ada@example.com into the Email address field",
      { kind: "type", text: "ada@example.com", target: "the Email address field" },
    ],
    ["fill Email address with 'ada@example.com'", { kind: "type", text: "ada@example.com", target: "Email address" }],
    ["scroll down 3", { kind: "scroll", direction: "down", amount: 3, target: null }],
    ["scroll up", { kind: "scroll", direction: "up", amount: 3, target: null }],
    ["scroll right 2 over Results", { kind: "scroll", direction: "right", amount: 2, target: "Results" }],
    ["drag Item A to Trash", { kind: "drag", from: "Item A", to: "Trash" }],
    ["drag from Item A onto the Trash", { kind: "drag", from: "Item A", to: "the Trash" }],
    ["wait 2 seconds", { kind: "wait", seconds: 2 }],
    ["wait 500 ms", { kind: "wait", seconds: 0.5 }],
    ["wait", { kind: "wait", seconds: 1 }],
    ["hover over Pricing", { kind: "move", target: "Pricing" }],
    ["go to example.com/pricing", { kind: "open-url", url: "example.com/pricing" }],
    ["done", { kind: "done" }],
    ["fail: the site is down", { kind: "fail", message: "the site is down" }],
    [
      "if the text 'Thank you' is visible, done",
      { kind: "if", text: "Thank you", negate: false, action: { kind: "done" } },
    ],
    ["done when 'Thank you' appears", { kind: "if", text: "Thank you", negate: false, action: { kind: "done" } }],
    [
      "fail if 'Access denied' is visible",
      {
        kind: "if",
        text: "Access denied",
        negate: false,
        action: { kind: "fail", message: "the instruction says to fail" },
      },
    ],
    ["wait until 'Sending...' disappears", { kind: "wait-until", text: "Sending...", negate: true }],
    ["Submit", { kind: "click", target: "Submit", button: "left", clicks: 1, holdKeys: [] }],
    ["juggle the spreadsheet", { kind: "unknown", text: "juggle the spreadsheet", why: "no supported action verb" }],
  ])("%s", (step, expected) => {
    expect(parseStep(step)).toEqual([expected]);
  });

  it("select X from a dropdown opens the dropdown, then picks the entry", () => {
    expect(parseStep("select Canada from the Country dropdown")).toEqual([
      { kind: "click", target: "Country dropdown", button: "left", clicks: 1, holdKeys: [] },
      { kind: "click", target: "Canada", button: "left", clicks: 1, holdKeys: [] },
    ]);
  });
});

describe("planActions on a stubbed screen", () => {
  it("clicks the named element at its centre, in the image's space", () => {
    const p = plan("click the Save button");
    expect(p.status).toBe("continue");
    expect(p.actions).toHaveLength(1);
    expect(p.actions[0]).toMatchObject({ action_type: "click", params: { button: "left", clicks: 1 } });
    expect(contains(RUNS.save.bbox, at(p.actions[0]))).toBe(true);
  });

  it("double-click, right-click and modifier clicks carry clicks, button and hold_keys", () => {
    const p = plan("double-click Item A, then right-click Trash, then ctrl+click Pricing");
    expect(p.actions.map((a) => a.action_type)).toEqual(["click", "click", "click"]);
    expect(p.actions[0]?.params).toMatchObject({ clicks: 2, button: "left" });
    expect(contains(RUNS.itemA.bbox, at(p.actions[0]))).toBe(true);
    expect(p.actions[1]?.params).toMatchObject({ clicks: 1, button: "right" });
    expect(contains(RUNS.trash.bbox, at(p.actions[1]))).toBe(true);
    expect(p.actions[2]?.params).toMatchObject({ hold_keys: ["ctrl"] });
  });

  it("types into a named field by clicking it first", () => {
    const p = plan("type 'shoes' into Search");
    expect(p.actions.map((a) => a.action_type)).toEqual(["click", "type_text"]);
    expect(contains(RUNS.search.bbox, at(p.actions[0]))).toBe(true);
    expect(p.actions[1]).toEqual({ action_type: "type_text", params: { text: "shoes" } });
  });

  it("types at the focus, presses keys and chords, without looking at the screen", () => {
    const p = plan("type 'hello'; press Enter twice; press ctrl+s");
    expect(p.actions).toEqual([
      { action_type: "type_text", params: { text: "hello" } },
      { action_type: "key_press", params: { keys: ["enter", "enter"] } },
      { action_type: "key_combo", params: { keys: ["ctrl", "s"] } },
    ]);
    expect(p.groundings).toBe(0);
  });

  it("scrolls with SPEC signs, optionally anchored over an element", () => {
    expect(plan("scroll down 3").actions).toEqual([
      { action_type: "scroll", params: { clicks: -3, direction: "vertical" } },
    ]);
    expect(plan("scroll up 2").actions).toEqual([
      { action_type: "scroll", params: { clicks: 2, direction: "vertical" } },
    ]);
    expect(plan("scroll left 4").actions).toEqual([
      { action_type: "scroll", params: { clicks: -4, direction: "horizontal" } },
    ]);
    const over = plan("scroll right 2 over Results");
    expect(over.actions[0]).toMatchObject({ action_type: "scroll", params: { clicks: 2, direction: "horizontal" } });
    expect(contains(RUNS.results.bbox, at(over.actions[0]))).toBe(true);
  });

  it("drags from one element to another", () => {
    const p = plan("drag Item A to Trash");
    const a = p.actions[0];
    expect(a?.action_type).toBe("drag");
    if (a?.action_type !== "drag") throw new Error("not a drag");
    expect(contains(RUNS.itemA.bbox, { x: a.params.x1, y: a.params.y1 })).toBe(true);
    expect(contains(RUNS.trash.bbox, { x: a.params.x2, y: a.params.y2 })).toBe(true);
  });

  it("waits", () => {
    expect(plan("wait 2 seconds").actions).toEqual([{ action_type: "wait", params: { seconds: 2 } }]);
  });

  it("answers fail, never a made-up click, when the element is not on the screen", () => {
    const p = plan("click the Delete account button");
    expect(p.status).toBe("fail");
    expect(p.actions).toHaveLength(1);
    expect(p.actions[0]).toMatchObject({ action_type: "fail", params: { code: "ELEMENT_NOT_FOUND" } });
    expect(JSON.stringify(p.actions[0])).toContain("Delete account");
  });

  it("stops before a later step whose element is not visible yet, with status continue", () => {
    const p = plan("click Save, then click OK");
    expect(p.status).toBe("continue");
    expect(p.actions.map((a) => a.action_type)).toEqual(["click"]);
    expect(p.next).toEqual({ step: 1, action: 0 });
    expect(p.reasoning).toContain("OK");
  });

  it("fails an instruction it cannot interpret instead of guessing", () => {
    const p = plan("click Save, then juggle the spreadsheet");
    expect(p.status).toBe("fail");
    expect(p.actions[0]).toMatchObject({ action_type: "fail", params: { code: "UNSUPPORTED_INSTRUCTION" } });
  });

  it("is done when the goal text is visible, and waits for it otherwise", () => {
    const seen = plan("click Save, then done when 'Thank you' appears", {}, [THANKS]);
    expect(seen.status).toBe("done");
    expect(seen.actions).toEqual([{ action_type: "done", params: {} }]);
    const notYet = plan("if the text 'Thank you' is visible, done");
    expect(notYet.status).toBe("continue");
    expect(notYet.actions).toEqual([{ action_type: "wait", params: { seconds: 1 } }]);
  });

  it("fails when the instruction's failure condition is visible", () => {
    const p = plan("fail if 'Sending...' is visible", {});
    expect(p.status).toBe("fail");
    expect(p.actions[0]).toMatchObject({ action_type: "fail", params: { code: "GOAL_FAILED" } });
  });

  it("runs a guarded step only when its condition holds", () => {
    expect(plan("if 'Pricing' is visible, click Pricing").actions.map((a) => a.action_type)).toEqual(["click"]);
    const skipped = plan("if 'Careers' is visible, click Careers; press tab");
    expect(skipped.actions).toEqual([{ action_type: "key_press", params: { keys: ["tab"] } }]);
  });

  it("waits until a text disappears", () => {
    const p = plan("wait until 'Sending...' disappears, then click Save");
    expect(p.actions).toEqual([{ action_type: "wait", params: { seconds: 1 } }]);
    expect(p.status).toBe("continue");
  });

  it("respects max_actions and reports where to resume", () => {
    const p = plan("click Save, then type 'x' into Search, then press enter", { maxActions: 2 });
    expect(p.actions.map((a) => a.action_type)).toEqual(["click", "click"]);
    expect(p.status).toBe("continue");
    expect(p.next).toEqual({ step: 1, action: 1 });
    const rest = plan("click Save, then type 'x' into Search, then press enter", { maxActions: 10, resume: p.next });
    expect(rest.actions).toEqual([
      { action_type: "type_text", params: { text: "x" } },
      { action_type: "key_press", params: { keys: ["enter"] } },
    ]);
    const end = plan("click Save, then type 'x' into Search, then press enter", { resume: rest.next });
    expect(end).toMatchObject({ status: "done", actions: [{ action_type: "done", params: {} }] });
  });

  it("respects the tools filter", () => {
    const p = plan("scroll down 3", { tools: ["click", "type_text"] });
    expect(p.status).toBe("fail");
    expect(p.actions[0]).toMatchObject({ action_type: "fail", params: { code: "TOOL_NOT_ALLOWED" } });
    expect(plan("click Save", { tools: ["click"] }).status).toBe("continue");
  });

  it("opens an address through the address bar", () => {
    expect(plan("go to https://example.com").actions).toEqual([
      { action_type: "key_combo", params: { keys: ["ctrl", "l"] } },
      { action_type: "type_text", params: { text: "https://example.com" } },
      { action_type: "key_press", params: { keys: ["enter"] } },
    ]);
  });
});

describe("progress markers", () => {
  it("resume only the same instruction from the newest trajectory step", () => {
    const marker = progressMarker("click Save then click OK", { step: 1, action: 0 }, 2);
    expect(resumePoint("click Save then click OK", ["older", `Clicked. ${marker}`], 2)).toEqual({ step: 1, action: 0 });
    expect(resumePoint("click Cancel then click OK", [`Clicked. ${marker}`], 2)).toBeNull();
    expect(resumePoint("click Save then click OK", [`Clicked. ${marker}`, "something else"], 2)).toBeNull();
  });
});
