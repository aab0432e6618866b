// raw_code (DECISIONS.md "Compatibility amendments (2026-11-25)": include_raw_code) is the pyautogui
// equivalent of each action: parsing it back with the service's own parser gives the same action.

import { type Action, ActionSchema } from "@cua/base/actions/action";
import { describe, expect, it } from "vitest";
import { parsePyautogui } from "./pyautogui.ts";
import { describeAction, pyString, toPyautogui } from "./to-pyautogui.ts";

const A = (a: unknown): Action => ActionSchema.parse(a);

const CASES: Action[] = [
  A({ action_type: "click", params: { x: 10, y: 20 } }),
  A({ action_type: "click", params: { x: 5, y: 6, clicks: 2, button: "right" } }),
  A({ action_type: "click", params: { x: 7, y: 8, hold_keys: ["ctrl", "shift"] } }),
  A({ action_type: "move", params: { x: 300, y: 400 } }),
  A({ action_type: "type_text", params: { text: 'it\'s a "test"\\n\nline\ttab é 🙂' } }),
  A({ action_type: "key_press", params: { keys: ["enter"] } }),
  A({ action_type: "key_press", params: { keys: ["tab", "tab", "enter"] } }),
  A({ action_type: "key_combo", params: { keys: ["ctrl", "c"] } }),
  A({ action_type: "scroll", params: { clicks: -3 } }),
  A({ action_type: "scroll", params: { clicks: 2, direction: "horizontal", x: 50, y: 60 } }),
  A({ action_type: "drag", params: { x1: 1, y1: 2, x2: 30, y2: 40 } }),
  A({ action_type: "drag", params: { x1: 1, y1: 2, x2: 30, y2: 40, button: "middle", hold_keys: ["alt"] } }),
  A({ action_type: "wait", params: { seconds: 1.5 } }),
  A({ action_type: "done", params: {} }),
];

describe("toPyautogui is the parser's inverse", () => {
  for (const a of CASES) {
    it(`${a.action_type} ${JSON.stringify(a.params)}`, () => {
      const code = toPyautogui(a);
      const parsed = parsePyautogui(code, { strict: true });
      expect(parsed.skipped).toEqual([]);
      expect(parsed.actions).toEqual([a]);
    });
  }

  it("fail maps to FAIL (its message is not code)", () => {
    const code = toPyautogui(A({ action_type: "fail", params: { message: "blocked" } }));
    expect(parsePyautogui(code).actions.map((x) => x.action_type)).toEqual(["fail"]);
  });

  it("python string literals escape quotes, backslashes and control characters", () => {
    expect(pyString("a'b\\c\n\u0001")).toBe("'a\\'b\\\\c\\n\\x01'");
  });

  it("describes each action in a few words", () => {
    expect(describeAction(CASES[1]!)).toBe("Double-click at (5, 6) with the right button");
    expect(describeAction(CASES[8]!)).toBe("Scroll down 3");
    expect(describeAction(CASES[7]!)).toBe("Press ctrl+c");
  });
});
