import { describe, expect, it } from "vitest";
import { digestActions, isStalled } from "./stall-guard.ts";

const A = { screenshotDigest: "s1", actionsDigest: "a1" };
const B = { screenshotDigest: "s2", actionsDigest: "a1" };
const C = { screenshotDigest: "s1", actionsDigest: "a2" };

describe("isStalled: the third identical (screen, actions) pair in a row", () => {
  it.each([
    ["two identical before", [A, A], A, true],
    ["three identical before", [A, A, A], A, true],
    ["only one before", [A], A, false],
    ["none before", [], A, false],
    ["the screen changed in between", [A, B], A, false],
    ["the action changed in between", [C, A], A, false],
    ["an older difference does not matter", [B, A, A], A, true],
    ["same actions, other screen now", [A, A], B, false],
    ["no digest", [A, A], { screenshotDigest: null, actionsDigest: "a1" }, false],
  ])("%s", (_name, history, current, want) => {
    expect(isStalled(history, current)).toBe(want);
  });
});

describe("digestActions", () => {
  it("ignores params key order, distinguishes values", () => {
    const a = digestActions([{ action_type: "click", params: { x: 1, y: 2, button: "left", clicks: 1 } }]);
    const b = digestActions([{ action_type: "click", params: { button: "left", clicks: 1, y: 2, x: 1 } } as never]);
    const c = digestActions([{ action_type: "click", params: { x: 1, y: 3, button: "left", clicks: 1 } }]);
    expect(a).toBe(b);
    expect(a).not.toBe(c);
  });
});
