// The inverse of the pyautogui parser (./pyautogui.ts): an Action as the pyautogui code that parses back to it.
// Used for `raw_code` when predict or session predict is called with include_raw_code: true (DECISIONS.md
// "Compatibility amendments (2026-11-25)"). pyautogui.test.ts checks parse(toPyautogui(a)) == a.
import type { Action } from "@cua/base/actions/action";

/** A Python string literal (single quotes; backslash escapes for quotes, backslashes and control characters). */
export function pyString(s: string): string {
  let out = "'";
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (ch === "'") out += "\\'";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return `${out}'`;
}

const num = (n: number): string => (Number.isInteger(n) ? String(n) : String(n));

function held(keys: readonly string[] | undefined, body: string[]): string[] {
  if (!keys?.length) return body;
  return [
    ...keys.map((k) => `pyautogui.keyDown(${pyString(k)})`),
    ...body,
    ...[...keys].reverse().map((k) => `pyautogui.keyUp(${pyString(k)})`),
  ];
}

/** The pyautogui statements for one action (lines joined with "\n"). */
export function toPyautogui(a: Action): string {
  switch (a.action_type) {
    case "click": {
      const p = a.params;
      const clicks = p.clicks ?? 1;
      const button = p.button ?? "left";
      const args = [num(p.x), num(p.y)];
      if (clicks !== 1) args.push(`clicks=${clicks}`);
      if (button !== "left") args.push(`button=${pyString(button)}`);
      return held(p.hold_keys, [`pyautogui.click(${args.join(", ")})`]).join("\n");
    }
    case "move":
      return `pyautogui.moveTo(${num(a.params.x)}, ${num(a.params.y)})`;
    case "type_text":
      return `pyautogui.write(${pyString(a.params.text)})`;
    case "key_press":
      return a.params.keys.length === 1
        ? `pyautogui.press(${pyString(a.params.keys[0]!)})`
        : `pyautogui.press([${a.params.keys.map(pyString).join(", ")}])`;
    case "key_combo":
      return `pyautogui.hotkey(${a.params.keys.map(pyString).join(", ")})`;
    case "scroll": {
      const p = a.params;
      const fn = (p.direction ?? "vertical") === "horizontal" ? "hscroll" : "scroll";
      const at = p.x !== undefined && p.y !== undefined ? `, x=${num(p.x)}, y=${num(p.y)}` : "";
      return `pyautogui.${fn}(${num(p.clicks)}${at})`;
    }
    case "drag": {
      const p = a.params;
      const button = p.button ?? "left";
      const b = button !== "left" ? `, button=${pyString(button)}` : "";
      return held(p.hold_keys, [
        `pyautogui.mouseDown(${num(p.x1)}, ${num(p.y1)}${b})`,
        `pyautogui.mouseUp(${num(p.x2)}, ${num(p.y2)}${b})`,
      ]).join("\n");
    }
    case "wait":
      return `time.sleep(${num(a.params.seconds)})`;
    case "done":
      return "DONE";
    case "fail":
      return "FAIL";
  }
}

/** A short description of an action, in words (the `description` field). */
export function describeAction(a: Action): string {
  switch (a.action_type) {
    case "click": {
      const p = a.params;
      const n = p.clicks ?? 1;
      const kind = n === 2 ? "Double-click" : n === 3 ? "Triple-click" : n > 1 ? `Click ${n} times` : "Click";
      const btn = (p.button ?? "left") === "left" ? "" : ` with the ${p.button} button`;
      const hold = p.hold_keys?.length ? ` holding ${p.hold_keys.join("+")}` : "";
      return `${kind} at (${p.x}, ${p.y})${btn}${hold}`;
    }
    case "move":
      return `Move the pointer to (${a.params.x}, ${a.params.y})`;
    case "type_text": {
      const t = a.params.text;
      return `Type "${t.length > 60 ? `${t.slice(0, 57)}...` : t}"`;
    }
    case "key_press":
      return `Press ${a.params.keys.join(", ")}`;
    case "key_combo":
      return `Press ${a.params.keys.join("+")}`;
    case "scroll": {
      const p = a.params;
      const dir =
        (p.direction ?? "vertical") === "horizontal" ? (p.clicks > 0 ? "right" : "left") : p.clicks > 0 ? "up" : "down";
      return `Scroll ${dir} ${Math.abs(p.clicks)}${p.x !== undefined ? ` at (${p.x}, ${p.y})` : ""}`;
    }
    case "drag":
      return `Drag from (${a.params.x1}, ${a.params.y1}) to (${a.params.x2}, ${a.params.y2})`;
    case "wait":
      return `Wait ${a.params.seconds} s`;
    case "done":
      return "The task is complete";
    case "fail":
      return a.params.message ? `Cannot continue: ${a.params.message}`.slice(0, 500) : "The task cannot be done";
  }
}
