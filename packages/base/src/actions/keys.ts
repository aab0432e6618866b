// Key names: one canonical spelling per key, shared by the action schema, the action policy, the
// pyautogui parser and the engines. SPEC "Action" (key_press / key_combo / hold_keys) names keys but
// not their spelling; this module decides it:
// - names are lowercase words without separators: ctrl, alt, shift, meta, enter, escape, tab, space,
//   backspace, delete, insert, home, end, pageup, pagedown, up, down, left, right, f1..f24, ...
// - aliases fold into them: control/ctl/ctrlleft -> ctrl, option/opt -> alt, cmd/command/win/super/
//   windows -> meta, return -> enter, esc -> escape, del -> delete, pgup/prior -> pageup, arrowup -> up...
//   Matching of names ignores case and the separators "_", "-" and spaces ("Page_Up" -> pageup).
// - a single character is a key of its own and keeps its case ("A" is typed as a capital A, as
//   pyautogui does: it lowercases only multi-character names). "\n"/"\r" -> enter, "\t" -> tab,
//   " " -> space, "\b" -> backspace; other control characters are not keys.
// - anything else is not a key (normalizeKey returns null), including chord strings like "ctrl+c":
//   a chord is a key_combo of separate keys.

export const MODIFIER_KEYS = ["ctrl", "alt", "shift", "meta"] as const;
export type ModifierKey = (typeof MODIFIER_KEYS)[number];

const NAMED_KEYS = [
  ...MODIFIER_KEYS,
  "enter",
  "escape",
  "tab",
  "space",
  "backspace",
  "delete",
  "insert",
  "home",
  "end",
  "pageup",
  "pagedown",
  "up",
  "down",
  "left",
  "right",
  "capslock",
  "numlock",
  "scrolllock",
  "printscreen",
  "pause",
  "menu",
  "volumeup",
  "volumedown",
  "volumemute",
  "playpause",
  "nexttrack",
  "prevtrack",
  "num0",
  "num1",
  "num2",
  "num3",
  "num4",
  "num5",
  "num6",
  "num7",
  "num8",
  "num9",
  ...Array.from({ length: 24 }, (_, i) => `f${i + 1}`),
] as const;

/** every canonical multi-character key name */
export const CANONICAL_KEY_NAMES: readonly string[] = NAMED_KEYS;

const ALIASES: Record<string, string> = {
  control: "ctrl",
  ctl: "ctrl",
  ctrlleft: "ctrl",
  ctrlright: "ctrl",
  lctrl: "ctrl",
  rctrl: "ctrl",
  leftctrl: "ctrl",
  rightctrl: "ctrl",
  controlleft: "ctrl",
  controlright: "ctrl",
  controll: "ctrl", // xdotool Control_L
  controlr: "ctrl",
  option: "alt",
  opt: "alt",
  altleft: "alt",
  altright: "alt",
  lalt: "alt",
  ralt: "alt",
  leftalt: "alt",
  rightalt: "alt",
  altl: "alt",
  altr: "alt",
  optionleft: "alt",
  optionright: "alt",
  shiftleft: "shift",
  shiftright: "shift",
  lshift: "shift",
  rshift: "shift",
  leftshift: "shift",
  rightshift: "shift",
  shiftl: "shift",
  shiftr: "shift",
  cmd: "meta",
  command: "meta",
  commandleft: "meta",
  commandright: "meta",
  cmdleft: "meta",
  cmdright: "meta",
  win: "meta",
  windows: "meta",
  winleft: "meta",
  winright: "meta",
  lwin: "meta",
  rwin: "meta",
  super: "meta",
  superl: "meta",
  superr: "meta",
  metaleft: "meta",
  metaright: "meta",
  metal: "meta",
  metar: "meta",
  os: "meta",
  return: "enter",
  ret: "enter",
  esc: "escape",
  spacebar: "space",
  bksp: "backspace",
  del: "delete",
  ins: "insert",
  pgup: "pageup",
  prior: "pageup",
  pgdn: "pagedown",
  pgdown: "pagedown",
  next: "pagedown",
  arrowup: "up",
  uparrow: "up",
  arrowdown: "down",
  downarrow: "down",
  arrowleft: "left",
  leftarrow: "left",
  arrowright: "right",
  rightarrow: "right",
  caps: "capslock",
  prtsc: "printscreen",
  prtscr: "printscreen",
  prntscrn: "printscreen",
  print: "printscreen",
  printscrn: "printscreen",
  break: "pause",
  apps: "menu",
  contextmenu: "menu",
  mute: "volumemute",
  mediaplaypause: "playpause",
  medianexttrack: "nexttrack",
  mediaprevioustrack: "prevtrack",
  previoustrack: "prevtrack",
};

const CANONICAL = new Set<string>(NAMED_KEYS);
const SINGLE_CHAR_NAMES: Record<string, string> = {
  "\n": "enter",
  "\r": "enter",
  "\t": "tab",
  " ": "space",
  "\b": "backspace",
  "⌘": "meta",
};

/** Canonical name of a key, or null when the string names no key. */
export function normalizeKey(name: string): string | null {
  if (typeof name !== "string" || name.length === 0 || name.length > 32) return null;
  const chars = [...name];
  if (chars.length === 1) {
    if (Object.hasOwn(SINGLE_CHAR_NAMES, name)) return SINGLE_CHAR_NAMES[name]!;
    // C0/C1 control characters, DEL and lone surrogates name no key
    const cp = name.codePointAt(0)!;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || (cp >= 0xd800 && cp <= 0xdfff)) return null;
    return name;
  }
  const folded = name.toLowerCase().replace(/[\s_-]+/g, "");
  if (CANONICAL.has(folded)) return folded;
  return Object.hasOwn(ALIASES, folded) ? ALIASES[folded]! : null;
}

export function isModifierKey(key: string): key is ModifierKey {
  return (MODIFIER_KEYS as readonly string[]).includes(key);
}

/** Key identity for comparisons (policy matching): single letters compare case-insensitively. */
export function keyIdentity(key: string): string {
  const k = normalizeKey(key) ?? key.toLowerCase();
  return [...k].length === 1 ? k.toLowerCase() : k;
}
