// The deterministic sandbox engine (DECISIONS "Engines": test keys in managed mode; same input, same
// output, no network). It reads simple imperative instructions, so that tests and integrations can
// drive it on purpose, and answers anything else with a deterministic click.
//
// predict(): the instruction is split into steps at newlines, ";" and "then" (", then", "and then");
// quoted text is never split. Each step, case-insensitive:
//   click 100,200 | click at 100 200 | click (100, 200)     -> click   (also double/triple/right/
//                                                              middle/left click ...)
//   click <words>  (e.g. "click the Save button")          -> click at a point derived from the words
//   move to 10,20 | hover 10 20 | hover over <words>       -> move
//   drag 10,20 to 30,40 | drag from 10 20 to 30 40         -> drag
//   type 'abc' | type "abc" | type abc                     -> type_text (quotes keep text exactly)
//   type 'abc' into <words>                                -> click on <words>, then type_text
//   press enter | press ctrl+s | press tab 3 times         -> key_press / key_combo ("+" makes a chord;
//                                                              "press tab enter" presses both in turn)
//   scroll down | scroll up 5 | scroll left 2 at 10,20     -> scroll (default 3 clicks; down/left are
//                                                              negative)
//   wait | wait 2 | wait 2.5 seconds | sleep 1             -> wait (default 1 s, at most 60 s)
//   done | finish | complete                               -> done (status "done"; later steps ignored)
//   anything else                                          -> click at a point derived from a SHA-256
//                                                              hash of the step and the image size
// If the instruction, outside quoted text, contains the word "impossible" or "fail" (also fails,
// failed, failure), the answer is a single fail action (status "fail").
// Coordinates outside the screenshot give a fail action naming them (status "fail"); nothing is
// clamped, so client scaling bugs show.
// Directives: words starting with "#" are removed before reading the instruction (the run
// directives #steps=N, #fail, #human, #timeout belong to the run executor and mean nothing here).
// Two act here: `#error` makes predict and ground fail with 502 PREDICTION_FAILED,
// and `#slow=MS` waits MS milliseconds (at most 30,000; the abort signal cuts it short) before
// answering, to exercise timeouts and event-stream keepalives.
// The tools filter removes actions of types not listed (done and fail always pass); if nothing is
// left, the answer is one fail action with params.code TOOL_NOT_ALLOWED. At most maxActions actions
// are returned (the first ones).
//
// ground(): a point derived from the description's hash, at the centre of an 80x24 box kept inside
// the image, confidence 0.80..0.9999. A description that contains "x,y" inside the image is found
// there. found=false (x, y, bbox null, confidence 0) when the description contains "nonexistent",
// "non-existent", "does not exist" or "not on screen".
// ocr(): one line of words "Sandbox OCR <W>x<H> <first 8 hex of SHA-256 of the image bytes>".
// Usage tokens: input = 85 per image seen + ceil(characters of text input / 4); output = 16 + 12 per
// action (predict), 12 (ground).
import { createHash } from "node:crypto";
import { type Action, ActionSchema, FILTERABLE_TOOLS, normalizeKey, outOfScreen } from "@cua/base/actions/action";
import { CoreError } from "@cua/base/errors";
import { SANDBOX_MODEL_ID } from "./models.ts";
import type {
  DecodedImage,
  Engine,
  GroundInput,
  GroundOutput,
  OcrOutput,
  PredictInput,
  PredictOutput,
} from "./types.ts";

const IMAGE_TOKENS = 85;
const SLOW_MAX_MS = 30_000;
const DEFAULT_SCROLL_CLICKS = 3;
const GROUND_BOX = { width: 80, height: 24 };
const NOT_FOUND_RE = /\b(?:nonexistent|non-existent|does not exist|not on screen)\b/i;
const FAIL_RE = /\b(?:impossible|fail|fails|failed|failure)\b/i;

interface Screen {
  width: number;
  height: number;
}

function hashInts(text: string): [number, number, number] {
  const h = createHash("sha256").update(text).digest();
  return [h.readUInt32BE(0), h.readUInt32BE(4), h.readUInt32BE(8)];
}

/** A point inside the screen derived from text (same text and size, same point). */
export function sandboxPoint(text: string, screen: Screen): { x: number; y: number } {
  const [a, b] = hashInts(`${text.trim().toLowerCase()}|${screen.width}x${screen.height}`);
  return { x: a % screen.width, y: b % screen.height };
}

interface Directives {
  text: string;
  error: boolean;
  slowMs: number;
}

function directives(instruction: string): Directives {
  let error = false;
  let slowMs = 0;
  const text = instruction
    .replace(/(^|\s)#([A-Za-z_]+)(?:=(\S*))?/g, (_m, lead: string, name: string, value?: string) => {
      const n = name.toLowerCase();
      if (n === "error") error = true;
      if (n === "slow") slowMs = Math.min(SLOW_MAX_MS, Math.max(0, Number.parseInt(value ?? "0", 10) || 0));
      return lead;
    })
    .trim();
  return { text, error, slowMs };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason ?? new Error("aborted"));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Splits at newlines, ";" and "then", never inside quotes. */
function splitSteps(text: string): string[] {
  const quoted: string[] = [];
  const masked = text.replace(/"[^"]*"|'[^']*'/g, (q) => {
    quoted.push(q);
    return `\uE000${quoted.length - 1}\uE000`;
  });
  return masked
    .split(/\n|;|,\s*(?:and\s+)?then\s+|\s+(?:and\s+)?then\s+/i)
    .map((s) => s.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => quoted[Number(i)]!).trim())
    .filter((s) => s.length > 0);
}

const POINT = String.raw`\(?\s*(\d+)\s*(?:,|\s)\s*(\d+)\s*\)?`;
const RE = {
  clickAt: new RegExp(String.raw`^(?:(double|triple|right|middle|left)[\s-]?)?click(?:\s+(?:at|on))?\s+${POINT}$`, "i"),
  clickOn: /^(?:(double|triple|right|middle|left)[\s-]?)?click(?:\s+(?:at|on))?(?:\s+(.*))?$/i,
  moveAt: new RegExp(
    String.raw`^(?:move(?:\s+(?:the\s+)?(?:mouse|pointer|cursor))?(?:\s+to)?|hover(?:\s+(?:over|at|on))?)\s+${POINT}$`,
    "i",
  ),
  hoverOn: /^hover(?:\s+(?:over|on))?\s+(.+)$/i,
  drag: new RegExp(String.raw`^drag(?:\s+from)?\s+${POINT}\s+to\s+${POINT}$`, "i"),
  type: /^(?:type|write)\s+(?:"([^"]*)"|'([^']*)'|(.+?))(?:\s+(?:into|in)\s+(.+))?$/i,
  press: /^(?:press|hit|hotkey)\s+(.+?)(?:\s+(\d+)\s+times?)?$/i,
  scroll: new RegExp(
    String.raw`^scroll\s+(up|down|left|right)(?:\s+(\d+))?(?:\s*(?:times|clicks|notches|steps))?(?:\s+at\s+${POINT})?$`,
    "i",
  ),
  wait: /^(?:wait|sleep|pause)(?:\s+(?:for\s+)?(\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)?)?$/i,
  done: /^(?:done|finish(?:ed)?|complete(?:d)?|task complete)\.?$/i,
};

function parseKeys(spec: string): { combo: boolean; keys: string[] } | null {
  const s = spec.trim();
  const one = normalizeKey(s);
  if (one) return { combo: false, keys: [one] };
  if (s.includes("+")) {
    const parts = s.endsWith("++") ? [...s.slice(0, -2).split("+"), "+"] : s.split("+");
    const keys = parts.map((p) => normalizeKey(p.trim()));
    if (keys.length >= 2 && keys.every((k): k is string => k !== null))
      return { combo: true, keys: [...new Set(keys)] };
    return null;
  }
  const keys = s.split(/[\s,]+/).map((p) => normalizeKey(p));
  if (keys.length > 0 && keys.every((k): k is string => k !== null)) return { combo: false, keys };
  return null;
}

interface Step {
  actions: unknown[];
  note: string;
}

function clickParams(kind: string | undefined, x: number, y: number) {
  const k = kind?.toLowerCase();
  return {
    x,
    y,
    button: k === "right" ? "right" : k === "middle" ? "middle" : "left",
    clicks: k === "double" ? 2 : k === "triple" ? 3 : 1,
  };
}

function interpretStep(step: string, screen: Screen): Step {
  const clickAt = RE.clickAt.exec(step);
  if (clickAt) {
    const m = clickAt;
    const p = clickParams(m[1], Number(m[2]), Number(m[3]));
    return { actions: [{ action_type: "click", params: p }], note: `click at (${p.x}, ${p.y})` };
  }
  const moveAt = RE.moveAt.exec(step);
  if (moveAt) {
    const m = moveAt;
    const p = { x: Number(m[1]), y: Number(m[2]) };
    return { actions: [{ action_type: "move", params: p }], note: `move to (${p.x}, ${p.y})` };
  }
  const drag = RE.drag.exec(step);
  if (drag) {
    const m = drag;
    const p = { x1: Number(m[1]), y1: Number(m[2]), x2: Number(m[3]), y2: Number(m[4]) };
    return { actions: [{ action_type: "drag", params: p }], note: `drag (${p.x1}, ${p.y1}) -> (${p.x2}, ${p.y2})` };
  }
  const type = RE.type.exec(step);
  if (type) {
    const m = type;
    const text = m[1] ?? m[2] ?? m[3] ?? "";
    const target = m[4];
    const actions: unknown[] = [];
    let note = `type ${JSON.stringify(text)}`;
    if (target) {
      const p = sandboxPoint(target, screen);
      actions.push({ action_type: "click", params: clickParams(undefined, p.x, p.y) });
      note = `click "${target}" at (${p.x}, ${p.y}), then ${note}`;
    }
    if (text.length > 0) actions.push({ action_type: "type_text", params: { text } });
    return { actions, note };
  }
  const press = RE.press.exec(step);
  if (press) {
    const m = press;
    const times = Math.min(100, Math.max(1, Number(m[2] ?? 1)));
    const keys = parseKeys(m[1]!);
    if (keys) {
      if (keys.combo) {
        const combo = { action_type: "key_combo", params: { keys: keys.keys } };
        return { actions: Array.from({ length: times }, () => combo), note: `press ${keys.keys.join("+")}` };
      }
      const seq: string[] = [];
      for (let i = 0; i < times && seq.length + keys.keys.length <= 100; i++) seq.push(...keys.keys);
      return { actions: [{ action_type: "key_press", params: { keys: seq } }], note: `press ${seq.join(" ")}` };
    }
  }
  const scroll = RE.scroll.exec(step);
  if (scroll) {
    const m = scroll;
    const dir = m[1]!.toLowerCase();
    const n = Math.min(100, Math.max(1, Number(m[2] ?? DEFAULT_SCROLL_CLICKS)));
    const clicks = dir === "down" || dir === "left" ? -n : n;
    const direction = dir === "left" || dir === "right" ? "horizontal" : "vertical";
    const anchor = m[3] !== undefined ? { x: Number(m[3]), y: Number(m[4]) } : {};
    return {
      actions: [{ action_type: "scroll", params: { clicks, direction, ...anchor } }],
      note: `scroll ${dir} ${n}`,
    };
  }
  const wait = RE.wait.exec(step);
  if (wait) {
    const m = wait;
    const seconds = Math.min(60, Number(m[1] ?? 1));
    return { actions: [{ action_type: "wait", params: { seconds } }], note: `wait ${seconds} s` };
  }
  if (RE.done.test(step)) return { actions: [{ action_type: "done", params: {} }], note: "done" };
  const hoverOn = RE.hoverOn.exec(step);
  if (hoverOn) {
    const m = hoverOn;
    const p = sandboxPoint(m[1]!, screen);
    return { actions: [{ action_type: "move", params: p }], note: `hover "${m[1]}" at (${p.x}, ${p.y})` };
  }
  const clickOn = RE.clickOn.exec(step);
  if (clickOn) {
    const m = clickOn;
    const target = m[2]?.trim() || step;
    const pt = sandboxPoint(target, screen);
    const p = clickParams(m[1], pt.x, pt.y);
    return { actions: [{ action_type: "click", params: p }], note: `click "${target}" at (${p.x}, ${p.y})` };
  }
  const pt = sandboxPoint(step, screen);
  return {
    actions: [{ action_type: "click", params: clickParams(undefined, pt.x, pt.y) }],
    note: `no recognised command in "${step}": click at (${pt.x}, ${pt.y})`,
  };
}

const failAction = (message: string, code?: string): Action => ({
  action_type: "fail",
  params: code ? { code, message } : { message },
});

/** The sandbox's answer to an instruction (exported for tests and the docs' examples). */
export function planSandboxActions(
  instruction: string,
  screen: Screen,
  opts: { maxActions?: number; tools?: string[] } = {},
): { actions: Action[]; reasoning: string } {
  const { text } = directives(instruction);
  const unquoted = text.replace(/"[^"]*"|'[^']*'/g, " ");
  let actions: Action[] = [];
  const notes: string[] = [];
  if (FAIL_RE.test(unquoted)) {
    actions = [failAction("The sandbox treats instructions that mention 'impossible' or 'fail' as impossible.")];
    notes.push("the instruction asks for the impossible: fail");
  } else {
    const steps = splitSteps(text);
    if (steps.length === 0) steps.push("");
    for (const step of steps) {
      const r = interpretStep(step, screen);
      notes.push(r.note);
      const parsed: Action[] = [];
      let bad: string | null = null;
      for (const raw of r.actions) {
        const p = ActionSchema.safeParse(raw);
        if (!p.success) {
          bad = `"${step}" does not make a valid action`;
          break;
        }
        const outside = outOfScreen(p.data, screen)[0];
        if (outside) {
          bad = `"${step}": ${outside.message}`;
          break;
        }
        parsed.push(p.data);
      }
      if (bad) {
        actions.push(failAction(bad));
        notes.push(`fail: ${bad}`);
        break;
      }
      actions.push(...parsed);
      if (actions.at(-1)?.action_type === "done") break;
    }
  }
  if (opts.tools) {
    const allowed = new Set<string>([...opts.tools, "done", "fail"]);
    const kept = actions.filter((a) => allowed.has(a.action_type));
    const dropped = actions.filter((a) => !allowed.has(a.action_type)).map((a) => a.action_type);
    if (dropped.length > 0) notes.push(`tools filter removed ${[...new Set(dropped)].join(", ")}`);
    actions =
      kept.length > 0 || actions.length === 0
        ? kept
        : [
            failAction(
              `The tools filter allows none of the needed actions (${[...new Set(dropped)].join(", ")}).`,
              "TOOL_NOT_ALLOWED",
            ),
          ];
  }
  if (opts.maxActions !== undefined && actions.length > opts.maxActions) {
    notes.push(`kept the first ${opts.maxActions} of ${actions.length} actions`);
    actions = actions.slice(0, Math.max(0, opts.maxActions));
  }
  return { actions, reasoning: `Sandbox: ${notes.join("; ")}.` };
}

function statusOf(actions: Action[]): PredictOutput["status"] {
  const last = actions.at(-1)?.action_type;
  return last === "done" ? "done" : last === "fail" ? "fail" : "continue";
}

const textTokens = (...parts: (string | undefined)[]) => Math.ceil(parts.reduce((n, p) => n + (p?.length ?? 0), 0) / 4);

export function createSandboxEngine(): Engine {
  return {
    id: "sandbox",

    async predict(input: PredictInput): Promise<PredictOutput> {
      input.signal?.throwIfAborted();
      const d = directives(input.instruction);
      if (d.error) throw new CoreError("PREDICTION_FAILED", "The sandbox engine failed on purpose (#error directive).");
      await sleep(d.slowMs, input.signal);
      const screen = { width: input.screenshot.width, height: input.screenshot.height };
      const tools = input.tools?.filter((t) => (FILTERABLE_TOOLS as readonly string[]).includes(t));
      const { actions, reasoning } = planSandboxActions(input.instruction, screen, {
        maxActions: input.maxActions,
        tools: input.tools ? tools : undefined,
      });
      const images = 1 + input.trajectory.filter((s) => s.screenshot !== null).length;
      return {
        actions,
        reasoning,
        status: statusOf(actions),
        usage: {
          input_tokens: IMAGE_TOKENS * images + textTokens(input.instruction, input.systemPrompt, input.instructions),
          output_tokens: 16 + 12 * actions.length,
        },
        model: SANDBOX_MODEL_ID,
      };
    },

    async ground(input: GroundInput): Promise<GroundOutput> {
      input.signal?.throwIfAborted();
      const d = directives(input.description);
      if (d.error) throw new CoreError("PREDICTION_FAILED", "The sandbox engine failed on purpose (#error directive).");
      await sleep(d.slowMs, input.signal);
      const { width, height } = input.screenshot;
      const usage = { input_tokens: IMAGE_TOKENS + textTokens(input.description), output_tokens: 12 };
      if (NOT_FOUND_RE.test(d.text)) return { found: false, x: null, y: null, bbox: null, confidence: 0, usage };
      const bw = Math.min(GROUND_BOX.width, width);
      const bh = Math.min(GROUND_BOX.height, height);
      const [a, b, c] = hashInts(`${d.text.toLowerCase()}|${width}x${height}`);
      const at = /(\d+)\s*,\s*(\d+)/.exec(d.text);
      let cx: number;
      let cy: number;
      if (at && Number(at[1]) < width && Number(at[2]) < height) {
        cx = Number(at[1]);
        cy = Number(at[2]);
      } else {
        cx = Math.floor(bw / 2) + (a % (width - bw + 1));
        cy = Math.floor(bh / 2) + (b % (height - bh + 1));
      }
      const bx = Math.min(Math.max(0, cx - Math.floor(bw / 2)), width - bw);
      const by = Math.min(Math.max(0, cy - Math.floor(bh / 2)), height - bh);
      return {
        found: true,
        x: cx,
        y: cy,
        bbox: { x: bx, y: by, width: bw, height: bh },
        confidence: Math.round((0.8 + (c % 2000) / 10_000) * 10_000) / 10_000,
        usage,
      };
    },

    async ocr(image: DecodedImage, signal?: AbortSignal): Promise<OcrOutput> {
      signal?.throwIfAborted();
      const digest = createHash("sha256").update(image.bytes).digest("hex").slice(0, 8);
      const texts = ["Sandbox", "OCR", `${image.width}x${image.height}`, digest];
      const charW = 8;
      const h = Math.min(16, image.height);
      const y = Math.min(10, image.height - h);
      const words: OcrOutput["words"] = [];
      let x = 10;
      for (const text of texts) {
        const left = Math.min(x, image.width - 1);
        const w = Math.max(1, Math.min(text.length * charW, image.width - left));
        words.push({ text, confidence: 0.99, bbox: { x: left, y, width: w, height: h } });
        x += text.length * charW + charW;
      }
      const first = words[0]!.bbox;
      const last = words.at(-1)!.bbox;
      const text = texts.join(" ");
      return {
        text,
        words,
        lines: [{ text, bbox: { x: first.x, y, width: last.x + last.width - first.x, height: h } }],
      };
    },
  };
}
