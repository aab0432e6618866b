// Pure mapping between Anthropic computer-use actions and our Actions, both ways.
//
// Anthropic sends one action per tool_use. With the single `computer` tool (computer_2025xxxx) the action is
// input.action; with the computer toolset (computer_toolset_20260801) the action is the tool_use name and the
// input has no `action` field. Both are normalised to { action, input } here.
//
//   Anthropic                               ours
//   left_click {coordinate, text?}          click {x, y, button: left, clicks: 1, hold_keys?}
//   double_click / triple_click             click clicks 2 / 3
//   right_click / middle_click              click button right / middle
//   mouse_move {coordinate}                 move {x, y}
//   left_click_drag {start_coordinate, coordinate, text?}   drag {x1, y1, x2, y2, button: left, hold_keys?}
//   left_mouse_down, mouse_move..., left_mouse_up           drag (from the pointer to the last move)
//   type {text}                             type_text {text}
//   key {text: "ctrl+s", repeat?}           key_combo {keys: [ctrl, s]} (repeated `repeat` times)
//   key {text: "Return", repeat?}           key_press {keys: [enter]} (key repeated `repeat` times)
//   key {text: "ctrl+a BackSpace"}          key_combo [ctrl, a], then key_press [backspace]
//   (back: key_press [a, b] -> key {text: "a b"}; key_combo [ctrl, s] -> key {text: "ctrl+s"})
//   scroll {coordinate?, scroll_direction, scroll_amount}   scroll {clicks: +up/-down or +right/-left, direction, x?, y?}
//   wait {duration}                         wait {seconds}
//   screenshot, zoom, cursor_position       no action: the model wants to look again (status continue)
//   hold_key, modified scroll               unsupported
import { type Action, WAIT_MAX_SECONDS } from "@cua/base/actions/action";
import type { MappedStep, ProposedAction } from "./batch.ts";
import { parseHoldKeys, parseXdotoolKeys, toXdotoolKey } from "./keys.ts";
import type { Point } from "./pointer.ts";

export interface AnthropicComputerCall {
  action: string;
  input: Record<string, unknown>;
}

export interface FromAnthropicContext {
  /** model space -> caller space */
  toCaller: (p: Point) => Point;
  /** pointer position in caller space before the first call, when known */
  cursor?: Point;
}

const OBSERVE = new Set(["screenshot", "zoom", "cursor_position"]);

const CLICKS: Record<string, { button: "left" | "right" | "middle"; clicks: number }> = {
  left_click: { button: "left", clicks: 1 },
  double_click: { button: "left", clicks: 2 },
  triple_click: { button: "left", clicks: 3 },
  right_click: { button: "right", clicks: 1 },
  middle_click: { button: "middle", clicks: 1 },
};

function readPoint(v: unknown): Point | null {
  if (!Array.isArray(v) || v.length !== 2) return null;
  const [x, y] = v;
  if (typeof x !== "number" || typeof y !== "number" || !Number.isFinite(x) || !Number.isFinite(y)) return null;
  return { x, y };
}

function positiveInt(v: unknown, fallback: number | null): number | null {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1) return null;
  return v;
}

function withHold(params: Record<string, unknown>, hold: string[]): Record<string, unknown> {
  return hold.length > 0 ? { ...params, hold_keys: hold } : params;
}

/** Maps one response's calls in order. The pointer position is tracked so calls without a coordinate work. */
export function fromAnthropicCalls(calls: AnthropicComputerCall[], ctx: FromAnthropicContext): MappedStep[] {
  const steps: MappedStep[] = [];
  let cursor = ctx.cursor;
  const unsupported = (source: string, reason: string): MappedStep => ({ kind: "unsupported", source, reason });

  const pointOrCursor = (raw: unknown): Point | "missing" | "invalid" => {
    if (raw === undefined || raw === null) return cursor ?? "missing";
    const p = readPoint(raw);
    return p ? ctx.toCaller(p) : "invalid";
  };

  for (let i = 0; i < calls.length; i++) {
    const call = calls[i] as AnthropicComputerCall;
    const { action, input } = call;
    if (OBSERVE.has(action)) {
      steps.push({ kind: "observe", source: action });
      continue;
    }
    const click = CLICKS[action];
    if (click) {
      const at = pointOrCursor(input.coordinate);
      const hold = parseHoldKeys(input.text as string | undefined);
      if (at === "invalid") steps.push(unsupported(action, "coordinate is not an [x, y] pair of numbers"));
      else if (at === "missing") steps.push(unsupported(action, "no coordinate and the pointer position is unknown"));
      else if (hold === null) steps.push(unsupported(action, `unknown modifier keys "${String(input.text)}"`));
      else {
        cursor = at;
        steps.push({
          kind: "actions",
          source: action,
          actions: [
            {
              action_type: "click",
              params: withHold({ x: at.x, y: at.y, button: click.button, clicks: click.clicks }, hold),
            },
          ],
        });
      }
      continue;
    }
    switch (action) {
      case "mouse_move": {
        const p = readPoint(input.coordinate);
        if (!p) {
          steps.push(unsupported(action, "coordinate is not an [x, y] pair of numbers"));
          break;
        }
        cursor = ctx.toCaller(p);
        steps.push({ kind: "actions", source: action, actions: [{ action_type: "move", params: { ...cursor } }] });
        break;
      }
      case "left_click_drag": {
        const end = readPoint(input.coordinate);
        const start = pointOrCursor(input.start_coordinate);
        const hold = parseHoldKeys(input.text as string | undefined);
        if (!end || start === "invalid") steps.push(unsupported(action, "coordinates are not [x, y] pairs of numbers"));
        else if (start === "missing")
          steps.push(unsupported(action, "no start_coordinate and the pointer position is unknown"));
        else if (hold === null) steps.push(unsupported(action, `unknown modifier keys "${String(input.text)}"`));
        else {
          const to = ctx.toCaller(end);
          cursor = to;
          steps.push({
            kind: "actions",
            source: action,
            actions: [
              {
                action_type: "drag",
                params: withHold({ x1: start.x, y1: start.y, x2: to.x, y2: to.y, button: "left" }, hold),
              },
            ],
          });
        }
        break;
      }
      case "left_mouse_down": {
        // Only a complete press-move-release inside this answer can be expressed (as one drag).
        const from = pointOrCursor(input.coordinate);
        let j = i + 1;
        let to: Point | null = null;
        while (j < calls.length && calls[j]?.action === "mouse_move") {
          const p = readPoint(calls[j]?.input.coordinate);
          if (!p) break;
          to = ctx.toCaller(p);
          j++;
        }
        if (from === "invalid" || from === "missing" || !to || calls[j]?.action !== "left_mouse_up") {
          steps.push(
            unsupported(action, "a mouse-button hold is only supported as a complete press, move and release"),
          );
          break;
        }
        steps.push({
          kind: "actions",
          source: action,
          actions: [{ action_type: "drag", params: { x1: from.x, y1: from.y, x2: to.x, y2: to.y, button: "left" } }],
        });
        cursor = to;
        i = j;
        break;
      }
      case "type": {
        if (typeof input.text !== "string" || input.text.length === 0) {
          steps.push(unsupported(action, "text is missing"));
          break;
        }
        steps.push({
          kind: "actions",
          source: action,
          actions: [{ action_type: "type_text", params: { text: input.text } }],
        });
        break;
      }
      case "key": {
        const chords = typeof input.text === "string" ? parseXdotoolKeys(input.text) : null;
        const repeat = positiveInt(input.repeat, 1);
        if (!chords) {
          steps.push(unsupported(action, `unknown key "${String(input.text)}"`));
          break;
        }
        if (repeat === null || repeat > 100) {
          steps.push(unsupported(action, "repeat must be an integer from 1 to 100"));
          break;
        }
        const actions = keyActions(chords, repeat);
        if (typeof actions === "string") steps.push(unsupported(action, actions));
        else steps.push({ kind: "actions", source: action, actions });
        break;
      }
      case "scroll": {
        const dir = input.scroll_direction;
        const amount = positiveInt(input.scroll_amount, null);
        const at = input.coordinate === undefined || input.coordinate === null ? cursor : readPoint(input.coordinate);
        const hold = parseHoldKeys(input.text as string | undefined);
        if (dir !== "up" && dir !== "down" && dir !== "left" && dir !== "right") {
          steps.push(unsupported(action, "scroll_direction must be up, down, left or right"));
        } else if (amount === null) {
          steps.push(unsupported(action, "scroll_amount must be a positive integer"));
        } else if (input.coordinate !== undefined && input.coordinate !== null && !at) {
          steps.push(unsupported(action, "coordinate is not an [x, y] pair of numbers"));
        } else if (hold === null || hold.length > 0) {
          steps.push(unsupported(action, "scrolling while holding keys is not supported"));
        } else {
          const vertical = dir === "up" || dir === "down";
          const sign = dir === "up" || dir === "right" ? 1 : -1;
          const params: Record<string, unknown> = {
            clicks: sign * amount,
            direction: vertical ? "vertical" : "horizontal",
          };
          if (at) {
            const p = input.coordinate === undefined || input.coordinate === null ? at : ctx.toCaller(at);
            params.x = p.x;
            params.y = p.y;
            cursor = p;
          }
          steps.push({ kind: "actions", source: action, actions: [{ action_type: "scroll", params }] });
        }
        break;
      }
      case "wait": {
        const d = input.duration;
        if (typeof d !== "number" || !Number.isFinite(d) || d < 0) {
          steps.push(unsupported(action, "duration must be a non-negative number of seconds"));
          break;
        }
        // Our wait holds at most WAIT_MAX_SECONDS; a longer wait is shortened, the model looks again after it.
        const seconds = Math.min(d, WAIT_MAX_SECONDS);
        steps.push({ kind: "actions", source: action, actions: [{ action_type: "wait", params: { seconds } }] });
        break;
      }
      default:
        steps.push(unsupported(action, `the ${action} action has no equivalent in this API`));
    }
  }
  return steps;
}

/** Chords from one `key` call -> key_press (runs of single keys) and key_combo (chords) actions. */
export function keyActions(chords: string[][], repeat: number): ProposedAction[] | string {
  const expanded: string[][] = [];
  for (let r = 0; r < repeat; r++) expanded.push(...chords);
  const out: ProposedAction[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length > 0) out.push({ action_type: "key_press", params: { keys: run } });
    run = [];
  };
  for (const chord of expanded) {
    if (chord.length === 1) {
      run.push(chord[0] as string);
      if (run.length === 100) flush();
      continue;
    }
    if (chord.length > 8) return `a chord of ${chord.length} keys is more than the 8 a key_combo holds`;
    flush();
    out.push({ action_type: "key_combo", params: { keys: chord } });
  }
  flush();
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Ours -> Anthropic (trajectory replay).

export interface ToAnthropicContext {
  /** caller space -> model space */
  toModel: (p: Point) => Point;
  /** pointer position in caller space, for a scroll without an anchor */
  cursor?: Point;
  /** screen centre in caller space, the last resort for a scroll anchor */
  centre: Point;
}

const pair = (p: Point): [number, number] => [p.x, p.y];

/** The Anthropic calls that reproduce one of our actions; [] for done and fail (they are text, not calls). */
export function toAnthropicCalls(action: Action, ctx: ToAnthropicContext): AnthropicComputerCall[] {
  const at = (x: number, y: number) => pair(ctx.toModel({ x, y }));
  const holdOf = (keys: string[] | undefined) => (keys && keys.length > 0 ? { text: keys.join("+") } : {});
  switch (action.action_type) {
    case "click": {
      const p = action.params;
      const input = { coordinate: at(p.x, p.y), ...holdOf(p.hold_keys) };
      if (p.button === "left" && p.clicks <= 3) {
        const name = p.clicks === 1 ? "left_click" : p.clicks === 2 ? "double_click" : "triple_click";
        return [{ action: name, input }];
      }
      const name = p.button === "right" ? "right_click" : p.button === "middle" ? "middle_click" : "left_click";
      return Array.from({ length: p.clicks }, () => ({ action: name, input }));
    }
    case "move":
      return [{ action: "mouse_move", input: { coordinate: at(action.params.x, action.params.y) } }];
    case "drag": {
      const p = action.params;
      return [
        {
          action: "left_click_drag",
          input: { start_coordinate: at(p.x1, p.y1), coordinate: at(p.x2, p.y2), ...holdOf(p.hold_keys) },
        },
      ];
    }
    case "type_text":
      return [{ action: "type", input: { text: action.params.text } }];
    case "key_press":
      // xdotool presses a space-separated sequence one key after another
      return [{ action: "key", input: { text: action.params.keys.map(toXdotoolKey).join(" ") } }];
    case "key_combo":
      return [{ action: "key", input: { text: action.params.keys.map(toXdotoolKey).join("+") } }];
    case "scroll": {
      const p = action.params;
      const horizontal = p.direction === "horizontal";
      const dir = horizontal ? (p.clicks >= 0 ? "right" : "left") : p.clicks >= 0 ? "up" : "down";
      const anchor = p.x !== undefined && p.y !== undefined ? { x: p.x, y: p.y } : (ctx.cursor ?? ctx.centre);
      return [
        {
          action: "scroll",
          input: { coordinate: at(anchor.x, anchor.y), scroll_direction: dir, scroll_amount: Math.abs(p.clicks) },
        },
      ];
    }
    case "wait":
      return [{ action: "wait", input: { duration: action.params.seconds } }];
    default:
      return [];
  }
}
