// Key names accepted by key_press / key_combo / hold_keys and their X keysyms (what xdotool takes).
// Names are case-insensitive. Accepted: the aliases below, any single printable character, and raw
// X keysym names (letters, digits, underscore; e.g. "XF86AudioMute", "KP_Enter").

const ALIASES: Record<string, string> = {
  ctrl: "Control_L",
  control: "Control_L",
  lctrl: "Control_L",
  rctrl: "Control_R",
  shift: "Shift_L",
  lshift: "Shift_L",
  rshift: "Shift_R",
  alt: "Alt_L",
  option: "Alt_L",
  lalt: "Alt_L",
  ralt: "Alt_R",
  altgr: "ISO_Level3_Shift",
  meta: "Super_L",
  cmd: "Super_L",
  command: "Super_L",
  super: "Super_L",
  win: "Super_L",
  windows: "Super_L",
  enter: "Return",
  return: "Return",
  tab: "Tab",
  space: "space",
  backspace: "BackSpace",
  delete: "Delete",
  del: "Delete",
  escape: "Escape",
  esc: "Escape",
  up: "Up",
  down: "Down",
  left: "Left",
  right: "Right",
  arrowup: "Up",
  arrowdown: "Down",
  arrowleft: "Left",
  arrowright: "Right",
  home: "Home",
  end: "End",
  pageup: "Prior",
  page_up: "Prior",
  pgup: "Prior",
  pagedown: "Next",
  page_down: "Next",
  pgdn: "Next",
  insert: "Insert",
  ins: "Insert",
  capslock: "Caps_Lock",
  numlock: "Num_Lock",
  scrolllock: "Scroll_Lock",
  printscreen: "Print",
  print: "Print",
  prtsc: "Print",
  pause: "Pause",
  menu: "Menu",
  apps: "Menu",
  volumeup: "XF86AudioRaiseVolume",
  volumedown: "XF86AudioLowerVolume",
  volumemute: "XF86AudioMute",
};

const PUNCTUATION: Record<string, string> = {
  " ": "space",
  "+": "plus",
  "-": "minus",
  "=": "equal",
  ",": "comma",
  ".": "period",
  "/": "slash",
  "\\": "backslash",
  ";": "semicolon",
  "'": "apostrophe",
  "`": "grave",
  "[": "bracketleft",
  "]": "bracketright",
  "!": "exclam",
  "@": "at",
  "#": "numbersign",
  $: "dollar",
  "%": "percent",
  "^": "asciicircum",
  "&": "ampersand",
  "*": "asterisk",
  "(": "parenleft",
  ")": "parenright",
  _: "underscore",
  "{": "braceleft",
  "}": "braceright",
  "|": "bar",
  ":": "colon",
  '"': "quotedbl",
  "<": "less",
  ">": "greater",
  "?": "question",
  "~": "asciitilde",
};

const KEYSYM_NAME = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;
const FKEY = /^f([1-9]|1[0-9]|2[0-4])$/;

/** The X keysym for a key name, or null when the name is not acceptable. */
export function toKeysym(name: string): string | null {
  if (name.length === 0 || name.length > 40) return null;
  if ([...name].length === 1) {
    const punct = PUNCTUATION[name];
    if (punct) return punct;
    const cp = name.codePointAt(0) ?? 0;
    if (cp < 0x20 || cp === 0x7f) return null;
    if (/^[A-Za-z0-9]$/.test(name)) return name;
    // any other printable character: xdotool resolves it by its Unicode keysym
    return `U${cp.toString(16).toUpperCase().padStart(4, "0")}`;
  }
  const lower = name.toLowerCase();
  const alias = ALIASES[lower];
  if (alias) return alias;
  if (FKEY.test(lower)) return lower.toUpperCase();
  if (KEYSYM_NAME.test(name)) return name;
  return null;
}

export function isValidKeyName(name: string): boolean {
  return toKeysym(name) !== null;
}
