// Key names between our canonical spelling (actions/keys.ts: ctrl, alt, shift, meta, enter, escape, pageup,
// f5, single characters...) and each provider's spelling.
//
// Anthropic speaks xdotool keysyms ("Return", "Page_Down", "super", "ctrl+s", "ctrl+a BackSpace").
// OpenAI's computer tool sends key names in `keypress.keys` ("CTRL", "ENTER", "ARROWUP", "ESC", "/").
import { isModifierKey, normalizeKey } from "@cua/base/actions/keys";

/** Provider spellings the shared table does not know (xdotool keysym names of punctuation, keypad). */
const PROVIDER_ALIASES: Record<string, string> = {
  kpenter: "enter",
  minus: "-",
  plus: "+",
  equal: "=",
  comma: ",",
  period: ".",
  slash: "/",
  backslash: "\\",
  semicolon: ";",
  apostrophe: "'",
  grave: "`",
  bracketleft: "[",
  bracketright: "]",
  asterisk: "*",
  underscore: "_",
};

/** Canonical key for a provider's key name, or null when it names no key we know. */
export function canonicalKey(raw: string): string | null {
  const direct = normalizeKey(raw) ?? normalizeKey(raw.trim());
  if (direct) return direct;
  const folded = raw.toLowerCase().replace(/[\s_-]+/g, "");
  return PROVIDER_ALIASES[folded] ?? null;
}

export { isModifierKey };

/** "ctrl+shift" (keys held during a click) -> ["ctrl", "shift"]; [] for none; null when a part is unknown. */
export function parseHoldKeys(text: string | null | undefined): string[] | null {
  if (text === null || text === undefined || text.trim() === "") return [];
  const keys: string[] = [];
  for (const part of text.split("+")) {
    const key = canonicalKey(part);
    if (!key) return null;
    keys.push(key);
  }
  return keys;
}

/**
 * An xdotool key string as Anthropic's `key` action sends it: whitespace-separated chords, each chord
 * "+"-joined ("ctrl+s", "Return", "ctrl+a BackSpace"). Returns the chords, or null when a key is unknown.
 */
export function parseXdotoolKeys(text: string): string[][] | null {
  const chords: string[][] = [];
  for (const token of text.trim().split(/\s+/)) {
    if (token === "") continue;
    // A lone "+" is the plus key; "ctrl++" is ctrl and plus.
    const parts =
      token === "+" ? ["+"] : token.endsWith("++") ? [...token.slice(0, -2).split("+"), "+"] : token.split("+");
    const chord: string[] = [];
    for (const part of parts) {
      const key = canonicalKey(part);
      if (!key) return null;
      chord.push(key);
    }
    if (chord.length > 0) chords.push(chord);
  }
  return chords.length > 0 ? chords : null;
}

const TO_XDOTOOL: Record<string, string> = {
  meta: "super",
  enter: "Return",
  escape: "Escape",
  tab: "Tab",
  space: "space",
  backspace: "BackSpace",
  delete: "Delete",
  insert: "Insert",
  up: "Up",
  down: "Down",
  left: "Left",
  right: "Right",
  home: "Home",
  end: "End",
  pageup: "Page_Up",
  pagedown: "Page_Down",
  capslock: "Caps_Lock",
  numlock: "Num_Lock",
  scrolllock: "Scroll_Lock",
  printscreen: "Print",
  pause: "Pause",
  menu: "Menu",
  volumeup: "XF86AudioRaiseVolume",
  volumedown: "XF86AudioLowerVolume",
  volumemute: "XF86AudioMute",
  playpause: "XF86AudioPlay",
  nexttrack: "XF86AudioNext",
  prevtrack: "XF86AudioPrev",
  "+": "plus",
  "-": "minus",
  " ": "space",
};

/** Canonical key -> xdotool keysym (what Anthropic's computer tool speaks). */
export function toXdotoolKey(key: string): string {
  const mapped = TO_XDOTOOL[key];
  if (mapped) return mapped;
  if (/^f\d{1,2}$/.test(key)) return key.toUpperCase();
  if (/^num\d$/.test(key)) return `KP_${key.slice(3)}`;
  return key;
}

const TO_OPENAI: Record<string, string> = {
  ctrl: "CTRL",
  shift: "SHIFT",
  alt: "ALT",
  meta: "META",
  enter: "ENTER",
  escape: "ESC",
  tab: "TAB",
  space: "SPACE",
  backspace: "BACKSPACE",
  delete: "DELETE",
  insert: "INSERT",
  up: "ARROWUP",
  down: "ARROWDOWN",
  left: "ARROWLEFT",
  right: "ARROWRIGHT",
  home: "HOME",
  end: "END",
  pageup: "PAGEUP",
  pagedown: "PAGEDOWN",
  capslock: "CAPSLOCK",
  printscreen: "PRINTSCREEN",
};

/** Canonical key -> the spelling OpenAI's computer tool uses in `keypress.keys`. */
export function toOpenAIKey(key: string): string {
  const mapped = TO_OPENAI[key];
  if (mapped) return mapped;
  if (/^f\d{1,2}$/.test(key)) return key.toUpperCase();
  return key;
}
