// ActionPolicy (SPEC "Resources and their fields / ActionPolicy"): enforced server-side after the
// model answers and before anything is returned. Any violation rejects the whole proposed batch,
// which is replaced by one fail action with params.code ACTION_POLICY_VIOLATION (SPEC "Action").
//
// Decisions where SPEC/DECISIONS are silent:
// - Checks run in this order and the first violation wins: max_actions (the batch is longer than
//   max_actions; index = max_actions, the first action over), then for each action in order:
//   blocked_actions, allowed_actions, blocked_keys, block_window_close, coordinate_bounds.
// - done and fail are control signals: they need not be listed in allowed_actions (a policy
//   allowing only ["click"] still lets the agent finish), but blocked_actions can block them.
// - An action listed in both allowed_actions and blocked_actions is rejected as a contradictory
//   policy (422 at body.action_policy.blocked_actions[i]).
// - blocked_keys entries are key names (any alias; canonicalised, single letters match case-
//   insensitively) or chords written with "+" ("ctrl+w"). A blocked single key matches key_press
//   and key_combo keys, click/drag hold_keys, and, in type_text, the character itself (letters
//   case-insensitively) or, for enter, tab and space, a newline, tab or space character. A blocked chord matches a
//   key_combo holding all its keys (extra keys still match: ctrl+shift+w contains ctrl+w) and a
//   key_press whose keys include all of the chord's keys.
// - block_window_close blocks the chords alt+f4, ctrl+w, ctrl+q, ctrl+shift+w, meta+q, meta+w,
//   matched the same way as blocked chords (key_combo and key_press forms).
// - coordinate_bounds is inclusive (min_x <= x <= max_x); each bound is optional; a bound applies to
//   every point an action carries (click, move, both drag ends, a scroll anchor). Unanchored scrolls
//   have no point and pass.
// - max_actions is an integer 1..100; key lists at most 100 entries; action lists at most 10.

import { ACTION_TYPES, type Action, actionPoints, keyIdentity, normalizeKey } from "@cua/base/actions/action";
import { detailsError, issuesToDetails } from "@cua/base/validation";
import { z } from "zod";

const ActionName = z.enum(ACTION_TYPES);

const BlockedKey = z
  .string()
  .min(1)
  .max(64)
  .refine((entry) => parseKeyEntry(entry) !== null, { message: "unknown key name or chord" })
  .describe('A key name ("f4", "enter") or a chord written with "+" ("ctrl+w")');

const Bound = (what: string) => z.number().int().min(0).max(32767).optional().describe(what);

export const CoordinateBounds = z
  .strictObject({
    min_x: Bound("Smallest allowed x (inclusive)"),
    min_y: Bound("Smallest allowed y (inclusive)"),
    max_x: Bound("Largest allowed x (inclusive)"),
    max_y: Bound("Largest allowed y (inclusive)"),
  })
  .superRefine((b, ctx) => {
    if (b.min_x !== undefined && b.max_x !== undefined && b.min_x > b.max_x)
      ctx.addIssue({ code: "custom", path: ["min_x"], message: "min_x must not exceed max_x" });
    if (b.min_y !== undefined && b.max_y !== undefined && b.min_y > b.max_y)
      ctx.addIssue({ code: "custom", path: ["min_y"], message: "min_y must not exceed max_y" });
  })
  .describe("Every coordinate an action carries must lie inside these inclusive bounds");

export const ActionPolicySchema = z
  .strictObject({
    allowed_actions: z
      .array(ActionName)
      .max(ACTION_TYPES.length)
      .optional()
      .describe("Only these action types may be returned (done and fail are always allowed)"),
    blocked_actions: z
      .array(ActionName)
      .max(ACTION_TYPES.length)
      .optional()
      .describe("These action types are rejected"),
    blocked_keys: z.array(BlockedKey).max(100).optional().describe("Keys or chords that may not be pressed"),
    block_window_close: z
      .boolean()
      .optional()
      .describe("Reject alt+f4, ctrl+w, ctrl+q, ctrl+shift+w, meta+q and meta+w"),
    max_actions: z.number().int().min(1).max(100).optional().describe("Most actions one answer may carry"),
    coordinate_bounds: CoordinateBounds.optional(),
  })
  .superRefine((p, ctx) => {
    if (!p.allowed_actions || !p.blocked_actions) return;
    p.blocked_actions.forEach((a, i) => {
      if (p.allowed_actions!.includes(a))
        ctx.addIssue({
          code: "custom",
          path: ["blocked_actions", i],
          message: `${a} is both allowed and blocked`,
        });
    });
  })
  .describe("Server-side limits on the actions an answer may carry; any violation rejects the whole batch");

export type ActionPolicy = z.output<typeof ActionPolicySchema>;

/** Validates a caller's action_policy; 422 VALIDATION_ERROR with paths under `prefix`. */
export function parseActionPolicy(raw: unknown, prefix = "body.action_policy"): ActionPolicy {
  const parsed = ActionPolicySchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw detailsError(issuesToDetails(parsed.error.issues, prefix));
}

export type PolicyRule =
  | "max_actions"
  | "allowed_actions"
  | "blocked_actions"
  | "blocked_keys"
  | "block_window_close"
  | "coordinate_bounds";

export interface PolicyViolation {
  rule: PolicyRule;
  /** index of the offending action in the proposed batch */
  index: number;
  message: string;
}

export type PolicyResult =
  | { ok: true; actions: Action[] }
  | { ok: false; violation: PolicyViolation; actions: [Action] };

export const WINDOW_CLOSE_CHORDS: readonly (readonly string[])[] = [
  ["alt", "f4"],
  ["ctrl", "w"],
  ["ctrl", "q"],
  ["ctrl", "shift", "w"],
  ["meta", "q"],
  ["meta", "w"],
];

/** A blocked_keys entry as a list of key identities: ["f4"] or ["ctrl", "w"]; null when invalid. */
export function parseKeyEntry(entry: string): string[] | null {
  if (normalizeKey(entry) !== null) return [keyIdentity(entry)];
  // "ctrl++" is ctrl and "+"; otherwise split on "+"
  const parts = entry.endsWith("++") ? [...entry.slice(0, -2).split("+"), "+"] : entry.split("+");
  if (parts.length < 2 || parts.some((p) => p.length === 0)) return null;
  const keys: string[] = [];
  for (const p of parts) {
    if (normalizeKey(p) === null) return null;
    keys.push(keyIdentity(p));
  }
  return keys;
}

/** Key identities an action presses, and the chord it holds (if any). */
function pressedKeys(a: Action): { single: string[]; chord: string[] | null; sequence: string[] | null } {
  switch (a.action_type) {
    case "key_press":
      return { single: a.params.keys.map(keyIdentity), chord: null, sequence: a.params.keys.map(keyIdentity) };
    case "key_combo": {
      const keys = a.params.keys.map(keyIdentity);
      return { single: keys, chord: keys, sequence: null };
    }
    case "click":
    case "drag":
      return { single: (a.params.hold_keys ?? []).map(keyIdentity), chord: null, sequence: null };
    default:
      return { single: [], chord: null, sequence: null };
  }
}

function textPresses(text: string, key: string): boolean {
  if (key === "enter") return /[\r\n]/.test(text);
  if (key === "tab") return text.includes("\t");
  if (key === "space") return text.includes(" ");
  if ([...key].length === 1) return text.toLowerCase().includes(key);
  return false;
}

function chordMatches(a: Action, chord: readonly string[]): boolean {
  const { chord: held, sequence } = pressedKeys(a);
  const within = (list: string[] | null) => list !== null && chord.every((k) => list.includes(k));
  return within(held) || within(sequence);
}

function keyMatches(a: Action, entry: readonly string[]): boolean {
  if (entry.length > 1) return chordMatches(a, entry);
  const key = entry[0]!;
  if (pressedKeys(a).single.includes(key)) return true;
  return a.action_type === "type_text" && textPresses(a.params.text, key);
}

const CONTROL_SIGNALS = new Set<string>(["done", "fail"]);

function check(a: Action, i: number, policy: ActionPolicy): PolicyViolation | null {
  const type = a.action_type;
  if (policy.blocked_actions?.includes(type))
    return { rule: "blocked_actions", index: i, message: `action ${i} (${type}) is a blocked action` };
  if (policy.allowed_actions && !CONTROL_SIGNALS.has(type) && !policy.allowed_actions.includes(type))
    return { rule: "allowed_actions", index: i, message: `action ${i} (${type}) is not an allowed action` };
  for (const entry of policy.blocked_keys ?? []) {
    const keys = parseKeyEntry(entry);
    if (keys && keyMatches(a, keys))
      return { rule: "blocked_keys", index: i, message: `action ${i} (${type}) presses the blocked key ${entry}` };
  }
  if (policy.block_window_close) {
    for (const chord of WINDOW_CLOSE_CHORDS) {
      if (chordMatches(a, chord))
        return {
          rule: "block_window_close",
          index: i,
          message: `action ${i} (${type}) would close a window (${chord.join("+")})`,
        };
    }
  }
  const b = policy.coordinate_bounds;
  if (b) {
    for (const p of actionPoints(a)) {
      const outside =
        (b.min_x !== undefined && p.x < b.min_x) ||
        (b.max_x !== undefined && p.x > b.max_x) ||
        (b.min_y !== undefined && p.y < b.min_y) ||
        (b.max_y !== undefined && p.y > b.max_y);
      if (outside)
        return {
          rule: "coordinate_bounds",
          index: i,
          message: `action ${i} (${type}) point (${p.x}, ${p.y}) lies outside the coordinate bounds`,
        };
    }
  }
  return null;
}

/** The fail action that replaces a rejected batch (SPEC Action: params.code ACTION_POLICY_VIOLATION). */
export function policyFailAction(v: PolicyViolation): Action {
  return {
    action_type: "fail",
    params: { code: "ACTION_POLICY_VIOLATION", message: `Action policy violation (${v.rule}): ${v.message}` },
  };
}

/** Applies a policy to a proposed batch. No policy: the batch passes unchanged. */
export function enforcePolicy(actions: Action[], policy: ActionPolicy | null | undefined): PolicyResult {
  if (!policy) return { ok: true, actions };
  let violation: PolicyViolation | null = null;
  if (policy.max_actions !== undefined && actions.length > policy.max_actions) {
    violation = {
      rule: "max_actions",
      index: policy.max_actions,
      message: `${actions.length} actions proposed, the policy allows at most ${policy.max_actions}`,
    };
  } else {
    for (let i = 0; i < actions.length && !violation; i++) violation = check(actions[i]!, i, policy);
  }
  if (!violation) return { ok: true, actions };
  return { ok: false, violation, actions: [policyFailAction(violation)] };
}
