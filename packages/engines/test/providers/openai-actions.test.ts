// Table-driven tests of the pure OpenAI computer-tool <-> Action mapping.

import type { Action } from "@cua/base/actions/action";
import { describe, expect, it } from "vitest";
import { finalizeBatch } from "../../src/providers/batch.ts";
import {
  describeAction,
  fromOpenAIActions,
  type OpenAIComputerAction,
  scrollClicks,
  toOpenAIActions,
} from "../../src/providers/openai-actions.ts";

describe("OpenAI -> ours", () => {
  const CASES: [string, OpenAIComputerAction, unknown][] = [
    [
      "click left",
      { type: "click", button: "left", x: 1, y: 2 },
      [{ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1 } }],
    ],
    [
      "click right",
      { type: "click", button: "right", x: 1, y: 2 },
      [{ action_type: "click", params: { x: 1, y: 2, button: "right", clicks: 1 } }],
    ],
    [
      "click wheel",
      { type: "click", button: "wheel", x: 1, y: 2 },
      [{ action_type: "click", params: { x: 1, y: 2, button: "middle", clicks: 1 } }],
    ],
    [
      "click back",
      { type: "click", button: "back", x: 1, y: 2 },
      [{ action_type: "key_combo", params: { keys: ["alt", "left"] } }],
    ],
    [
      "click forward",
      { type: "click", button: "forward", x: 1, y: 2 },
      [{ action_type: "key_combo", params: { keys: ["alt", "right"] } }],
    ],
    [
      "click + keys",
      { type: "click", button: "left", x: 1, y: 2, keys: ["CTRL"] },
      [{ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1, hold_keys: ["ctrl"] } }],
    ],
    [
      "double_click",
      { type: "double_click", x: 1, y: 2, keys: null },
      [{ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 2 } }],
    ],
    [
      "drag",
      {
        type: "drag",
        path: [
          { x: 0, y: 0 },
          { x: 5, y: 5 },
          { x: 9, y: 7 },
        ],
      },
      [{ action_type: "drag", params: { x1: 0, y1: 0, x2: 9, y2: 7, button: "left" } }],
    ],
    [
      "drag + keys",
      {
        type: "drag",
        path: [
          { x: 0, y: 0 },
          { x: 9, y: 7 },
        ],
        keys: ["SHIFT"],
      },
      [{ action_type: "drag", params: { x1: 0, y1: 0, x2: 9, y2: 7, button: "left", hold_keys: ["shift"] } }],
    ],
    ["keypress one", { type: "keypress", keys: ["ESC"] }, [{ action_type: "key_press", params: { keys: ["escape"] } }]],
    [
      "keypress chord",
      { type: "keypress", keys: ["CTRL", "C"] },
      [{ action_type: "key_combo", params: { keys: ["ctrl", "c"] } }],
    ],
    [
      "keypress cmd chord",
      { type: "keypress", keys: ["CMD", "SHIFT", "P"] },
      [{ action_type: "key_combo", params: { keys: ["meta", "shift", "p"] } }],
    ],
    [
      "keypress single letter keeps case",
      { type: "keypress", keys: ["A"] },
      [{ action_type: "key_press", params: { keys: ["A"] } }],
    ],
    [
      "keypress repeated keys",
      { type: "keypress", keys: ["DOWN", "DOWN"] },
      [{ action_type: "key_press", params: { keys: ["down", "down"] } }],
    ],
    ["move", { type: "move", x: 4, y: 5 }, [{ action_type: "move", params: { x: 4, y: 5 } }]],
    [
      "scroll down 300px",
      { type: "scroll", x: 1, y: 2, scroll_x: 0, scroll_y: 300 },
      [{ action_type: "scroll", params: { clicks: -3, direction: "vertical", x: 1, y: 2 } }],
    ],
    [
      "scroll up 150px",
      { type: "scroll", x: 1, y: 2, scroll_x: 0, scroll_y: -150 },
      [{ action_type: "scroll", params: { clicks: 2, direction: "vertical", x: 1, y: 2 } }],
    ],
    [
      "scroll right 20px",
      { type: "scroll", x: 1, y: 2, scroll_x: 20, scroll_y: 0 },
      [{ action_type: "scroll", params: { clicks: 1, direction: "horizontal", x: 1, y: 2 } }],
    ],
    [
      "scroll 50000px capped",
      { type: "scroll", x: 1, y: 2, scroll_x: 0, scroll_y: 50_000 },
      [{ action_type: "scroll", params: { clicks: -100, direction: "vertical", x: 1, y: 2 } }],
    ],
    ["type", { type: "type", text: "abc" }, [{ action_type: "type_text", params: { text: "abc" } }]],
    ["wait", { type: "wait" }, [{ action_type: "wait", params: { seconds: 2 } }]],
  ];
  it.each(CASES)("%s", (_n, action, want) => {
    const [step] = fromOpenAIActions([action]);
    expect(step?.kind).toBe("actions");
    expect(step?.kind === "actions" && step.actions).toEqual(want);
  });

  it("screenshot is an observation", () => {
    expect(fromOpenAIActions([{ type: "screenshot" }])[0]?.kind).toBe("observe");
  });

  it.each([
    ["no coordinates", { type: "click", button: "left" }],
    ["bad button", { type: "click", button: "thumb", x: 1, y: 1 }],
    ["short drag", { type: "drag", path: [{ x: 1, y: 1 }] }],
    ["bad keys", { type: "keypress", keys: ["WARP"] }],
    ["empty keys", { type: "keypress", keys: [] }],
    ["zero scroll", { type: "scroll", x: 1, y: 1, scroll_x: 0, scroll_y: 0 }],
    ["modified scroll", { type: "scroll", x: 1, y: 1, scroll_x: 0, scroll_y: 100, keys: ["CTRL"] }],
    ["modified move", { type: "move", x: 1, y: 1, keys: ["SHIFT"] }],
    ["empty type", { type: "type", text: "" }],
    ["unknown", { type: "zoom" }],
  ] as [string, OpenAIComputerAction][])("%s is unsupported", (_n, action) => {
    expect(fromOpenAIActions([action])[0]?.kind).toBe("unsupported");
  });

  it.each([
    [0, 0],
    [1, 1],
    [99, 1],
    [149, 1],
    [150, 2],
    [-250, -3],
    [1_000_000, 100],
  ])("scrollClicks(%i) = %i", (px, clicks) => {
    expect(scrollClicks(px)).toBe(clicks);
  });
});

describe("ours -> OpenAI (trajectory replay)", () => {
  const ctx = { centre: { x: 640, y: 400 } };
  const CASES: [string, Action, OpenAIComputerAction[]][] = [
    [
      "click",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1 } },
      [{ type: "click", button: "left", x: 1, y: 2 }],
    ],
    [
      "click + hold",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1, hold_keys: ["ctrl"] } },
      [{ type: "click", button: "left", x: 1, y: 2, keys: ["CTRL"] }],
    ],
    [
      "double",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 2 } },
      [{ type: "double_click", x: 1, y: 2, keys: null }],
    ],
    [
      "triple",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 3 } },
      [
        { type: "double_click", x: 1, y: 2, keys: null },
        { type: "click", button: "left", x: 1, y: 2 },
      ],
    ],
    [
      "right",
      { action_type: "click", params: { x: 1, y: 2, button: "right", clicks: 1 } },
      [{ type: "click", button: "right", x: 1, y: 2 }],
    ],
    [
      "middle",
      { action_type: "click", params: { x: 1, y: 2, button: "middle", clicks: 1 } },
      [{ type: "click", button: "wheel", x: 1, y: 2 }],
    ],
    ["move", { action_type: "move", params: { x: 3, y: 4 } }, [{ type: "move", x: 3, y: 4 }]],
    [
      "drag",
      { action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4, button: "left" } },
      [
        {
          type: "drag",
          path: [
            { x: 1, y: 2 },
            { x: 3, y: 4 },
          ],
        },
      ],
    ],
    ["type", { action_type: "type_text", params: { text: "x" } }, [{ type: "type", text: "x" }]],
    [
      "key_press",
      { action_type: "key_press", params: { keys: ["enter", "tab"] } },
      [
        { type: "keypress", keys: ["ENTER"] },
        { type: "keypress", keys: ["TAB"] },
      ],
    ],
    [
      "key_combo",
      { action_type: "key_combo", params: { keys: ["ctrl", "shift", "t"] } },
      [{ type: "keypress", keys: ["CTRL", "SHIFT", "t"] }],
    ],
    [
      "scroll down 3",
      { action_type: "scroll", params: { clicks: -3, direction: "vertical", x: 5, y: 6 } },
      [{ type: "scroll", x: 5, y: 6, scroll_x: 0, scroll_y: 300 }],
    ],
    [
      "scroll right 2, no anchor",
      { action_type: "scroll", params: { clicks: 2, direction: "horizontal" } },
      [{ type: "scroll", x: 640, y: 400, scroll_x: 200, scroll_y: 0 }],
    ],
    ["wait", { action_type: "wait", params: { seconds: 5 } }, [{ type: "wait" }]],
    ["done", { action_type: "done", params: {} }, []],
  ];
  it.each(CASES)("%s", (_n, action, want) => {
    expect(toOpenAIActions(action, ctx)).toEqual(want);
  });

  it("round-trips clicks, moves, drags, typing, keys and anchored scrolls", () => {
    for (const [name, action] of CASES) {
      if (["done", "wait", "triple", "scroll right 2, no anchor", "key_press"].includes(name)) continue;
      const back = finalizeBatch(fromOpenAIActions(toOpenAIActions(action, ctx)), {
        width: 1280,
        height: 800,
        maxActions: 10,
      });
      expect(back.actions).toEqual([action]);
    }
  });

  it("describeAction gives a readable line", () => {
    expect(describeAction({ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 2 } })).toBe(
      "double-clicked left at (1, 2)",
    );
    expect(describeAction({ action_type: "key_combo", params: { keys: ["ctrl", "s"] } })).toBe("pressed ctrl+s");
    expect(describeAction({ action_type: "fail", params: { message: "blocked" } })).toBe("reported failure: blocked");
  });
});
