import type { Action } from "@cua/base/actions/action";
import { describe, expect, it } from "vitest";
import { toMachineCommands } from "./actions-to-commands.ts";

describe("toMachineCommands (SPEC Action -> DECISIONS machine commands)", () => {
  it.each<[string, Action, { command: string; parameters: Record<string, unknown> }[]]>([
    [
      "click",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1 } },
      [{ command: "click", parameters: { x: 1, y: 2, button: "left", clicks: 1 } }],
    ],
    [
      "click with modifiers",
      { action_type: "click", params: { x: 1, y: 2, button: "right", clicks: 2, hold_keys: ["ctrl"] } },
      [{ command: "click", parameters: { x: 1, y: 2, button: "right", clicks: 2, hold_keys: ["ctrl"] } }],
    ],
    [
      "five clicks become 3 + 2",
      { action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 5 } },
      [
        { command: "click", parameters: { x: 1, y: 2, button: "left", clicks: 3 } },
        { command: "click", parameters: { x: 1, y: 2, button: "left", clicks: 2 } },
      ],
    ],
    ["move", { action_type: "move", params: { x: 3, y: 4 } }, [{ command: "move", parameters: { x: 3, y: 4 } }]],
    [
      "type_text",
      { action_type: "type_text", params: { text: "hé" } },
      [{ command: "type", parameters: { text: "hé" } }],
    ],
    [
      "key_press",
      { action_type: "key_press", params: { keys: ["tab", "enter"] } },
      [{ command: "key_press", parameters: { keys: ["tab", "enter"] } }],
    ],
    [
      "key_combo",
      { action_type: "key_combo", params: { keys: ["ctrl", "v"] } },
      [{ command: "key_combo", parameters: { keys: ["ctrl", "v"] } }],
    ],
    [
      "scroll",
      { action_type: "scroll", params: { clicks: -3, direction: "vertical" } },
      [{ command: "scroll", parameters: { clicks: -3, direction: "vertical" } }],
    ],
    [
      "scroll at",
      { action_type: "scroll", params: { clicks: 2, direction: "horizontal", x: 5, y: 6 } },
      [{ command: "scroll", parameters: { clicks: 2, direction: "horizontal", x: 5, y: 6 } }],
    ],
    [
      "drag",
      { action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4, button: "left" } },
      [{ command: "drag", parameters: { x1: 1, y1: 2, x2: 3, y2: 4, button: "left" } }],
    ],
    ["wait", { action_type: "wait", params: { seconds: 1.5 } }, [{ command: "wait", parameters: { seconds: 1.5 } }]],
    ["done", { action_type: "done", params: {} }, []],
    ["fail", { action_type: "fail", params: { message: "no" } }, []],
  ])("%s", (_n, action, want) => {
    expect(toMachineCommands(action)).toEqual(want);
  });
});
