import { describe, expect, it } from "vitest";
import { CANONICAL_KEY_NAMES, isModifierKey, keyIdentity, normalizeKey } from "./keys.ts";

// SPEC "Action": key_press / key_combo / hold_keys name keys; keys.ts decides their canonical spelling.
describe("normalizeKey (SPEC Action key names)", () => {
  it.each([
    ["ctrl", "ctrl"],
    ["Control", "ctrl"],
    ["CTRL", "ctrl"],
    ["ctrlleft", "ctrl"],
    ["Control_L", "ctrl"],
    ["ctl", "ctrl"],
    ["alt", "alt"],
    ["option", "alt"],
    ["altright", "alt"],
    ["shift", "shift"],
    ["shiftleft", "shift"],
    ["meta", "meta"],
    ["cmd", "meta"],
    ["command", "meta"],
    ["win", "meta"],
    ["winleft", "meta"],
    ["super", "meta"],
    ["Super_L", "meta"],
    ["⌘", "meta"],
    ["enter", "enter"],
    ["Return", "enter"],
    ["\n", "enter"],
    ["\r", "enter"],
    ["esc", "escape"],
    ["Escape", "escape"],
    ["tab", "tab"],
    ["\t", "tab"],
    [" ", "space"],
    ["spacebar", "space"],
    ["backspace", "backspace"],
    ["BackSpace", "backspace"],
    ["\b", "backspace"],
    ["del", "delete"],
    ["Delete", "delete"],
    ["ins", "insert"],
    ["pgup", "pageup"],
    ["Page_Up", "pageup"],
    ["page-down", "pagedown"],
    ["Prior", "pageup"],
    ["Next", "pagedown"],
    ["ArrowUp", "up"],
    ["left", "left"],
    ["rightarrow", "right"],
    ["down", "down"],
    ["home", "home"],
    ["End", "end"],
    ["f1", "f1"],
    ["F12", "f12"],
    ["f24", "f24"],
    ["prtsc", "printscreen"],
    ["Caps_Lock", "capslock"],
    ["a", "a"],
    ["A", "A"], // single characters keep their case, as pyautogui does
    ["1", "1"],
    ["+", "+"],
    ["é", "é"],
  ])("%j -> %s", (input, expected) => {
    expect(normalizeKey(input)).toBe(expected);
  });

  it.each([
    [""],
    ["f25"],
    ["f0"],
    ["ctrl+c"], // chords are key_combo, never one key name
    ["notakey"],
    ["\u0000"],
    ["\u007f"],
    ["ab"],
    ["x".repeat(40)],
  ])("%j names no key", (input) => {
    expect(normalizeKey(input)).toBeNull();
  });

  it("every canonical name maps to itself", () => {
    for (const name of CANONICAL_KEY_NAMES) expect(normalizeKey(name)).toBe(name);
  });

  it.each([
    ["ctrl", true],
    ["meta", true],
    ["enter", false],
    ["a", false],
  ])("isModifierKey(%s) = %s", (k, expected) => {
    expect(isModifierKey(k)).toBe(expected);
  });

  it.each([
    ["W", "w"],
    ["w", "w"],
    ["Control", "ctrl"],
    ["Return", "enter"],
  ])("keyIdentity(%s) = %s (policy matching)", (k, expected) => {
    expect(keyIdentity(k)).toBe(expected);
  });
});
