// Table-driven tests of the pure Anthropic <-> Action mapping.

import type { Action } from "@cua/base/actions/action";
import { describe, expect, it } from "vitest";
import {
  type AnthropicComputerCall,
  fromAnthropicCalls,
  keyActions,
  toAnthropicCalls,
} from "../../src/providers/anthropic-actions.ts";
import { finalizeBatch, type MappedStep } from "../../src/providers/batch.ts";

const identity = { toCaller: (p: { x: number; y: number }) => p };
const double = { toCaller: (p: { x: number; y: number }) => ({ x: p.x * 2, y: p.y * 2 }) };

function one(call: AnthropicComputerCall, ctx: Parameters<typeof fromAnthropicCalls>[1] = identity): MappedStep {
  const steps = fromAnthropicCalls([call], ctx);
  expect(steps).toHaveLength(1);
  return steps[0]!;
}

describe("Anthropic -> ours", () => {
  const CASES: [string, AnthropicComputerCall, unknown][] = [
    [
      "left_click",
      { action: "left_click", input: { coordinate: [10, 20] } },
      [{ action_type: "click", params: { x: 10, y: 20, button: "left", clicks: 1 } }],
    ],
    [
      "left_click with modifiers",
      { action: "left_click", input: { coordinate: [10, 20], text: "ctrl+shift" } },
      [{ action_type: "click", params: { x: 10, y: 20, button: "left", clicks: 1, hold_keys: ["ctrl", "shift"] } }],
    ],
    [
      "double_click",
      { action: "double_click", input: { coordinate: [1, 2] } },
      [{ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 2 } }],
    ],
    [
      "triple_click",
      { action: "triple_click", input: { coordinate: [1, 2] } },
      [{ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 3 } }],
    ],
    [
      "right_click",
      { action: "right_click", input: { coordinate: [1, 2] } },
      [{ action_type: "click", params: { x: 1, y: 2, button: "right", clicks: 1 } }],
    ],
    [
      "middle_click",
      { action: "middle_click", input: { coordinate: [1, 2] } },
      [{ action_type: "click", params: { x: 1, y: 2, button: "middle", clicks: 1 } }],
    ],
    [
      "mouse_move",
      { action: "mouse_move", input: { coordinate: [5, 6] } },
      [{ action_type: "move", params: { x: 5, y: 6 } }],
    ],
    [
      "left_click_drag",
      { action: "left_click_drag", input: { start_coordinate: [1, 2], coordinate: [3, 4] } },
      [{ action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4, button: "left" } }],
    ],
    [
      "type",
      { action: "type", input: { text: "Hello\nWorld" } },
      [{ action_type: "type_text", params: { text: "Hello\nWorld" } }],
    ],
    [
      "key Return",
      { action: "key", input: { text: "Return" } },
      [{ action_type: "key_press", params: { keys: ["enter"] } }],
    ],
    [
      "key Page_Down",
      { action: "key", input: { text: "Page_Down" } },
      [{ action_type: "key_press", params: { keys: ["pagedown"] } }],
    ],
    [
      "key ctrl+s",
      { action: "key", input: { text: "ctrl+s" } },
      [{ action_type: "key_combo", params: { keys: ["ctrl", "s"] } }],
    ],
    [
      "key super+l",
      { action: "key", input: { text: "super+l" } },
      [{ action_type: "key_combo", params: { keys: ["meta", "l"] } }],
    ],
    [
      "key ctrl+plus",
      { action: "key", input: { text: "ctrl+plus" } },
      [{ action_type: "key_combo", params: { keys: ["ctrl", "+"] } }],
    ],
    [
      "key KP_Enter",
      { action: "key", input: { text: "KP_Enter" } },
      [{ action_type: "key_press", params: { keys: ["enter"] } }],
    ],
    [
      "key repeat",
      { action: "key", input: { text: "Down", repeat: 3 } },
      [{ action_type: "key_press", params: { keys: ["down", "down", "down"] } }],
    ],
    [
      "key sequence",
      { action: "key", input: { text: "ctrl+a BackSpace Tab" } },
      [
        { action_type: "key_combo", params: { keys: ["ctrl", "a"] } },
        { action_type: "key_press", params: { keys: ["backspace", "tab"] } },
      ],
    ],
    [
      "scroll down",
      { action: "scroll", input: { coordinate: [9, 9], scroll_direction: "down", scroll_amount: 5 } },
      [{ action_type: "scroll", params: { clicks: -5, direction: "vertical", x: 9, y: 9 } }],
    ],
    [
      "scroll up",
      { action: "scroll", input: { coordinate: [9, 9], scroll_direction: "up", scroll_amount: 2 } },
      [{ action_type: "scroll", params: { clicks: 2, direction: "vertical", x: 9, y: 9 } }],
    ],
    [
      "scroll left",
      { action: "scroll", input: { coordinate: [9, 9], scroll_direction: "left", scroll_amount: 1 } },
      [{ action_type: "scroll", params: { clicks: -1, direction: "horizontal", x: 9, y: 9 } }],
    ],
    [
      "scroll right",
      { action: "scroll", input: { coordinate: [9, 9], scroll_direction: "right", scroll_amount: 4 } },
      [{ action_type: "scroll", params: { clicks: 4, direction: "horizontal", x: 9, y: 9 } }],
    ],
    ["wait", { action: "wait", input: { duration: 1.5 } }, [{ action_type: "wait", params: { seconds: 1.5 } }]],
    [
      "wait longer than 60 s is shortened",
      { action: "wait", input: { duration: 90 } },
      [{ action_type: "wait", params: { seconds: 60 } }],
    ],
  ];
  it.each(CASES)("%s", (_name, call, want) => {
    const step = one(call);
    expect(step.kind).toBe("actions");
    expect(step.kind === "actions" && step.actions).toEqual(want);
  });

  it.each(["screenshot", "zoom", "cursor_position"])("%s is an observation", (action) => {
    expect(one({ action, input: {} }).kind).toBe("observe");
  });

  it.each([
    ["hold_key", { action: "hold_key", input: { text: "shift", duration: 1 } }],
    ["unknown action", { action: "teleport", input: {} }],
    ["bad coordinate", { action: "left_click", input: { coordinate: [1] } }],
    ["string coordinate", { action: "left_click", input: { coordinate: "1,2" } }],
    ["click without coordinate or pointer", { action: "left_click", input: {} }],
    ["unknown key", { action: "key", input: { text: "hyper+q" } }],
    ["repeat 0", { action: "key", input: { text: "a", repeat: 0 } }],
    [
      "bad scroll direction",
      { action: "scroll", input: { coordinate: [1, 1], scroll_direction: "diagonal", scroll_amount: 1 } },
    ],
    ["scroll without amount", { action: "scroll", input: { coordinate: [1, 1], scroll_direction: "up" } }],
    [
      "modified scroll",
      { action: "scroll", input: { coordinate: [1, 1], scroll_direction: "up", scroll_amount: 1, text: "ctrl" } },
    ],
    ["empty type", { action: "type", input: { text: "" } }],
    ["negative wait", { action: "wait", input: { duration: -1 } }],
    ["lone mouse down", { action: "left_mouse_down", input: {} }],
  ] as [string, AnthropicComputerCall][])("%s is unsupported", (_n, call) => {
    expect(one(call, { ...identity, cursor: undefined }).kind).toBe("unsupported");
  });

  it("scales model-space coordinates to caller space", () => {
    expect(
      one({ action: "left_click_drag", input: { start_coordinate: [1, 2], coordinate: [3, 4] } }, double),
    ).toMatchObject({
      actions: [{ params: { x1: 2, y1: 4, x2: 6, y2: 8 } }],
    });
  });

  it("a click without a coordinate acts at the pointer, tracked through the answer", () => {
    const steps = fromAnthropicCalls(
      [
        { action: "mouse_move", input: { coordinate: [50, 60] } },
        { action: "left_click", input: {} },
        { action: "scroll", input: { scroll_direction: "down", scroll_amount: 1 } },
      ],
      identity,
    );
    expect(steps.map((s) => s.kind === "actions" && s.actions[0]?.params)).toEqual([
      { x: 50, y: 60 },
      { x: 50, y: 60, button: "left", clicks: 1 },
      { clicks: -1, direction: "vertical", x: 50, y: 60 },
    ]);
  });

  it("the pointer known from the trajectory is used", () => {
    expect(one({ action: "right_click", input: {} }, { ...identity, cursor: { x: 7, y: 8 } })).toMatchObject({
      actions: [{ params: { x: 7, y: 8 } }],
    });
  });

  it("mouse down, moves and up become one drag", () => {
    const steps = fromAnthropicCalls(
      [
        { action: "left_mouse_down", input: { coordinate: [1, 1] } },
        { action: "mouse_move", input: { coordinate: [5, 5] } },
        { action: "mouse_move", input: { coordinate: [9, 9] } },
        { action: "left_mouse_up", input: {} },
        { action: "type", input: { text: "x" } },
      ],
      identity,
    );
    expect(steps).toHaveLength(2);
    expect(steps[0]).toMatchObject({ actions: [{ action_type: "drag", params: { x1: 1, y1: 1, x2: 9, y2: 9 } }] });
  });

  it("keyActions splits long runs at 100 keys and refuses chords of more than 8", () => {
    const run = keyActions([["a"]], 150);
    expect(typeof run !== "string" && run.map((a) => (a.params.keys as string[]).length)).toEqual([100, 50]);
    expect(typeof keyActions([["ctrl", "alt", "shift", "meta", "a", "b", "c", "d", "e"]], 1)).toBe("string");
  });
});

describe("ours -> Anthropic (trajectory replay)", () => {
  const ctx = { toModel: (p: { x: number; y: number }) => p, centre: { x: 640, y: 400 } };
  const CASES: [string, Action, AnthropicComputerCall[]][] = [
    [
      "click",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1 } },
      [{ action: "left_click", input: { coordinate: [1, 2] } }],
    ],
    [
      "click + hold",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1, hold_keys: ["shift"] } },
      [{ action: "left_click", input: { coordinate: [1, 2], text: "shift" } }],
    ],
    [
      "double",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 2 } },
      [{ action: "double_click", input: { coordinate: [1, 2] } }],
    ],
    [
      "triple",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 3 } },
      [{ action: "triple_click", input: { coordinate: [1, 2] } }],
    ],
    [
      "right",
      { action_type: "click", params: { x: 1, y: 2, button: "right", clicks: 1 } },
      [{ action: "right_click", input: { coordinate: [1, 2] } }],
    ],
    [
      "right x2",
      { action_type: "click", params: { x: 1, y: 2, button: "right", clicks: 2 } },
      [
        { action: "right_click", input: { coordinate: [1, 2] } },
        { action: "right_click", input: { coordinate: [1, 2] } },
      ],
    ],
    [
      "middle",
      { action_type: "click", params: { x: 1, y: 2, button: "middle", clicks: 1 } },
      [{ action: "middle_click", input: { coordinate: [1, 2] } }],
    ],
    [
      "move",
      { action_type: "move", params: { x: 3, y: 4 } },
      [{ action: "mouse_move", input: { coordinate: [3, 4] } }],
    ],
    [
      "drag",
      { action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4, button: "left" } },
      [{ action: "left_click_drag", input: { start_coordinate: [1, 2], coordinate: [3, 4] } }],
    ],
    ["type", { action_type: "type_text", params: { text: "hi" } }, [{ action: "type", input: { text: "hi" } }]],
    [
      "key_press",
      { action_type: "key_press", params: { keys: ["enter", "pagedown"] } },
      [{ action: "key", input: { text: "Return Page_Down" } }],
    ],
    [
      "key_combo",
      { action_type: "key_combo", params: { keys: ["ctrl", "meta", "+"] } },
      [{ action: "key", input: { text: "ctrl+super+plus" } }],
    ],
    [
      "scroll up",
      { action_type: "scroll", params: { clicks: 3, direction: "vertical", x: 5, y: 6 } },
      [{ action: "scroll", input: { coordinate: [5, 6], scroll_direction: "up", scroll_amount: 3 } }],
    ],
    [
      "scroll left, no anchor",
      { action_type: "scroll", params: { clicks: -2, direction: "horizontal" } },
      [{ action: "scroll", input: { coordinate: [640, 400], scroll_direction: "left", scroll_amount: 2 } }],
    ],
    ["wait", { action_type: "wait", params: { seconds: 3 } }, [{ action: "wait", input: { duration: 3 } }]],
    ["done", { action_type: "done", params: {} }, []],
    ["fail", { action_type: "fail", params: { message: "x" } }, []],
  ];
  it.each(CASES)("%s", (_n, action, want) => {
    expect(toAnthropicCalls(action, ctx)).toEqual(want);
  });

  it("round-trips every replayable action", () => {
    for (const [, action] of CASES) {
      if (action.action_type === "done" || action.action_type === "fail") continue;
      if (action.action_type === "scroll" && action.params.x === undefined) continue;
      const back = finalizeBatch(fromAnthropicCalls(toAnthropicCalls(action, ctx), identity), {
        width: 1280,
        height: 800,
        maxActions: 10,
      });
      const expected =
        action.action_type === "click" && action.params.button === "right" && action.params.clicks === 2
          ? [
              { ...action, params: { ...action.params, clicks: 1 } },
              { ...action, params: { ...action.params, clicks: 1 } },
            ]
          : [action];
      expect(back.actions).toEqual(expected);
    }
  });
});
