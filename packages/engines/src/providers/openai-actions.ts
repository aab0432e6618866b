// Pure mapping between OpenAI computer-tool actions (Responses API `computer_call`) and our Actions, both ways.
//
//   OpenAI                                  ours
//   click {button: left|right, x, y, keys?} click {x, y, button, clicks: 1, hold_keys?}
//   click {button: wheel}                   click button middle
//   click {button: back | forward}          key_combo [alt, left] / [alt, right] (the browser's back / forward)
//   double_click {x, y, keys?}              click clicks 2
//   drag {path: [p0, ..., pn], keys?}       drag from p0 to pn (intermediate points dropped)
//   keypress {keys: [k]}                    key_press [k]
//   keypress {keys: [k1..kn]}, 2..8 keys    key_combo (a chord; letters in it lower-cased: "CTRL","C" is ctrl+c);
//                                           with a repeated key or more than 8 keys, key_press
//   move {x, y}                             move
//   scroll {x, y, scroll_x, scroll_y}       scroll: clicks = -round(scroll_y / 100) vertical (OpenAI's positive
//                                           scroll_y moves content down the page, ours is positive up) and
//                                           round(scroll_x / 100) horizontal; a non-zero distance is at least
//                                           one click; both axes give two scroll actions; at most 100 clicks.
//   type {text}                             type_text
//   wait {}                                 wait {seconds: 2}
//   screenshot {}                           no action: the model wants to look again
//
// Back to OpenAI (trajectory replay): the reverse, with one wheel click = 100 px of scroll_x / scroll_y.
import type { Action } from "@cua/base/actions/action";
import type { MappedStep, ProposedAction } from "./batch.ts";
import { canonicalKey, toOpenAIKey } from "./keys.ts";
import type { Point } from "./pointer.ts";

/** Pixels of scroll_x / scroll_y per wheel click. */
export const PIXELS_PER_SCROLL_CLICK = 100;
/** Seconds our wait lasts for OpenAI's duration-less wait. */
export const OPENAI_WAIT_SECONDS = 2;

export interface OpenAIComputerAction {
  type: string;
  [field: string]: unknown;
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function holdKeys(v: unknown): string[] | null {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return null;
  const out: string[] = [];
  for (const k of v) {
    const c = typeof k === "string" ? canonicalKey(k) : null;
    if (!c) return null;
    out.push(c);
  }
  return out;
}

function withHold(params: Record<string, unknown>, hold: string[]): Record<string, unknown> {
  return hold.length > 0 ? { ...params, hold_keys: hold } : params;
}

export function scrollClicks(pixels: number): number {
  if (pixels === 0) return 0;
  const clicks = Math.max(1, Math.round(Math.abs(pixels) / PIXELS_PER_SCROLL_CLICK));
  return Math.sign(pixels) * Math.min(100, clicks);
}

/** Maps the actions of one response in order. `toCaller` converts model-space points (identity for OpenAI). */
export function fromOpenAIActions(
  actions: OpenAIComputerAction[],
  toCaller: (p: Point) => Point = (p) => p,
): MappedStep[] {
  const steps: MappedStep[] = [];
  const act = (source: string, ...list: ProposedAction[]): MappedStep => ({ kind: "actions", source, actions: list });
  const unsupported = (source: string, reason: string): MappedStep => ({ kind: "unsupported", source, reason });

  for (const a of actions) {
    const type = typeof a?.type === "string" ? a.type : "(missing type)";
    const x = num(a.x);
    const y = num(a.y);
    const at = x !== null && y !== null ? toCaller({ x, y }) : null;
    switch (type) {
      case "screenshot":
        steps.push({ kind: "observe", source: type });
        break;
      case "click":
      case "double_click": {
        const hold = holdKeys(a.keys);
        const button = type === "double_click" ? "left" : a.button;
        if (button === "back" || button === "forward") {
          steps.push(
            act(type, { action_type: "key_combo", params: { keys: ["alt", button === "back" ? "left" : "right"] } }),
          );
          break;
        }
        const ours = button === "left" ? "left" : button === "right" ? "right" : button === "wheel" ? "middle" : null;
        if (!at) steps.push(unsupported(type, "x and y must be numbers"));
        else if (!ours) steps.push(unsupported(type, `unknown button "${String(a.button)}"`));
        else if (hold === null) steps.push(unsupported(type, "keys must be a list of key names"));
        else {
          const clicks = type === "double_click" ? 2 : 1;
          steps.push(
            act(type, { action_type: "click", params: withHold({ x: at.x, y: at.y, button: ours, clicks }, hold) }),
          );
        }
        break;
      }
      case "drag": {
        const path = Array.isArray(a.path) ? (a.path as unknown[]) : null;
        const pts = path?.map((p) => {
          const px = num((p as { x?: unknown })?.x);
          const py = num((p as { y?: unknown })?.y);
          return px !== null && py !== null ? toCaller({ x: px, y: py }) : null;
        });
        const hold = holdKeys(a.keys);
        if (!pts || pts.length < 2 || pts.some((p) => p === null)) {
          steps.push(unsupported(type, "path must hold at least two {x, y} points"));
        } else if (hold === null) steps.push(unsupported(type, "keys must be a list of key names"));
        else {
          const from = pts[0] as Point;
          const to = pts[pts.length - 1] as Point;
          steps.push(
            act(type, {
              action_type: "drag",
              params: withHold({ x1: from.x, y1: from.y, x2: to.x, y2: to.y, button: "left" }, hold),
            }),
          );
        }
        break;
      }
      case "keypress": {
        const keys = holdKeys(a.keys);
        if (!keys || keys.length === 0) {
          steps.push(unsupported(type, `unknown or missing keys ${JSON.stringify(a.keys)}`));
          break;
        }
        const distinct = new Set(keys).size === keys.length;
        if (keys.length === 1 || !distinct || keys.length > 8) {
          steps.push(act(type, { action_type: "key_press", params: { keys } }));
        } else {
          // A chord names keys, not characters: OpenAI writes letters upper-case ("CTRL", "C") and adds SHIFT
          // itself when it means it, so letters in a chord are the lower-case key.
          const chord = keys.map((k) => (/^[A-Z]$/.test(k) ? k.toLowerCase() : k));
          steps.push(act(type, { action_type: "key_combo", params: { keys: chord } }));
        }
        break;
      }
      case "move": {
        const hold = holdKeys(a.keys);
        if (!at) steps.push(unsupported(type, "x and y must be numbers"));
        else if (hold === null || hold.length > 0)
          steps.push(unsupported(type, "moving while holding keys is not supported"));
        else steps.push(act(type, { action_type: "move", params: { x: at.x, y: at.y } }));
        break;
      }
      case "scroll": {
        const sx = num(a.scroll_x) ?? 0;
        const sy = num(a.scroll_y) ?? 0;
        const hold = holdKeys(a.keys);
        if (hold === null || hold.length > 0) {
          steps.push(unsupported(type, "scrolling while holding keys is not supported"));
          break;
        }
        if (sx === 0 && sy === 0) {
          steps.push(unsupported(type, "scroll_x and scroll_y are both 0"));
          break;
        }
        const anchor = at ? { x: at.x, y: at.y } : {};
        const list: ProposedAction[] = [];
        if (sy !== 0)
          list.push({ action_type: "scroll", params: { clicks: -scrollClicks(sy), direction: "vertical", ...anchor } });
        if (sx !== 0)
          list.push({
            action_type: "scroll",
            params: { clicks: scrollClicks(sx), direction: "horizontal", ...anchor },
          });
        steps.push(act(type, ...list));
        break;
      }
      case "type": {
        if (typeof a.text !== "string" || a.text.length === 0) steps.push(unsupported(type, "text is missing"));
        else steps.push(act(type, { action_type: "type_text", params: { text: a.text } }));
        break;
      }
      case "wait":
        steps.push(act(type, { action_type: "wait", params: { seconds: OPENAI_WAIT_SECONDS } }));
        break;
      default:
        steps.push(unsupported(type, `the ${type} action has no equivalent in this API`));
    }
  }
  return steps;
}

// ---------------------------------------------------------------------------------------------------------
// Ours -> OpenAI (trajectory replay).

export interface ToOpenAIContext {
  /** pointer position, for a scroll without an anchor */
  cursor?: Point;
  /** screen centre, the last resort for a scroll anchor */
  centre: Point;
}

export function toOpenAIActions(action: Action, ctx: ToOpenAIContext): OpenAIComputerAction[] {
  switch (action.action_type) {
    case "click": {
      const p = action.params;
      const keys = p.hold_keys && p.hold_keys.length > 0 ? p.hold_keys.map(toOpenAIKey) : null;
      const base = { x: p.x, y: p.y, ...(keys ? { keys } : {}) };
      if (p.button === "left") {
        const out: OpenAIComputerAction[] = [];
        for (let i = 0; i < Math.floor(p.clicks / 2); i++) out.push({ type: "double_click", ...base, keys });
        if (p.clicks % 2 === 1) out.push({ type: "click", button: "left", ...base });
        return out;
      }
      const button = p.button === "right" ? "right" : "wheel";
      return Array.from({ length: p.clicks }, () => ({ type: "click", button, ...base }));
    }
    case "move":
      return [{ type: "move", x: action.params.x, y: action.params.y }];
    case "drag": {
      const p = action.params;
      const keys = p.hold_keys && p.hold_keys.length > 0 ? { keys: p.hold_keys.map(toOpenAIKey) } : {};
      return [
        {
          type: "drag",
          path: [
            { x: p.x1, y: p.y1 },
            { x: p.x2, y: p.y2 },
          ],
          ...keys,
        },
      ];
    }
    case "type_text":
      return [{ type: "type", text: action.params.text }];
    case "key_press":
      return action.params.keys.map((k) => ({ type: "keypress", keys: [toOpenAIKey(k)] }));
    case "key_combo":
      return [{ type: "keypress", keys: action.params.keys.map(toOpenAIKey) }];
    case "scroll": {
      const p = action.params;
      const anchor = p.x !== undefined && p.y !== undefined ? { x: p.x, y: p.y } : (ctx.cursor ?? ctx.centre);
      const px = p.clicks * PIXELS_PER_SCROLL_CLICK;
      return [
        {
          type: "scroll",
          x: anchor.x,
          y: anchor.y,
          scroll_x: p.direction === "horizontal" ? px : 0,
          scroll_y: p.direction === "horizontal" ? 0 : -px,
        },
      ];
    }
    case "wait":
      return [{ type: "wait" }];
    default:
      return [];
  }
}

/** A one-line description of an action, for replaying steps whose screenshot is gone. */
export function describeAction(action: Action): string {
  const p = action.params as Record<string, unknown>;
  switch (action.action_type) {
    case "click":
      return `${p.clicks === 2 ? "double-" : p.clicks === 3 ? "triple-" : ""}clicked ${p.button} at (${p.x}, ${p.y})`;
    case "move":
      return `moved the pointer to (${p.x}, ${p.y})`;
    case "drag":
      return `dragged from (${p.x1}, ${p.y1}) to (${p.x2}, ${p.y2})`;
    case "type_text":
      return `typed ${JSON.stringify(p.text)}`;
    case "key_press":
      return `pressed ${(p.keys as string[]).join(", ")}`;
    case "key_combo":
      return `pressed ${(p.keys as string[]).join("+")}`;
    case "scroll":
      return `scrolled ${p.direction === "horizontal" ? "horizontally" : "vertically"} by ${p.clicks} clicks`;
    case "wait":
      return `waited ${p.seconds} s`;
    case "done":
      return "reported the task complete";
    case "fail":
      return `reported failure${p.message ? `: ${p.message}` : ""}`;
    default:
      return (action as Action).action_type;
  }
}
