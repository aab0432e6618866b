// The local engine's instruction interpreter: imperative steps in plain language ("click Save",
// "type 'abc' into Search", "press ctrl+s", "scroll down 3", "drag A to B", "wait 2 seconds",
// "done when 'Thank you' appears") into SPEC actions. Parsing is pure; planning takes a synchronous
// grounder (description -> element) so it can run against OCR of a real screenshot or a stub.
import { createHash } from "node:crypto";
import type { Action } from "@cua/base/actions/action";
import { normalizeKey } from "@cua/base/actions/keys";
import { parseGoal } from "./goals.ts";
import type { GroundResult } from "./ground.ts";
import type { Box } from "./image.ts";
import { normalizeText } from "./match-text.ts";
import { BUSY, type Check, ERRORS } from "./verify.ts";

// ---------------------------------------------------------------------------------------------
// Steps

export type Modifier = "ctrl" | "alt" | "shift" | "meta";

export type Step =
  | {
      kind: "click";
      target: string;
      button: "left" | "right" | "middle";
      clicks: number;
      holdKeys: Modifier[];
      /** other names for the same element, tried in order when the target is not seen */
      alts?: string[];
      /** the click submits a goal's form ("Sign up with ..."): it must change the screen, without errors */
      submit?: boolean;
      /** the click toggles a control (tick, choose): its pixels beside the label must change */
      toggle?: boolean;
      /** the state the control must show afterwards (tick: on, untick: off) */
      on?: boolean;
    }
  | { kind: "move"; target: string }
  | {
      kind: "type";
      text: string;
      target: string | null;
      /** other labels for the same field ("email", "e-mail") */
      alts?: string[];
      /** replace what the field holds (change/set X to Y): select all before typing */
      replace?: boolean;
      /** a password-like field: what was typed is masked, so it cannot be read back */
      secret?: boolean;
      /** the field must end up holding exactly the text (a form's value) */
      exact?: boolean;
    }
  | { kind: "choose"; option: string; group: string | null }
  | { kind: "window"; title: string }
  | { kind: "scroll-until"; text: string; direction: "up" | "down" }
  | { kind: "wait-finish"; subject: string }
  | { kind: "open-app"; app: "terminal" | "file manager" | "text editor" }
  | { kind: "clear"; target: string }
  | { kind: "keys"; keys: string[]; combo: boolean; repeat: number }
  | {
      kind: "scroll";
      direction: "up" | "down" | "left" | "right";
      amount: number;
      target: string | null;
      /** scroll over the middle of the screen (goal scrolls: "scroll to the bottom of the page") */
      anchor?: "center";
      /** keep scrolling until the screen stops changing (to the very top or bottom) */
      edge?: boolean;
    }
  | { kind: "drag"; from: string; to: string }
  | { kind: "open-url"; url: string }
  | { kind: "wait"; seconds: number }
  | { kind: "wait-until"; text: string; negate: boolean }
  | { kind: "if"; text: string; negate: boolean; action: Step }
  | { kind: "done" }
  | { kind: "fail"; message: string }
  | { kind: "unknown"; text: string; why: string };

/** The goal checks: "if X is visible, done", "done when X appears", "fail if X appears". */
function isGoalCheck(s: Step): boolean {
  return s.kind === "if" && (s.action.kind === "done" || s.action.kind === "fail");
}

const VERBS =
  "click|double[- ]?click|triple[- ]?click|right[- ]?click|middle[- ]?click|tap|type|enter|write|input|fill|press|hit|scroll|drag|wait|hover|move|select|choose|clear|copy|paste|cut|undo|redo|open|go|navigate|done|fail|stop|finish|if|ctrl|shift|alt|cmd|" +
  // verbs that name what a button does ("and save the changes", ", then place the order")
  "add|start|download|upload|save|delete|remove|place|continue|confirm|apply|accept|agree|buy|checkout|check out|proceed|subscribe|book|reset|refresh|close|cancel|edit|export|import|print|share|launch|switch|follow|keep|tick|untick|check|uncheck|set|change|pick|view|archive|log|sign|finish|complete|focus|activate";

const SPLIT = new RegExp(
  String.raw`\r?\n|;|,?\s+(?:and\s+)?then\s+|,\s*then\b|\s*,\s*(?:and\s+)?(?=(?:${VERBS})\b)|\s+and\s+(?=(?:${VERBS})\b)`,
  "i",
);

/** Splits an instruction into steps at "then", ";", newlines and "and <verb>", never inside quotes. */
export function splitSteps(instruction: string): string[] {
  // protect quoted text
  const quoted: string[] = [];
  const masked = instruction.replace(
    /"[^"\n]*"|“[^”\n]*”|‘[^’\n]*’|`[^`\n]*`|(?<![\p{L}\p{N}])'[^'\n]*'(?![\p{L}\p{N}])/gu,
    (m) => {
      quoted.push(m);
      return `\uE000${quoted.length - 1}\uE000`;
    },
  );
  const parts = masked
    .split(SPLIT)
    .map((p) => p.replace(/\uE000(\d+)\uE000/g, (_, n: string) => quoted[Number(n)] ?? ""))
    .map((p) => p.replace(/^\s*(?:\d+[.)]|[-*•]|step \d+:?)\s*/i, "").trim())
    .map((p) => p.replace(/^(?:then|and|also|next|finally|first|after that|afterwards)\b[,\s]*/i, "").trim())
    .map((p) => p.replace(/[.!]+$/, "").trim())
    .filter((p) => p.length > 0);
  // "if X is visible, done" was split at its comma: rejoin a bare condition with its consequence;
  // "In the invoices table, open the row for ACME": a leading place qualifies the step after it
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i] ?? "";
    const next = parts[i + 1];
    if (/^if\s/i.test(p) && next !== undefined && !/,|\sthen\s/i.test(p)) {
      out.push(`${p}, ${next}`);
      i++;
    } else if (/^(?:in|inside|within|under|on)\s+(?:the\s+)?\S/i.test(p) && next !== undefined && !/[,]/.test(p)) {
      out.push(`${next} ${p}`);
      i++;
    } else out.push(p);
  }
  return out;
}

const QUOTE_RE = /^(?:"([^"]*)"|'([^']*)'|“([^”]*)”|‘([^’]*)’|`([^`]*)`)$/;

/** The text inside quotes when the whole string is one quoted literal. */
function unquote(s: string): string | null {
  const m = QUOTE_RE.exec(s.trim());
  if (!m) return null;
  return m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5] ?? "";
}

/** First quoted literal anywhere in s, with its span. */
function firstQuoted(s: string): { text: string; start: number; end: number } | null {
  const m = /"([^"]*)"|“([^”]*)”|‘([^’]*)’|`([^`]*)`|(?<![\p{L}\p{N}])'([^']*)'(?![\p{L}\p{N}])/u.exec(s);
  if (!m || m.index === undefined) return null;
  return { text: m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5] ?? "", start: m.index, end: m.index + m[0].length };
}

const NUMBER_WORDS: Record<string, number> = {
  once: 1,
  one: 1,
  a: 1,
  an: 1,
  twice: 2,
  two: 2,
  thrice: 3,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
};

function toNumber(s: string | undefined): number | null {
  if (s === undefined) return null;
  const t = s.trim().toLowerCase();
  if (/^\d+(?:\.\d+)?$/.test(t)) return Number(t);
  return NUMBER_WORDS[t] ?? null;
}

const MODIFIER_ALIASES: Record<string, Modifier> = {
  ctrl: "ctrl",
  control: "ctrl",
  alt: "alt",
  option: "alt",
  opt: "alt",
  shift: "shift",
  cmd: "meta",
  command: "meta",
  meta: "meta",
  win: "meta",
  windows: "meta",
  super: "meta",
};

/** Parses one key name ("Enter", "page down", "down arrow", "esc", "a"); null when it is not a key. */
export function parseKeyName(raw: string): string | null {
  let t = raw
    .trim()
    .replace(/^the\s+/i, "")
    .replace(/\s+(?:key|button)$/i, "")
    .trim();
  const q = unquote(t);
  if (q !== null) t = q;
  if (t.length === 0) return null;
  if ([...t].length === 1) return normalizeKey(t);
  const lower = t.toLowerCase();
  const mod = MODIFIER_ALIASES[lower];
  if (mod) return mod;
  return normalizeKey(lower.replace(/\s+/g, ""));
}

/** "ctrl+s", "Ctrl + Shift + T", "cmd-c": the chord's keys, or null when not a chord of known keys. */
export function parseChord(raw: string): string[] | null {
  const t = raw.trim();
  const parts = t.includes("+") ? t.split(/\s*\+\s*/) : /^[A-Za-z]+-\S+$/.test(t) ? t.split("-") : null;
  if (!parts || parts.length < 2) return null;
  const keys = parts.map(parseKeyName);
  if (keys.some((k) => k === null)) return null;
  const ks = keys as string[];
  if (new Set(ks.map((k) => k.toLowerCase())).size !== ks.length) return null;
  return ks;
}

const SHORTCUTS: Record<string, string[]> = {
  copy: ["ctrl", "c"],
  "copy it": ["ctrl", "c"],
  "copy the selection": ["ctrl", "c"],
  cut: ["ctrl", "x"],
  paste: ["ctrl", "v"],
  "paste it": ["ctrl", "v"],
  "paste the clipboard": ["ctrl", "v"],
  undo: ["ctrl", "z"],
  redo: ["ctrl", "y"],
  "select all": ["ctrl", "a"],
  "select all text": ["ctrl", "a"],
  "select everything": ["ctrl", "a"],
};

/** "press Enter twice", "press ctrl+s", "press Tab 3 times", "press up, up, down". */
function parseKeys(rest: string): Step | null {
  let t = rest.trim();
  let repeat = 1;
  const rep =
    /\s+(?:(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+times|(once|twice|thrice)|x\s*(\d+))$/i.exec(t);
  if (rep) {
    repeat = toNumber(rep[1] ?? rep[2] ?? rep[3]) ?? 1;
    t = t.slice(0, rep.index).trim();
  }
  t = t.replace(/^(?:the\s+)?(?:keys?\s+|key combination\s+|shortcut\s+|combination\s+)/i, "").trim();
  const chord = parseChord(t.replace(/^the\s+/i, "").replace(/\s+(?:keys?|shortcut|combination)$/i, ""));
  if (chord) return { kind: "keys", keys: chord, combo: true, repeat };
  const single = parseKeyName(t);
  if (single) return { kind: "keys", keys: [single], combo: false, repeat };
  // a sequence: "up, up, down" / "tab then enter" / "up up down"
  const seq = t.split(/\s*,\s*(?:and\s+)?|\s+and\s+|\s+(?=\S)/).filter(Boolean);
  if (seq.length > 1) {
    const keys = seq.map(parseKeyName);
    if (keys.every((k) => k !== null)) return { kind: "keys", keys: keys as string[], combo: false, repeat };
  }
  return null;
}

function parseModifiers(s: string): Modifier[] {
  const out: Modifier[] = [];
  for (const w of s.toLowerCase().split(/[\s+\-,]+|\band\b/)) {
    const m = MODIFIER_ALIASES[w.trim()];
    if (m && !out.includes(m)) out.push(m);
  }
  return out;
}

const VISIBLE =
  /^(?:the\s+)?(?:text\s+|message\s+|words?\s+|button\s+|link\s+)?(.+?)\s+(?:is\s+|are\s+)?(?:(not\s+|no longer\s+)(?:visible|shown|displayed|present|on (?:the )?screen|there)|(?:visible|shown|displayed|present|on (?:the )?screen|there)|(appears?|shows up|is shown|comes up)|(disappears?|goes away|vanishes|is gone))$/i;

/** "X is visible" / "X appears" / "X is not visible" / "X disappears" / "you see X". */
function parseCondition(raw: string): { text: string; negate: boolean } | null {
  let t = raw.trim().replace(/[,.]$/, "");
  const see = /^(?:you\s+)?(?:can\s+)?(see|find|don't see|do not see|cannot see|can't see)\s+(.+)$/i.exec(t);
  if (see?.[2]) {
    const neg = /n't|not/i.test(see[1] ?? "");
    return { text: stripTextWords(see[2]), negate: neg };
  }
  t = t.replace(/^(?:the\s+)?(?:screen|page)\s+(?:shows|says|displays|contains)\s+(.+)$/i, "$1 is visible");
  const m = VISIBLE.exec(t);
  if (!m?.[1]) return null;
  const negate = Boolean(m[2] || m[4]);
  return { text: stripTextWords(m[1]), negate };
}

function stripTextWords(s: string): string {
  const q = unquote(s.trim());
  if (q !== null) return q;
  const inner = firstQuoted(s);
  if (inner) return inner.text;
  return s
    .trim()
    .replace(/^(?:the\s+)?(?:text|message|words?|label)\s+/i, "")
    .trim();
}

function parseOutcome(s: string): Step | null {
  const t = s.trim().replace(/[.!]+$/, "");
  if (
    /^(?:(?:you(?:'re| are)|we(?:'re| are)|the task is|task is)\s+)?(?:done|finished|complete|completed|stop|finish|succeed|success|task complete|mark (?:it|the task) (?:as )?done|report success)$/i.test(
      t,
    )
  )
    return { kind: "done" };
  const f =
    /^(?:fail|failed|give up|abort|report (?:a )?failure|mark (?:it|the task) (?:as )?failed)(?:\s*(?::|-|because|with|saying)\s*(.+))?$/i.exec(
      t,
    );
  if (f) return { kind: "fail", message: f[1] ? (unquote(f[1]) ?? f[1]) : "the instruction says to fail" };
  return null;
}

/**
 * Parses one step of an instruction (one or two steps: "select X from the Y dropdown" opens Y, then
 * picks X). Never throws: what it cannot read becomes kind "unknown".
 */
export function parseStep(raw: string): Step[] {
  const r = parseOne(raw);
  return Array.isArray(r) ? r : [r];
}

function parseOne(raw: string): Step | Step[] {
  const s = raw.trim().replace(/^please\s+/i, "");
  const lower = s.toLowerCase();

  // outcomes and conditions
  const outcome = parseOutcome(s);
  if (outcome) return outcome;
  const ifThen = /^if\s+(.+?)\s*(?:,\s*(?:then\s+)?|\s+then\s+)(.+)$/i.exec(s);
  if (ifThen?.[1] && ifThen[2]) {
    const cond = parseCondition(ifThen[1]);
    const thens = parseStep(ifThen[2]);
    const then = thens[0];
    if (cond && then && thens.length === 1 && then.kind !== "unknown")
      return { kind: "if", text: cond.text, negate: cond.negate, action: then };
    if (!then || thens.length !== 1) return { kind: "unknown", text: s, why: "a condition can guard one simple step" };
    if (!cond) return { kind: "unknown", text: s, why: `cannot read the condition "${ifThen[1]}"` };
    return then;
  }
  const thenIf = /^(.+?)\s+(?:if|when|once|as soon as)\s+(.+)$/i.exec(s);
  if (thenIf?.[1] && thenIf[2]) {
    const out = parseOutcome(thenIf[1].replace(/^(?:you(?:'re| are)|we(?:'re| are))\s+/i, ""));
    const cond = parseCondition(thenIf[2]);
    if (out && cond) return { kind: "if", text: cond.text, negate: cond.negate, action: out };
  }
  // goal phrasings (sign up with ..., change X to Y, choose X as Y, scroll until, wait for X to finish)
  const goal = parseGoal(s);
  if (goal) return goal.length === 1 && goal[0] ? goal[0] : goal;
  const waitUntil =
    /^wait\s+(?:until|for|till)\s+(.+?)(?:\s+to\s+(appear|disappear|show up|be visible|go away|vanish))?$/i.exec(s);
  if (
    waitUntil?.[1] &&
    !/^\d/.test(waitUntil[1]) &&
    !/^(?:a|one|two|three|\d+)\s+(?:second|sec|minute|ms)/i.test(waitUntil[1])
  ) {
    const tail = waitUntil[2]?.toLowerCase();
    if (tail)
      return { kind: "wait-until", text: stripTextWords(waitUntil[1]), negate: /disappear|go away|vanish/.test(tail) };
    const cond = parseCondition(waitUntil[1]);
    if (cond) return { kind: "wait-until", text: cond.text, negate: cond.negate };
    return { kind: "wait-until", text: stripTextWords(waitUntil[1]), negate: false };
  }

  // wait N
  const wait =
    /^(?:wait|pause|sleep)(?:\s+for)?(?:\s+(?:about\s+)?(\d+(?:\.\d+)?|a|an|one|two|three|four|five|ten))?\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?$/i.exec(
      s,
    );
  if (wait) {
    const n = toNumber(wait[1]) ?? 1;
    const unit = (wait[2] ?? "s").toLowerCase();
    const seconds = unit.startsWith("ms") || unit.startsWith("milli") ? n / 1000 : unit.startsWith("m") ? n * 60 : n;
    return { kind: "wait", seconds };
  }

  // keyboard
  const shortcut = SHORTCUTS[lower.replace(/\s+/g, " ")];
  if (shortcut) return { kind: "keys", keys: shortcut, combo: true, repeat: 1 };
  const press = /^(?:press|hit|push|tap|use)\s+(.+)$/i.exec(s);
  if (press?.[1]) {
    const k = parseKeys(press[1]);
    if (k) return k;
  }
  const bareChord = parseKeys(s);
  if (bareChord?.kind === "keys" && bareChord.combo) return bareChord;

  // windows by title: "switch to the text editor window", "focus the Mousepad window"
  const win =
    /^(?:switch|go|change|move|get)\s+(?:back\s+)?(?:over\s+)?to\s+(?:the\s+)?(.+?)\s+window$|^(?:focus|activate|raise|bring\s+up|bring\s+(?:forward|back)|bring|bring\s+to\s+(?:the\s+)?front|show)\s+(?:on\s+)?(?:the\s+)?(.+?)\s+window(?:\s+to\s+the\s+front)?$|^switch\s+(?:back\s+)?to\s+(?:the\s+)?(terminal|text editor|editor|file manager|browser|web browser|chromium|mousepad|xterm)$/i.exec(
      s,
    );
  if (win) {
    const title = (win[1] ?? win[2] ?? win[3] ?? "").trim();
    if (title) return { kind: "window", title: unquote(title) ?? title };
  }
  const allTheWay =
    /^(?:scroll|go|move|jump)\s+(?:the\s+page\s+)?(?:all\s+the\s+way\s+|right\s+)(down|up)(?:\s+(?:the|this)\s+page)?$|^scroll\s+(?:down\s+|up\s+)?to\s+the\s+(?:very\s+)?(end|bottom|top|start)(?:\s+of\s+(?:the\s+)?(?:page|list|screen|document))?$/i.exec(
      s,
    );
  if (allTheWay) {
    const up = /up|top|start/i.test(allTheWay[1] ?? allTheWay[2] ?? "");
    return { kind: "scroll", direction: up ? "up" : "down", amount: 15, target: null, anchor: "center", edge: true };
  }

  // navigation by address bar
  const nav =
    /^(?:go to|open|navigate to|visit|browse to)\s+(?:the\s+)?(?:url\s+|page\s+|website\s+|site\s+)?(.+)$/i.exec(s);
  if (nav?.[1]) {
    const target = unquote(nav[1]) ?? nav[1];
    if (/^(?:https?:\/\/)?[\w-]+(?:\.[\w-]+)+(?::\d+)?(?:[/?#]\S*)?$/i.test(target.trim())) {
      return { kind: "open-url", url: target.trim() };
    }
    // "go to the Docs page", "open the Billing tab": the link or tab that says it
    const place = /^(?:go to|navigate to|visit|open)\s+(?:the\s+)?(.+?)\s+(page|tab|section)$/i.exec(s);
    if (place?.[1] && place[2] && !/^(?:open)$/i.test(place[1]))
      return clickStep("click", `${place[1]}${place[2].toLowerCase() === "tab" ? " tab" : ""}`, []);
  }

  // typing
  const clear = /^(?:clear|empty|erase)\s+(?:the\s+)?(?:text\s+in\s+)?(.+)$/i.exec(s);
  if (clear?.[1]) return { kind: "clear", target: clear[1].trim() };
  const fillWith = /^(?:fill(?:\s+in|\s+out)?|set)\s+(.+?)\s+(?:with|to|as)\s+(.+)$/i.exec(s);
  if (fillWith?.[1] && fillWith[2]) {
    const text = unquote(fillWith[2]) ?? fillWith[2];
    return { kind: "type", text, target: fillWith[1].trim() };
  }
  const type = /^(?:type|enter|input|write|fill in|key in|insert)\s+(.+)$/i.exec(s);
  if (type?.[1]) {
    const rest = type[1];
    const q = firstQuoted(rest);
    if (q && q.start <= 12) {
      const before = rest.slice(0, q.start).trim();
      const after = rest.slice(q.end).trim();
      const into = /^(?:in|into|inside|on|at|to)\s+(.+)$/i.exec(after);
      if (!before || /^(?:the\s+)?(?:text|word|words|value|string|phrase)$/i.test(before)) {
        if (!after) return { kind: "type", text: q.text, target: null };
        if (into?.[1]) return { kind: "type", text: q.text, target: into[1].trim() };
      }
    }
    // unquoted: split at the last " into ", or " in the ... field/box/input"
    const intoIdx = rest.toLowerCase().lastIndexOf(" into ");
    if (intoIdx > 0)
      return {
        kind: "type",
        text: unquote(rest.slice(0, intoIdx)) ?? rest.slice(0, intoIdx),
        target: rest.slice(intoIdx + 6).trim(),
      };
    const inField = /^(.+?)\s+(?:in|on)\s+(the\s+.+?\b(?:field|box|input|bar|area|textbox))$/i.exec(rest);
    if (inField?.[1] && inField[2])
      return { kind: "type", text: unquote(inField[1]) ?? inField[1], target: inField[2] };
    return { kind: "type", text: unquote(rest) ?? rest, target: null };
  }

  // scrolling
  const scroll =
    /^scroll(?:\s+(?:the\s+)?(?:page|screen|view|window|list))?\s*(up|down|left|right)?(?:\s+(?:by\s+)?(\d+|a|one|two|three|four|five|six|seven|eight|nine|ten)(?:\s*(?:clicks?|times|notches|steps|lines|ticks|pages?))?)?(?:\s+(?:on|over|in|inside|within|at)\s+(.+))?$/i.exec(
      s,
    );
  if (scroll && (scroll[1] || scroll[2] || scroll[3])) {
    const direction = (scroll[1]?.toLowerCase() ?? "down") as "up" | "down" | "left" | "right";
    return { kind: "scroll", direction, amount: toNumber(scroll[2]) ?? 3, target: scroll[3]?.trim() ?? null };
  }
  const scrollTo =
    /^scroll\s+(?:all the way\s+)?(?:to\s+)?(?:the\s+)?(top|bottom|end|start)(?:\s+of\s+(?:the\s+)?(?:page|list))?$/i.exec(
      s,
    );
  if (scrollTo?.[1]) {
    const up = /top|start/i.test(scrollTo[1]);
    return { kind: "scroll", direction: up ? "up" : "down", amount: 25, target: null };
  }

  // dragging
  const drag =
    /^(?:drag(?:\s+and\s+drop)?|move|drop)\s+(?:from\s+)?(.+?)\s+(?:to|onto|into|over to|on to|on top of)\s+(.+)$/i.exec(
      s,
    );
  if (drag?.[1] && drag[2] && !/^(?:the\s+)?(?:mouse|pointer|cursor)$/i.test(drag[1].trim())) {
    return { kind: "drag", from: drag[1].trim(), to: drag[2].trim() };
  }

  // hovering
  const hover =
    /^(?:hover(?:\s+(?:over|on))?|mouse\s*over|move\s+(?:the\s+)?(?:mouse|pointer|cursor)\s+(?:to|over|onto)|point\s+(?:at|to))\s+(.+)$/i.exec(
      s,
    );
  if (hover?.[1]) return { kind: "move", target: hover[1].trim() };

  // clicking
  const heldClick =
    /^(?:hold(?:ing)?\s+(?:down\s+)?(.+?)\s+(?:and|while you|then)\s+)(click|double[- ]?click|right[- ]?click)\s+(?:on\s+)?(.+)$/i.exec(
      s,
    );
  if (heldClick?.[1] && heldClick[2] && heldClick[3]) {
    const mods = parseModifiers(heldClick[1]);
    if (mods.length) return clickStep(heldClick[2], heldClick[3], mods);
  }
  const modClick =
    /^((?:(?:ctrl|control|shift|alt|option|cmd|command|meta)\s*[+-]?\s*)+)(click|double[- ]?click|right[- ]?click)\s+(?:on\s+)?(.+)$/i.exec(
      s,
    );
  if (modClick?.[1] && modClick[2] && modClick[3])
    return clickStep(modClick[2], modClick[3], parseModifiers(modClick[1]));
  const select =
    /^(?:select|choose|pick)\s+(.+?)\s+(?:from|in)\s+(?:the\s+)?(.+?(?:dropdown|drop-down|menu|list|select|picker|combo ?box))$/i.exec(
      s,
    );
  if (select?.[1] && select[2]) {
    // open the list, then pick the entry (which may only appear after the list opens)
    return [clickStep("click", select[2], []), clickStep("click", select[1], [])];
  }
  const click =
    /^(click|double[- ]?click|triple[- ]?click|right[- ]?click|middle[- ]?click|tap|press|select|choose|hit|push|check|uncheck|tick|untick|toggle|activate|open|follow)\s+(?:on\s+)?(.+)$/i.exec(
      s,
    );
  if (click?.[1] && click[2]) {
    const target = click[2];
    const held =
      /^(.+?)\s+(?:while\s+holding|holding|with)\s+(?:down\s+)?(?:the\s+)?(.+?)(?:\s+keys?)?(?:\s+(?:held|pressed|down))?$/i.exec(
        target,
      );
    if (held?.[1] && held[2]) {
      const mods = parseModifiers(held[2]);
      if (mods.length) return clickStep(click[1], held[1], mods);
    }
    return clickStep(click[1], target, []);
  }
  // a named key alone ("Enter", "Escape")
  const lone = parseKeyName(s);
  if (lone && [...lone].length > 1) return { kind: "keys", keys: [lone], combo: false, repeat: 1 };
  // a step without a verb names an element to click ("Submit", "the Save button")
  // (it must look like a name: capitalised, quoted, or "the ...")
  if (
    !new RegExp(`^(?:${VERBS})\\b`, "i").test(s) &&
    s.split(/\s+/).length <= 8 &&
    /^(?:the\s|["'“‘`]|\p{Lu}|\p{N})/u.test(s)
  ) {
    const step = clickStep("click", s, []);
    // "Start the export": the label may leave out the article ("Start export")
    const named = buttonNamedBy(s);
    if (step.kind === "click" && named?.kind === "click" && /\s/.test(s) && !/^["'“‘`]/.test(s))
      step.alts = [named.target, ...(named.alts ?? [])];
    return step;
  }
  const named = buttonNamedBy(s);
  if (named) return named;
  return { kind: "unknown", text: s, why: "no supported action verb" };
}

/** Verbs buttons and links are named by ("Place order", "Add to cart", "Start export"). */
const UI_VERBS = new Set(
  (
    "add start download upload save delete remove place continue confirm apply accept agree buy checkout " +
    "proceed subscribe unsubscribe book reserve reset refresh reload close cancel edit export import print share " +
    "archive view finish complete send submit next retry sign log register join create generate load show hide " +
    "expand collapse approve reject decline allow deny enable disable install update upgrade publish post reply " +
    "comment like follow unfollow invite rename sort filter resume pause stop play connect disconnect verify " +
    "order pay purchase schedule request claim redeem deactivate mark empty restore undo dismiss skip"
  ).split(" "),
);

/**
 * A step whose verb the interpreter does not know names what a button or link does: "place the order"
 * clicks "Place order", "add it to the cart" "Add to cart", "start the export" "Start export",
 * "continue to payment" "Continue to payment"; with an ordinal the verb alone is the label: "delete the
 * last comment" clicks the last "Delete". The click must change the screen like any other; a label that
 * is not on the screen fails the step (ELEMENT_NOT_FOUND), never a guess.
 */
export function buttonNamedBy(s: string): Step | null {
  const t = s.trim().replace(/[.!]+$/, "");
  const m = /^([\p{L}][\p{L}-]*)(?:\s+(.+))?$/u.exec(t);
  if (!m?.[1] || !UI_VERBS.has(m[1].toLowerCase())) return null;
  const words = t.split(/\s+/);
  if (words.length > 7) return null;
  const ORD = /\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d{1,2}(?:st|nd|rd|th))\b/i;
  const ord = ORD.exec(m[2] ?? "")?.[1];
  const drop = /^(?:the|a|an|it|them|this|that|these|those|my|your|our|its|their|all)$/i;
  const label = words.filter((w) => !drop.test(w) && !(ord && w.toLowerCase() === ord.toLowerCase())).join(" ");
  const cap = (x: string) => x.charAt(0).toUpperCase() + x.slice(1);
  const verb = cap(m[1].toLowerCase());
  const alts: string[] = [];
  if (ord) alts.push(`the ${ord.toLowerCase()} "${verb}" button`);
  const target = ord ? (alts.shift() as string) : `"${cap(label)}" button`;
  return { kind: "click", target, alts, button: "left", clicks: 1, holdKeys: [] };
}

function clickStep(verb: string, target: string, holdKeys: Modifier[]): Step {
  const v = verb.toLowerCase().replace(/[- ]/g, "");
  const button = v.startsWith("right") ? "right" : v.startsWith("middle") ? "middle" : "left";
  const clicks = v.startsWith("double") ? 2 : v.startsWith("triple") ? 3 : 1;
  const t = target.trim().replace(/\s+(?:once)$/i, "");
  const twice = /\s+twice$/i.exec(t);
  const step: Step = {
    kind: "click",
    target: twice ? t.slice(0, twice.index) : t,
    button,
    clicks: twice ? 2 : clicks,
    holdKeys,
  };
  // ticking a box changes its pixels, not the screen's text
  if (/^(?:check|uncheck|tick|untick|toggle|select|choose)$/.test(v)) step.toggle = true;
  if (/^(?:check|uncheck|tick|untick)$/.test(v)) {
    step.on = !v.startsWith("un");
    // "the box to agree to the terms", "the box that says Remember me": the checkbox by that label
    const box =
      /^(?:the\s+|a\s+)?(?:check\s*)?box\s+(?:to|for|that\s+says|saying|labell?ed|next\s+to|beside)\s+(.+)$/i.exec(
        step.target,
      );
    if (box?.[1]) step.target = `${box[1].replace(/^(?:say|says)\s+/i, "")} checkbox`;
  }
  return step;
}

/** Parses a whole instruction into steps. */
export function parseInstruction(instruction: string): Step[] {
  return resolvePronouns(splitSteps(instruction).flatMap(parseStep));
}

const PRONOUN = /^(?:it|that|this|them|that one|this one|that button|that link|the button|the link)$/i;

/** "scroll until you find Contact support, then click it": "it" is what the step before named. */
export function resolvePronouns(steps: Step[]): Step[] {
  let subject: string | null = null;
  return steps.map((st) => {
    let out = st;
    if ((st.kind === "click" || st.kind === "move") && PRONOUN.test(st.target.trim())) {
      out = subject
        ? { ...st, target: subject }
        : { kind: "unknown", text: describeStep(st), why: `cannot tell what "${st.target}" means` };
    }
    switch (out.kind) {
      case "click":
      case "move":
        subject = out.target;
        break;
      case "scroll-until":
      case "wait-until":
        subject = `"${out.text}"`;
        break;
      case "choose":
        subject = `"${out.option}"`;
        break;
      case "type":
        subject = out.target;
        break;
      default:
        break;
    }
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// Planning

export type Grounder = (description: string) => GroundResult;

/** What the planner may read of the screen besides grounding (absent in pure tests: no checks then). */
export interface ScreenReader {
  /** every line of text OCR read */
  lines(): string[];
  /** digest of the screen's text */
  signature(): string;
  /** pixel fingerprint of a box (a checkbox's look), null without pixels */
  region(box: Box): string | null;
  /** whether a small control (radio, checkbox) looks selected; null when it cannot tell */
  controlOn?(box: Box): boolean | null;
  /** whether an input box is a dropdown (a select: an arrow at its right end) */
  isDropdown?(box: Box): boolean;
}

export interface PlanOptions {
  maxActions: number;
  /** allowed action types (done and fail are always allowed); undefined = all */
  tools?: string[];
  width: number;
  height: number;
  /** where to resume: step index and actions of that step already executed */
  resume?: { step: number; action: number };
  /** the screen, for recording what the next screenshot must show (verification) */
  screen?: ScreenReader;
  /** a step being retried after its verification failed (typing replaces, a click is tried again) */
  retry?: { step: number; t: number };
  /** attempts so far of a repeating step (scroll until, wait to finish, open a dropdown) */
  again?: { step: number; n: number; sig?: string };
  /** where the previous action happened: of a step's other names, the nearest match is meant */
  near?: { x: number; y: number } | null;
}

export interface Plan {
  actions: Action[];
  status: "continue" | "done" | "fail";
  reasoning: string;
  /** how far the instruction got once these actions run: next step and action offset within it */
  next: { step: number; action: number };
  /** number of groundings performed */
  groundings: number;
  /** what the next screenshot must show (the last step these actions complete) */
  check?: Check;
  /** a repeating step's attempts, when the plan stops on it */
  again?: { step: number; n: number; sig?: string };
  /** a retried step still in progress */
  retry?: { step: number; t: number };
}

function quoteFor(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Does this step need the screenshot's text (OCR)? */
export function stepNeedsScreen(s: Step): boolean {
  switch (s.kind) {
    case "click":
    case "move":
    case "clear":
    case "drag":
    case "wait-until":
    case "if":
    case "choose":
    case "scroll-until":
    case "wait-finish":
    case "open-app":
    case "window":
      return true;
    case "type":
      return true; // the typed text is read back from the next screenshot
    case "scroll":
      return s.target !== null || s.edge === true;
    default:
      return false;
  }
}

class NotFound extends Error {
  constructor(
    readonly description: string,
    readonly result: GroundResult,
  ) {
    super(result.reason);
  }
}

class GiveUp extends Error {}

type CheckSpec = Omit<Check, "step" | "t" | "w">;

interface StepResult {
  actions: Action[];
  /** what the next screenshot must show once the step's last action ran */
  check?: CheckSpec;
  /** the step is not finished: run it again on the next screenshot */
  again?: boolean;
  /** said in the reasoning */
  note?: string;
  /** the screen's signature when a repeating step stops on it (scroll to the edge: did it move?) */
  sig?: string;
}

const PLACEHOLDER_CLICK: Action = { action_type: "click", params: { x: 0, y: 0, button: "left", clicks: 1 } };

/** Actions of one step. Throws NotFound when an element it names is not on the screen. */
function stepActions(
  step: Step,
  ground: Grounder,
  clamp: (x: number, y: number) => { x: number; y: number },
  skip: number,
  ctx: {
    screen?: ScreenReader;
    tries: number;
    attempts: number;
    width: number;
    height: number;
    near?: { x: number; y: number } | null;
    /** the signature recorded by this step's previous attempt */
    lastSig?: string;
  },
): StepResult {
  const find = (descriptions: string[]): GroundResult & { x: number; y: number } => {
    let first: { d: string; g: GroundResult } | null = null;
    const hits: (GroundResult & { x: number; y: number })[] = [];
    for (const d of descriptions) {
      const g = ground(d);
      if (g.found && g.x !== null && g.y !== null) {
        const p = clamp(g.x, g.y);
        hits.push({ ...g, x: p.x, y: p.y });
        // the name the user wrote wins; other names are compared by where the last action was
        if (hits.length === 1 && d === descriptions[0]) break;
        continue;
      }
      if (!first) first = { d, g };
    }
    const near = ctx.near;
    if (near && hits.length > 1)
      hits.sort((a, b) => Math.hypot(a.x - near.x, a.y - near.y) - Math.hypot(b.x - near.x, b.y - near.y));
    if (hits[0]) return hits[0];
    if (!first) throw new Error("nothing to look for");
    throw new NotFound(first.d, first.g);
  };
  const changeCheck = (
    g: GroundResult,
    d: string,
    submit = false,
    toggle = false,
    on?: boolean,
  ): CheckSpec | undefined => {
    const sc = ctx.screen;
    if (!sc || g.element === "input") return undefined; // focusing a field changes nothing to read
    const c: CheckSpec = { k: "change", d, sig: sc.signature() };
    // a control's look: the control itself, or the label's row with room for a box or radio beside it
    const b = g.bbox;
    const look =
      b && g.element === "control"
        ? b
        : b && toggle
          ? { x: Math.max(0, b.x - 3 * b.height), y: b.y, width: b.width + 6 * b.height, height: b.height }
          : null;
    if (look) {
      const reg = sc.region(look);
      if (reg) {
        c.reg = reg;
        c.regBox = look;
      }
      // a control seen beside its label must end in the state asked for (selected, ticked, unticked)
      if (on !== undefined && g.element === "control") c.on = on;
    }
    if (submit) {
      c.submit = true;
      if (sc.lines().some((l) => ERRORS.test(l))) c.err = true;
    }
    return c;
  };
  switch (step.kind) {
    case "click": {
      const g = find([step.target, ...(step.alts ?? [])]);
      const params: Extract<Action, { action_type: "click" }>["params"] = {
        x: g.x,
        y: g.y,
        button: step.button,
        clicks: step.clicks,
      };
      if (step.holdKeys.length) params.hold_keys = step.holdKeys;
      const check =
        step.button === "left" ? changeCheck(g, describeStep(step), step.submit, step.toggle, step.on) : undefined;
      return { actions: [{ action_type: "click", params }], check };
    }
    case "move": {
      const g = find([step.target]);
      return { actions: [{ action_type: "move", params: { x: g.x, y: g.y } }] };
    }
    case "type": {
      const replace = step.replace || ctx.tries > 0;
      const typing: Action = { action_type: "type_text", params: { text: step.text } };
      const selectAll: Action = { action_type: "key_combo", params: { keys: ["ctrl", "a"] } };
      const check = (box: Box | null): CheckSpec | undefined =>
        ctx.screen
          ? {
              k: "typed",
              d: describeStep(step),
              text: step.text,
              box,
              secret: step.secret,
              exact: step.exact || replace,
            }
          : undefined;
      if (!step.target) return { actions: [typing], check: check(null) };
      const tail = replace ? [selectAll, typing] : [typing];
      if (skip >= 1) {
        // the field was clicked on an earlier screenshot: find it again for the check, without failing
        const again = [step.target, ...(step.alts ?? [])].map((t) => ground(withFieldRole(t))).find((r) => r.found);
        return {
          actions: [PLACEHOLDER_CLICK, ...tail],
          check: check(again?.element === "input" ? again.bbox : null),
        };
      }
      const g = find([step.target, ...(step.alts ?? [])].map(withFieldRole));
      if (g.element === "input" && g.bbox && ctx.screen?.isDropdown?.(g.bbox)) {
        // a dropdown ("change the language to German"): open its list, then pick the option from it
        const box = g.bbox;
        const click = (x: number, y: number): Action => ({
          action_type: "click",
          params: { ...clamp(x, y), button: "left", clicks: 1 },
        });
        if (ctx.attempts === 0)
          return { actions: [click(g.x, g.y)], again: true, note: `opened the ${step.target} list` };
        const opt = ground(`"${step.text}"`);
        if (!opt.found || opt.x === null || opt.y === null) {
          // the list may open a moment late on a busy machine: look again (twice) before giving up
          if (ctx.attempts < 3)
            return {
              actions: [{ action_type: "wait", params: { seconds: 1 } }],
              again: true,
              note: `"${step.text}" is not in the ${step.target} list yet`,
            };
          throw new NotFound(step.text, opt);
        }
        const inBox = opt.x >= box.x && opt.x <= box.x + box.width && opt.y >= box.y && opt.y <= box.y + box.height;
        if (inBox)
          return { actions: [{ action_type: "key_press", params: { keys: ["escape"] } }], note: "already chosen" };
        return {
          actions: [click(opt.x, opt.y)],
          check: ctx.screen ? { k: "typed", d: describeStep(step), text: step.text, box, exact: false } : undefined,
        };
      }
      return {
        actions: [{ action_type: "click", params: { x: g.x, y: g.y, button: "left", clicks: 1 } }, ...tail],
        check: check(g.element === "input" ? g.bbox : null),
      };
    }
    case "clear": {
      const tail: Action[] = [
        { action_type: "key_combo", params: { keys: ["ctrl", "a"] } },
        { action_type: "key_press", params: { keys: ["backspace"] } },
      ];
      if (skip >= 1) return { actions: [PLACEHOLDER_CLICK, ...tail] };
      const g = find([withFieldRole(step.target)]);
      return { actions: [{ action_type: "click", params: { x: g.x, y: g.y, button: "left", clicks: 1 } }, ...tail] };
    }
    case "keys": {
      if (step.combo) {
        const out: Action[] = [];
        for (let i = 0; i < step.repeat; i++) out.push({ action_type: "key_combo", params: { keys: step.keys } });
        return { actions: out };
      }
      const keys: string[] = [];
      for (let i = 0; i < step.repeat; i++) keys.push(...step.keys);
      // Enter submits (a search, a form, a shell command): the screen must change
      const sc = ctx.screen;
      const check: CheckSpec | undefined =
        sc && keys.includes("enter") ? { k: "change", d: describeStep(step), sig: sc.signature() } : undefined;
      return { actions: [{ action_type: "key_press", params: { keys: keys.slice(0, 100) } }], check };
    }
    case "scroll": {
      const vertical = step.direction === "up" || step.direction === "down";
      const sign = step.direction === "up" || step.direction === "right" ? 1 : -1;
      const clicks = Math.max(1, Math.min(100, Math.round(step.amount))) * sign;
      const params: Extract<Action, { action_type: "scroll" }>["params"] = {
        clicks,
        direction: vertical ? "vertical" : "horizontal",
      };
      if (step.edge && ctx.screen) {
        // to the very top or bottom: scroll until the screen stops changing (at most 8 times)
        const sig = ctx.screen.signature();
        if (ctx.attempts > 0 && (sig === ctx.lastSig || ctx.attempts >= 8))
          return { actions: [], note: `the page no longer moves ${step.direction}` };
        const mid = clamp(ctx.width / 2, ctx.height / 2);
        return {
          actions: [{ action_type: "scroll", params: { ...params, x: mid.x, y: mid.y } }],
          again: true,
          sig,
          note: `scrolling ${step.direction} to the ${step.direction === "up" ? "top" : "bottom"}`,
        };
      }
      if (step.target) {
        const g = find([step.target]);
        params.x = g.x;
        params.y = g.y;
      } else if (step.anchor === "center") {
        const mid = clamp(ctx.width / 2, ctx.height / 2);
        params.x = mid.x;
        params.y = mid.y;
      }
      return { actions: [{ action_type: "scroll", params }] };
    }
    case "scroll-until": {
      const g = ground(`"${step.text}"`);
      // found after scrolling: the page may still be moving (smooth scrolling); act once it stands still
      const sig = ctx.screen?.signature();
      if (g.found && ctx.attempts > 0 && sig !== undefined && sig !== ctx.lastSig && ctx.attempts < 18)
        return {
          actions: [{ action_type: "wait", params: { seconds: 0.5 } }],
          again: true,
          sig,
          note: `"${step.text}" is visible; waiting for the page to stand still`,
        };
      if (g.found) return { actions: [], note: `"${step.text}" is visible` };
      if (ctx.attempts >= 15) throw new GiveUp(`"${step.text}" did not show after scrolling ${ctx.attempts} times`);
      const sc = ctx.screen;
      const mid = clamp(ctx.width / 2, ctx.height / 2);
      return {
        // over the middle of the screen: where the pointer was (a tab strip, a panel) may not scroll the page
        actions: [
          {
            action_type: "scroll",
            params: { clicks: step.direction === "up" ? 5 : -5, direction: "vertical", x: mid.x, y: mid.y },
          },
        ],
        again: true,
        sig,
        check: sc
          ? { k: "scroll", d: `scroll ${step.direction} until "${step.text}" shows`, sig: sc.signature() }
          : undefined,
        note: `"${step.text}" is not visible yet: scrolling ${step.direction}`,
      };
    }
    case "wait-finish": {
      const busy = ctx.screen?.lines().find((l) => BUSY.test(l));
      if (!busy && ctx.attempts >= 1)
        return { actions: [], note: `the ${step.subject} shows no sign of work in progress` };
      if (!busy) {
        // work that was just started may show its progress a moment later: look again once
        return {
          actions: [{ action_type: "wait", params: { seconds: 1 } }],
          again: true,
          note: `no sign of work on the ${step.subject} yet; looking again`,
        };
      }
      if (ctx.attempts >= 60) throw new GiveUp(`the ${step.subject} is still in progress ("${busy}")`);
      // varying waits: an unchanged screen with the same action three times is a stall to the run loop
      return {
        actions: [{ action_type: "wait", params: { seconds: 1 + (ctx.attempts % 3) } }],
        again: true,
        note: `waiting for the ${step.subject}: "${quoteFor(busy)}"`,
      };
    }
    case "choose": {
      // a button that says it ("Choose Team", "Select Pro") before the bare word (often a heading)
      const verbal = ["Choose", "Select", "Pick", "Get"]
        .map((v) => ground(`"${v} ${step.option}"`))
        .find((r) => r.found && r.x !== null && r.y !== null);
      const option = verbal ?? ground(step.option);
      if (option.found && option.x !== null && option.y !== null) {
        // a radio or checkbox beside the option's label: click the control and check it is selected
        // (not in a list this step just opened: its entries are what to click)
        const control = verbal || ctx.attempts > 0 ? null : ground(`the radio next to "${step.option}"`);
        const target = control?.found && control.element === "control" ? control : option;
        const p = clamp(target.x ?? option.x, target.y ?? option.y);
        return {
          actions: [{ action_type: "click", params: { x: p.x, y: p.y, button: "left", clicks: 1 } }],
          check: changeCheck(target, describeStep(step), false, true, target === control ? true : undefined),
        };
      }
      // not on the screen: open the list it is in, then pick it from the next screenshot
      if (!step.group || ctx.attempts >= 2) throw new NotFound(step.option, option);
      const group = [`${step.group} dropdown`, step.group].map((d) => ground(d)).find((r) => r.found);
      if (!group || group.x === null || group.y === null) throw new NotFound(step.option, option);
      const p = clamp(group.x, group.y);
      return {
        actions: [{ action_type: "click", params: { x: p.x, y: p.y, button: "left", clicks: 1 } }],
        again: true,
        note: `opened the ${step.group} list to find "${step.option}"`,
      };
    }
    case "open-app": {
      // a launcher on the screen (panel, menu) first, else the desktop's keyboard shortcut
      const names =
        step.app === "terminal"
          ? ["Terminal"]
          : step.app === "file manager"
            ? ["Files", "File Manager"]
            : ["Text Editor", "Editor"];
      // a launcher is a label of its own ("Terminal"), not the word inside an address or a sentence
      const labels = new Set((ctx.screen?.lines() ?? []).map((l) => normalizeText(l)));
      const g = names
        .filter((n) => labels.has(normalizeText(n)))
        .map((n) => ground(`"${n}"`))
        .find((r) => r.found && r.x !== null && r.y !== null);
      const sc = ctx.screen;
      // opened means its window shows: for a terminal, a shell prompt
      const check: CheckSpec | undefined = sc
        ? {
            k: "change",
            d: `open the ${step.app}`,
            sig: sc.signature(),
            // (the cursor block after the prompt may read as one more character)
            ...(step.app === "terminal" ? { expect: TERMINAL_PROMPT } : {}),
          }
        : undefined;
      if (g && g.x !== null && g.y !== null) {
        const p = clamp(g.x, g.y);
        return { actions: [{ action_type: "click", params: { x: p.x, y: p.y, button: "left", clicks: 1 } }], check };
      }
      // the managed desktop's shortcuts (machines/desktop-apps.ts, served by GET /v1/models managed_machine)
      const keys =
        step.app === "terminal"
          ? ["ctrl", "alt", "t"]
          : step.app === "file manager"
            ? ["super", "e"]
            : ["ctrl", "alt", "e"];
      return { actions: [{ action_type: "key_combo", params: { keys } }], check };
    }
    case "window": {
      // the window list (openbox's client list, machines/desktop-apps.ts) names every window by its title
      const names = windowTitles(step.title);
      if (ctx.attempts === 0)
        return {
          actions: [{ action_type: "key_combo", params: { keys: ["ctrl", "alt", "w"] } }],
          again: true,
          note: `opened the window list to find "${step.title}"`,
        };
      const hit = names.map((n) => ground(`"${n}"`)).find((r) => r.found && r.x !== null && r.y !== null);
      if (!hit || hit.x === null || hit.y === null) {
        if (ctx.attempts < 2)
          return { actions: [{ action_type: "wait", params: { seconds: 1 } }], again: true, note: "the window list" };
        throw new NotFound(`the ${step.title} window`, hit ?? ground(`"${names[0]}"`));
      }
      const p = clamp(hit.x, hit.y);
      const sc = ctx.screen;
      return {
        actions: [{ action_type: "click", params: { x: p.x, y: p.y, button: "left", clicks: 1 } }],
        // switched means its title shows (the window's title bar) and the list is gone
        check: sc
          ? {
              k: "change",
              d: describeStep(step),
              sig: sc.signature(),
              // (Chromium draws its own frame without its name: a changed screen is what shows there)
              ...(names[0] === "Chromium"
                ? {}
                : { expect: names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|") }),
            }
          : undefined,
      };
    }
    case "drag": {
      const a = find([step.from]);
      const b = find([step.to]);
      return { actions: [{ action_type: "drag", params: { x1: a.x, y1: a.y, x2: b.x, y2: b.y, button: "left" } }] };
    }
    case "open-url":
      // focus the browser's address bar, type the address, go
      return {
        actions: [
          { action_type: "key_combo", params: { keys: ["ctrl", "l"] } },
          { action_type: "type_text", params: { text: step.url } },
          { action_type: "key_press", params: { keys: ["enter"] } },
        ],
      };
    case "wait":
      return { actions: [{ action_type: "wait", params: { seconds: Math.max(0, Math.min(60, step.seconds)) } }] };
    default:
      return { actions: [] };
  }
}

/** A shell prompt on screen ("user@host:~$", "$"), the cursor block after it possibly read as a character. */
export const TERMINAL_PROMPT = String.raw`(?:@[\w.-]+\s?:\s?\S*\s*[$#](?:\s?\S)?\s*$|^\s*[$#](?:\s?\S)?\s*$)`;

/** What a window is called in the window list: the desktop's programs by their names, else the title given. */
export function windowTitles(title: string): string[] {
  const t = title.replace(/^(?:the|my)\s+/i, "").trim();
  if (/^(?:text\s+)?editor$|^mousepad$|^notepad$/i.test(t)) return ["Mousepad"];
  if (/^(?:terminal|xterm|shell|console)$/i.test(t)) return ["xterm", "XTerm"];
  if (/^(?:file\s*manager|files|pcmanfm)$/i.test(t)) return ["PCManFM", "File Manager"];
  if (/^(?:web\s+)?browser$|^chromium$|^chrome$/i.test(t)) return ["Chromium"];
  return [unquote(t) ?? t];
}

/** "Search" as a typing target means the Search field, not a Search button. */
function withFieldRole(target: string): string {
  return /\b(?:field|box|input|bar|area|textbox|textarea|editor|entry)\b/i.test(target) || /['"“‘`]/.test(target)
    ? target
    : `${target} field`;
}

function conditionHolds(ground: Grounder, text: string, negate: boolean): { holds: boolean; g: GroundResult } {
  const g = ground(`"${text}"`);
  return { holds: negate ? !g.found : g.found, g };
}

export function describeStep(s: Step): string {
  switch (s.kind) {
    case "click":
      return `${s.button === "right" ? "right-click" : s.clicks === 2 ? "double-click" : s.clicks === 3 ? "triple-click" : "click"} ${s.target}`;
    case "move":
      return `hover over ${s.target}`;
    case "type":
      if (s.secret) return s.target ? `type the ${s.target} (hidden) into ${s.target}` : "type a hidden value";
      return s.target
        ? `${s.replace ? "set" : "type"} "${quoteFor(s.text)}" ${s.replace ? "as" : "into"} ${s.target}`
        : `type "${quoteFor(s.text)}"`;
    case "open-url":
      return `open ${s.url}`;
    case "clear":
      return `clear ${s.target}`;
    case "keys":
      return `press ${s.keys.join(s.combo ? "+" : ", ")}${s.repeat > 1 ? ` x${s.repeat}` : ""}`;
    case "scroll":
      return `scroll ${s.direction} ${s.amount}${s.target ? ` over ${s.target}` : ""}`;
    case "scroll-until":
      return `scroll ${s.direction} until "${s.text}" shows`;
    case "wait-finish":
      return `wait for the ${s.subject} to finish`;
    case "choose":
      return `choose "${s.option}"${s.group ? ` as the ${s.group}` : ""}`;
    case "open-app":
      return `open the ${s.app}`;
    case "window":
      return `switch to the ${s.title} window`;
    case "drag":
      return `drag ${s.from} to ${s.to}`;
    case "wait":
      return `wait ${s.seconds} s`;
    case "wait-until":
      return `wait until "${s.text}" ${s.negate ? "is gone" : "is visible"}`;
    case "if":
      return `if "${s.text}" is ${s.negate ? "not " : ""}visible: ${describeStep(s.action)}`;
    case "done":
      return "done";
    case "fail":
      return `fail (${s.message})`;
    case "unknown":
      return s.text;
  }
}

/**
 * Plans the actions for the current screenshot. Goal checks ("done when X appears", "fail if X is
 * visible") are evaluated first. Then steps run in order from the resume point until one names an
 * element that is not on this screenshot (it may appear only after the earlier actions run: stop
 * there with status continue; if it is the first step, fail), a step must look at the next
 * screenshot (scroll until, wait to finish, open a list), max_actions is reached, or the steps end.
 */
export function planActions(steps: Step[], ground: Grounder, opts: PlanOptions): Plan {
  let groundings = 0;
  const g: Grounder = (d) => {
    groundings++;
    return ground(d);
  };
  const clamp = (x: number, y: number) => ({
    x: Math.max(0, Math.min(opts.width - 1, Math.round(x))),
    y: Math.max(0, Math.min(opts.height - 1, Math.round(y))),
  });
  const start = opts.resume ?? { step: 0, action: 0 };
  const fail = (code: string, message: string, next = start): Plan => ({
    actions: [{ action_type: "fail", params: { code, message: message.slice(0, 2000) } }],
    status: "fail",
    reasoning: message,
    next,
    groundings,
  });

  const unknown = steps.find((s) => s.kind === "unknown");
  if (unknown?.kind === "unknown") {
    return fail(
      "UNSUPPORTED_INSTRUCTION",
      `The local engine cannot interpret the step "${quoteFor(unknown.text)}" (${unknown.why}). It understands click, double-click, right-click, type, press, scroll, drag, hover, wait, field-value lists (sign up with the name X and email Y), change X to Y, choose X as Y, scroll until X shows, wait for X to finish, use the terminal to ..., and done/fail conditions.`,
    );
  }
  if (steps.length === 0) return fail("UNSUPPORTED_INSTRUCTION", "The instruction holds no step to carry out.");

  // 1. goal checks against the current screenshot
  for (const s of steps) {
    if (s.kind !== "if" || !isGoalCheck(s)) continue;
    const { holds, g: res } = conditionHolds(g, s.text, s.negate);
    if (!holds) continue;
    const seen = s.negate ? `"${s.text}" is not visible` : `"${res.matchedText ?? s.text}" is visible`;
    if (s.action.kind === "done") {
      return {
        actions: [{ action_type: "done", params: {} }],
        status: "done",
        reasoning: `Goal reached: ${seen}.`,
        next: { step: steps.length, action: 0 },
        groundings,
      };
    }
    if (s.action.kind === "fail")
      return fail(
        "GOAL_FAILED",
        `${s.action.message === "the instruction says to fail" ? "The instruction says to fail" : s.action.message} when ${s.negate ? `"${s.text}" is not visible` : `"${s.text}" is visible`}: ${seen}.`,
        { step: steps.length, action: 0 },
      );
  }
  const hasGoal = steps.some(isGoalCheck);

  const actions: Action[] = [];
  const done: string[] = [];
  const allowed = opts.tools ? new Set([...opts.tools, "done", "fail"]) : null;
  let check: Check | undefined;
  let i = start.step;
  let skip = start.action;
  for (; i < steps.length; i++, skip = 0) {
    const step = steps[i];
    if (!step || isGoalCheck(step)) continue;
    if (step.kind === "done") {
      if (actions.length < opts.maxActions) {
        actions.push({ action_type: "done", params: {} });
        return {
          actions,
          status: "done",
          reasoning: `${summary(done)}Done as instructed.`,
          next: { step: steps.length, action: 0 },
          groundings,
        };
      }
      break;
    }
    if (step.kind === "fail") {
      if (actions.length === 0) return fail("INSTRUCTED_FAIL", step.message, { step: steps.length, action: 0 });
      break;
    }
    if (step.kind === "wait-until") {
      const { holds } = conditionHolds(g, step.text, step.negate);
      if (holds) {
        done.push(describeStep(step));
        continue;
      }
      if (actions.length === 0 && opts.maxActions >= 1 && (!allowed || allowed.has("wait"))) {
        return {
          actions: [{ action_type: "wait", params: { seconds: 1 } }],
          status: "continue",
          reasoning: `Waiting: "${step.text}" is ${step.negate ? "still visible" : "not visible yet"}.`,
          next: { step: i, action: 0 },
          groundings,
        };
      }
      break;
    }
    // a step that looks at the next screenshot runs first in a call (it needs the screen as it is)
    const repeating =
      step.kind === "scroll-until" ||
      step.kind === "wait-finish" ||
      step.kind === "choose" ||
      step.kind === "window" ||
      (step.kind === "scroll" && step.edge === true);
    if (repeating && actions.length > 0) break;
    let res: StepResult;
    let effective: Step = step;
    if (step.kind === "if") {
      const { holds } = conditionHolds(g, step.text, step.negate);
      if (!holds) {
        done.push(`skipped "${describeStep(step.action)}" (condition not met)`);
        continue;
      }
      effective = step.action;
    }
    const tries = opts.retry?.step === i ? opts.retry.t : 0;
    const attempts = opts.again?.step === i ? opts.again.n : 0;
    try {
      res = stepActions(effective, g, clamp, skip, {
        screen: opts.screen,
        tries,
        attempts,
        width: opts.width,
        height: opts.height,
        near: opts.near,
        lastSig: opts.again?.step === i ? opts.again.sig : undefined,
      });
    } catch (e) {
      if (e instanceof GiveUp) {
        if (actions.length === 0)
          return fail("TASK_NOT_COMPLETED", `${e.message}; the task is not done.`, { step: i, action: 0 });
        break;
      }
      if (!(e instanceof NotFound)) throw e;
      // the previous call's actions may still be taking effect (a page loading, a scroll settling):
      // look once more before giving up
      const settled = opts.again?.step === i && opts.again.n >= 1;
      if (actions.length === 0 && opts.resume && !settled && opts.screen && (!allowed || allowed.has("wait"))) {
        return {
          actions: [{ action_type: "wait", params: { seconds: 1 } }],
          status: "continue",
          reasoning: `${summary(done)}"${quoteFor(e.description)}" is not on the screen yet; looking again in 1 s.`,
          next: { step: i, action: skip },
          groundings,
          again: { step: i, n: 1 },
          retry: tries > 0 ? { step: i, t: tries } : undefined,
        };
      }
      if (actions.length === 0) {
        const near = e.result.matchedText ? ` (closest text: "${e.result.matchedText}")` : "";
        return fail(
          "ELEMENT_NOT_FOUND",
          `Could not find "${quoteFor(e.description)}" on the screen${near}; nothing was clicked.`,
          { step: i, action: skip },
        );
      }
      return {
        actions,
        status: "continue",
        reasoning: `${summary(done)}"${quoteFor(e.description)}" is not on this screenshot yet; the remaining steps continue after these actions.`,
        next: { step: i, action: skip },
        groundings,
        check,
      };
    }
    const stepActs = res.actions.slice(skip);
    const banned = allowed ? stepActs.find((a) => !allowed.has(a.action_type)) : undefined;
    if (banned) {
      if (actions.length === 0)
        return fail(
          "TOOL_NOT_ALLOWED",
          `The step "${describeStep(effective)}" needs a ${banned.action_type} action, which the tools list does not allow.`,
        );
      break;
    }
    const room = opts.maxActions - actions.length;
    if (room <= 0) break;
    const retry = tries > 0 ? { step: i, t: tries } : undefined;
    if (stepActs.length > room) {
      actions.push(...stepActs.slice(0, room));
      return {
        actions,
        status: "continue",
        reasoning: `${summary(done)}${describeStep(effective)} (partly; max_actions reached).`,
        next: { step: i, action: skip + room },
        groundings,
        retry,
      };
    }
    actions.push(...stepActs);
    check = res.check ? { ...res.check, step: i, t: tries, w: 0 } : undefined;
    if (res.again) {
      return {
        actions,
        status: "continue",
        reasoning: `${summary(done)}${res.note ?? describeStep(effective)}.`,
        next: { step: i, action: 0 },
        groundings,
        check,
        again: { step: i, n: attempts + 1, ...(res.sig ? { sig: res.sig } : {}) },
      };
    }
    done.push(res.note ? `${describeStep(effective)} (${res.note})` : describeStep(effective));
  }

  if (i >= steps.length && actions.length === 0) {
    // nothing left to do on this call
    if (hasGoal) {
      if (!allowed || allowed.has("wait")) {
        return {
          actions: [{ action_type: "wait", params: { seconds: 1 } }],
          status: "continue",
          reasoning: `${summary(done)}All steps are done; waiting for the goal condition.`,
          next: { step: steps.length, action: 0 },
          groundings,
        };
      }
      return {
        actions: [],
        status: "continue",
        reasoning: `${summary(done)}All steps are done; the goal condition is not met yet.`,
        next: { step: steps.length, action: 0 },
        groundings,
      };
    }
    return {
      actions: [{ action_type: "done", params: {} }],
      status: "done",
      reasoning: `${summary(done)}All steps of the instruction are done${opts.screen ? " and their effects were seen on the screen" : ""}.`,
      next: { step: steps.length, action: 0 },
      groundings,
    };
  }
  return {
    actions,
    status: "continue",
    reasoning: `${summary(done)}`.trim() || "Nothing to do.",
    next: { step: i, action: 0 },
    groundings,
    check,
  };
}

function summary(done: string[]): string {
  return done.length ? `${done.map((d) => d.charAt(0).toUpperCase() + d.slice(1)).join("; ")}. ` : "";
}

// ---------------------------------------------------------------------------------------------
// Progress across calls (multi-step instructions over several screenshots)

/** Short digest of the instruction, so a progress marker only resumes the same instruction. */
export function instructionKey(instruction: string): string {
  return createHash("sha256").update(instruction.trim().replace(/\s+/g, " ").toLowerCase()).digest("hex").slice(0, 10);
}

const MARKER_RE = /\[local-progress (\d+)\.(\d+)\/(\d+) ([0-9a-f]{10})\]/;

export function progressMarker(instruction: string, next: { step: number; action: number }, total: number): string {
  return `[local-progress ${next.step}.${next.action}/${total} ${instructionKey(instruction)}]`;
}

/** The resume point recorded in the newest trajectory step's reasoning, for this instruction. */
export function resumePoint(
  instruction: string,
  reasonings: (string | undefined)[],
  total: number,
): { step: number; action: number } | null {
  const last = reasonings[reasonings.length - 1];
  if (!last) return null;
  const m = MARKER_RE.exec(last);
  if (!m || m[4] !== instructionKey(instruction) || Number(m[3]) !== total) return null;
  return { step: Number(m[1]), action: Number(m[2]) };
}
