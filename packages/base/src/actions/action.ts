// The Action table of SPEC "Resources and their fields / Action": ten action types, their params,
// defaults and limits. Returned by predict and session predict, accepted in trajectories, produced
// by the pyautogui parser and by every engine (engines pass their answers through
// validateEngineActions before anything reaches a caller).
//
// Decisions where SPEC/DECISIONS are silent (documented in docs too):
// - params objects are strict: an unknown param is a validation error.
// - coordinates are integers >= 0 and <= 32767 (the X11 coordinate limit); against a known screen
//   they must lie inside it: 0 <= x < width, 0 <= y < height.
// - click.clicks 1..10; scroll.clicks a non-zero integer in -100..100; scroll.x/y come together.
// - hold_keys: at most 4 distinct modifier keys (ctrl, alt, shift, meta).
// - type_text.text 1..10,000 characters; wait.seconds a number in 0..60.
// - done takes no params; fail takes optional code (1..64 chars) and message (up to 2,000 chars).
// - key names are normalised to their canonical spelling (see keys.ts); unknown names are invalid.
import { z } from "zod";
import { CoreError } from "../errors.ts";
import { issuesToDetails } from "../validation.ts";
import { isModifierKey, normalizeKey } from "./keys.ts";

export { isModifierKey, keyIdentity, MODIFIER_KEYS, normalizeKey } from "./keys.ts";

export const ACTION_TYPES = [
  "click",
  "type_text",
  "key_press",
  "key_combo",
  "scroll",
  "drag",
  "move",
  "wait",
  "done",
  "fail",
] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

/** DECISIONS "Precise answers": the eight action types a caller may name in `tools`. */
export const FILTERABLE_TOOLS = [
  "click",
  "type_text",
  "key_press",
  "key_combo",
  "scroll",
  "drag",
  "move",
  "wait",
] as const;
export type FilterableTool = (typeof FILTERABLE_TOOLS)[number];

export const COORDINATE_MAX = 32767;
export const KEY_PRESS_MAX_KEYS = 100;
export const KEY_COMBO_MIN_KEYS = 2;
export const KEY_COMBO_MAX_KEYS = 8;
export const WAIT_MAX_SECONDS = 60;
export const TYPE_TEXT_MAX_CHARS = 10_000;
export const CLICK_MAX_CLICKS = 10;
export const SCROLL_MAX_CLICKS = 100;

const Coordinate = (what: string) =>
  z.number().int().min(0).max(COORDINATE_MAX).describe(`${what}, integer pixels in the screenshot's space`);

export const KeyName = z
  .string()
  .min(1)
  .max(32)
  .refine((k) => normalizeKey(k) !== null, { message: "unknown key name" })
  .overwrite((k) => normalizeKey(k) ?? k)
  .describe("A key name (canonical lowercase names such as enter, ctrl, f5, or a single character)");

const ModifierKeyName = z
  .string()
  .refine(
    (k) => {
      const n = normalizeKey(k);
      return n !== null && isModifierKey(n);
    },
    { message: "hold_keys may only hold modifier keys: ctrl, alt, shift, meta" },
  )
  .overwrite((k) => normalizeKey(k) ?? k);

const HoldKeys = z
  .array(ModifierKeyName)
  .max(4)
  .refine((keys) => new Set(keys).size === keys.length, { message: "hold_keys must not repeat a key" })
  .optional()
  .describe("Modifier keys held down during the action (ctrl, alt, shift, meta)");

export const MouseButton = z.enum(["left", "right", "middle"]).describe("Mouse button");

export const ClickParams = z.strictObject({
  x: Coordinate("Horizontal position"),
  y: Coordinate("Vertical position"),
  button: MouseButton.default("left"),
  clicks: z.number().int().min(1).max(CLICK_MAX_CLICKS).default(1).describe("Number of clicks (2 = double click)"),
  hold_keys: HoldKeys,
});

export const MoveParams = z.strictObject({
  x: Coordinate("Horizontal position"),
  y: Coordinate("Vertical position"),
});

export const TypeTextParams = z.strictObject({
  text: z
    .string()
    .min(1)
    .max(TYPE_TEXT_MAX_CHARS)
    .describe("Literal text typed at the current focus; never read from a clipboard"),
});

export const KeyPressParams = z.strictObject({
  keys: z
    .array(KeyName)
    .min(1)
    .max(KEY_PRESS_MAX_KEYS)
    .describe("Keys pressed and released one after another (1 to 100)"),
});

export const KeyComboParams = z.strictObject({
  keys: z
    .array(KeyName)
    .min(KEY_COMBO_MIN_KEYS)
    .max(KEY_COMBO_MAX_KEYS)
    .refine((keys) => new Set(keys).size === keys.length, { message: "a key combo must not repeat a key" })
    .describe("Keys held together as one chord (2 to 8), e.g. [ctrl, v]"),
});

export const ScrollParams = z
  .strictObject({
    clicks: z
      .number()
      .int()
      .min(-SCROLL_MAX_CLICKS)
      .max(SCROLL_MAX_CLICKS)
      .refine((n) => n !== 0, { message: "clicks must not be 0" })
      .describe("Scroll amount: vertical positive up / negative down; horizontal positive right / negative left"),
    direction: z.enum(["vertical", "horizontal"]).default("vertical").describe("Scroll axis"),
    x: Coordinate("Optional anchor, horizontal").optional(),
    y: Coordinate("Optional anchor, vertical").optional(),
  })
  .refine((p) => (p.x === undefined) === (p.y === undefined), {
    message: "x and y must be given together",
    path: ["x"],
  });

export const DragParams = z.strictObject({
  x1: Coordinate("Start, horizontal"),
  y1: Coordinate("Start, vertical"),
  x2: Coordinate("End, horizontal"),
  y2: Coordinate("End, vertical"),
  button: MouseButton.default("left"),
  hold_keys: HoldKeys,
});

export const WaitParams = z.strictObject({
  seconds: z.number().min(0).max(WAIT_MAX_SECONDS).describe("Seconds to wait (0 to 60)"),
});

export const DoneParams = z.strictObject({});

export const FailParams = z.strictObject({
  code: z.string().min(1).max(64).optional().describe("Machine-readable reason, e.g. ACTION_POLICY_VIOLATION"),
  message: z.string().max(2000).optional().describe("Human-readable reason"),
});

// DECISIONS.md "Compatibility amendments (2026-11-25)": an action may carry a short `description` and, when the
// caller asked for include_raw_code, `raw_code` (its pyautogui equivalent). Both are accepted back in a trajectory.
const ActionExtras = {
  description: z.string().max(500).optional().describe("what the action does, in a few words"),
  raw_code: z.string().max(20_000).optional().describe("the pyautogui equivalent (include_raw_code: true)"),
};

const variant = <T extends ActionType, P extends z.ZodType>(type: T, params: P, description: string) =>
  z.strictObject({ action_type: z.literal(type), params, ...ActionExtras }).describe(description);

export const ActionSchema = z
  .discriminatedUnion("action_type", [
    variant("click", ClickParams, "Click at (x, y)"),
    variant("type_text", TypeTextParams, "Type literal text"),
    variant("key_press", KeyPressParams, "Press keys in sequence"),
    variant("key_combo", KeyComboParams, "Press keys together as a chord"),
    variant("scroll", ScrollParams, "Scroll"),
    variant("drag", DragParams, "Drag from (x1, y1) to (x2, y2)"),
    variant("move", MoveParams, "Move the pointer to (x, y)"),
    variant("wait", WaitParams, "Wait"),
    variant("done", DoneParams.default({}), "The task is complete"),
    variant("fail", FailParams.default({}), "The task is impossible or blocked"),
  ])
  .describe("One structured action to execute on the target screen");

/** A validated action with defaults applied (what the API returns). */
export type Action = z.output<typeof ActionSchema>;
/** What a caller may send (defaults optional). */
export type ActionInput = z.input<typeof ActionSchema>;
export type ActionOf<T extends ActionType> = Extract<Action, { action_type: T }>;

export interface Screen {
  width: number;
  height: number;
}

/** Every (path, x, y) coordinate pair an action carries (scroll only when anchored). */
export function actionPoints(a: Action): { path: string; x: number; y: number }[] {
  switch (a.action_type) {
    case "click":
    case "move":
      return [{ path: "params.x", x: a.params.x, y: a.params.y }];
    case "drag":
      return [
        { path: "params.x1", x: a.params.x1, y: a.params.y1 },
        { path: "params.x2", x: a.params.x2, y: a.params.y2 },
      ];
    case "scroll":
      return a.params.x !== undefined && a.params.y !== undefined
        ? [{ path: "params.x", x: a.params.x, y: a.params.y }]
        : [];
    default:
      return [];
  }
}

/** Problems of an action against a screen: points must satisfy 0 <= x < width, 0 <= y < height. */
export function outOfScreen(a: Action, screen: Screen): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const p of actionPoints(a)) {
    if (p.x >= screen.width || p.y >= screen.height) {
      out.push({
        path: p.path,
        message: `point (${p.x}, ${p.y}) lies outside the ${screen.width}x${screen.height} screen`,
      });
    }
  }
  return out;
}

/**
 * Validates what an engine proposed. Anything that is not a list of valid actions, or that points
 * outside the image the engine saw, is the engine's failure: 502 PREDICTION_FAILED (refundable).
 */
export function validateEngineActions(raw: unknown, screen: Screen): Action[] {
  if (!Array.isArray(raw)) {
    throw new CoreError("PREDICTION_FAILED", "The engine answer is not a list of actions.", {
      details: [{ path: "engine.actions", message: "expected an array" }],
    });
  }
  const actions: Action[] = [];
  const details: { path: string; message: string }[] = [];
  raw.forEach((item, i) => {
    const parsed = ActionSchema.safeParse(item);
    if (!parsed.success) {
      details.push(...issuesToDetails(parsed.error.issues, `engine.actions.${i}`));
      return;
    }
    for (const d of outOfScreen(parsed.data, screen))
      details.push({ path: `engine.actions.${i}.${d.path}`, message: d.message });
    actions.push(parsed.data);
  });
  if (details.length > 0) {
    throw new CoreError(
      "PREDICTION_FAILED",
      `The engine proposed an invalid action: ${details[0]!.path}: ${details[0]!.message}`,
      {
        details,
      },
    );
  }
  return actions;
}

/** Parses one caller-supplied action (e.g. a trajectory item), throwing 422 with paths under `prefix`. */
export function parseAction(raw: unknown, prefix: string): Action {
  const parsed = ActionSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const details = issuesToDetails(parsed.error.issues, prefix);
  throw new CoreError("VALIDATION_ERROR", `${details[0]?.path ?? prefix}: ${details[0]?.message ?? "invalid action"}`, {
    details,
  });
}
