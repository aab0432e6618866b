import { type Action, type ActionInput, ActionSchema } from "@cua/base/actions/action";
import { CoreError } from "@cua/base/errors";
import { describe, expect, it } from "vitest";
import { type ActionPolicy, enforcePolicy, parseActionPolicy, parseKeyEntry } from "./action-policy.ts";

// SPEC "Resources and their fields / ActionPolicy" and SPEC "Action" (fail with params.code
// ACTION_POLICY_VIOLATION); decisions in the header of action-policy.ts.

const A = (input: ActionInput): Action => ActionSchema.parse(input);
const click = (x: number, y: number, extra: Record<string, unknown> = {}) =>
  A({ action_type: "click", params: { x, y, ...extra } } as ActionInput);
const combo = (...keys: string[]) => A({ action_type: "key_combo", params: { keys } });
const press = (...keys: string[]) => A({ action_type: "key_press", params: { keys } });
const type = (text: string) => A({ action_type: "type_text", params: { text } });
const done = A({ action_type: "done" });
const fail = A({ action_type: "fail" });
const wait = A({ action_type: "wait", params: { seconds: 1 } });
const scroll = (extra: Record<string, unknown> = {}) =>
  A({ action_type: "scroll", params: { clicks: -2, ...extra } } as ActionInput);
const drag = (x1: number, y1: number, x2: number, y2: number) => A({ action_type: "drag", params: { x1, y1, x2, y2 } });
const move = (x: number, y: number) => A({ action_type: "move", params: { x, y } });

describe("enforcePolicy: batches that pass (SPEC ActionPolicy)", () => {
  it.each<[string, Action[], ActionPolicy | undefined]>([
    ["no policy", [click(1, 1), combo("alt", "f4")], undefined],
    ["empty policy", [click(1, 1), combo("alt", "f4")], {}],
    ["allowed click", [click(1, 1)], { allowed_actions: ["click"] }],
    ["done and fail need not be allowed", [click(1, 1), done, fail], { allowed_actions: ["click"] }],
    ["max_actions equal to the batch", [click(1, 1), click(2, 2)], { max_actions: 2 }],
    ["empty batch", [], { max_actions: 1, allowed_actions: [] }],
    ["blocked key not pressed", [press("enter")], { blocked_keys: ["f4"] }],
    ["chord needs all its keys", [combo("ctrl", "c")], { blocked_keys: ["ctrl+w"] }],
    ["window close off", [combo("alt", "f4")], { block_window_close: false }],
    ["ctrl+s is no window close", [combo("ctrl", "s")], { block_window_close: true }],
    ["alt alone is no window close", [press("alt")], { block_window_close: true }],
    ["typing 'ctrl+w' is literal text", [type("ctrl+w")], { block_window_close: true }],
    [
      "inclusive bounds",
      [click(10, 20), click(100, 200)],
      { coordinate_bounds: { min_x: 10, min_y: 20, max_x: 100, max_y: 200 } },
    ],
    ["partial bounds", [click(5000, 0)], { coordinate_bounds: { max_y: 10 } }],
    ["unanchored scroll has no point", [scroll()], { coordinate_bounds: { min_x: 10, max_x: 20 } }],
    ["text without blocked char", [type("hello")], { blocked_keys: ["z", "enter"] }],
  ])("%s", (_name, actions, policy) => {
    expect(enforcePolicy(actions, policy)).toEqual({ ok: true, actions });
  });
});

describe("enforcePolicy: violations reject the whole batch (SPEC ActionPolicy, SPEC Action fail)", () => {
  it.each<[string, Action[], ActionPolicy, string, number]>([
    ["max_actions", [click(1, 1), click(2, 2), click(3, 3)], { max_actions: 2 }, "max_actions", 2],
    ["not allowed", [click(1, 1), type("x")], { allowed_actions: ["click"] }, "allowed_actions", 1],
    ["wait must be allowed too", [wait], { allowed_actions: ["click"] }, "allowed_actions", 0],
    ["blocked action", [move(1, 1), drag(1, 1, 2, 2)], { blocked_actions: ["drag"] }, "blocked_actions", 1],
    ["blocked done", [done], { blocked_actions: ["done"] }, "blocked_actions", 0],
    ["blocked key in key_press", [press("tab", "F4")], { blocked_keys: ["f4"] }, "blocked_keys", 0],
    ["blocked key alias", [press("Return")], { blocked_keys: ["enter"] }, "blocked_keys", 0],
    ["blocked key given as alias", [press("escape")], { blocked_keys: ["Esc"] }, "blocked_keys", 0],
    ["blocked key in combo", [combo("ctrl", "v")], { blocked_keys: ["v"] }, "blocked_keys", 0],
    ["blocked letter is case-insensitive", [combo("ctrl", "V")], { blocked_keys: ["v"] }, "blocked_keys", 0],
    [
      "blocked modifier in hold_keys",
      [click(1, 1, { hold_keys: ["ctrl"] })],
      { blocked_keys: ["control"] },
      "blocked_keys",
      0,
    ],
    ["blocked chord", [combo("ctrl", "w")], { blocked_keys: ["Ctrl+W"] }, "blocked_keys", 0],
    [
      "blocked chord inside a bigger chord",
      [combo("ctrl", "shift", "w")],
      { blocked_keys: ["ctrl+w"] },
      "blocked_keys",
      0,
    ],
    ["blocked chord in key_press form", [press("ctrl", "w")], { blocked_keys: ["ctrl+w"] }, "blocked_keys", 0],
    ["blocked enter in typed newline", [type("ls\n")], { blocked_keys: ["enter"] }, "blocked_keys", 0],
    ["blocked tab in typed tab", [type("a\tb")], { blocked_keys: ["tab"] }, "blocked_keys", 0],
    ["blocked letter in typed text", [type("Hello")], { blocked_keys: ["h"] }, "blocked_keys", 0],
    ["alt+f4", [click(1, 1), combo("alt", "f4")], { block_window_close: true }, "block_window_close", 1],
    ["ctrl+w", [combo("ctrl", "w")], { block_window_close: true }, "block_window_close", 0],
    ["ctrl+q", [combo("control", "Q")], { block_window_close: true }, "block_window_close", 0],
    ["ctrl+shift+w", [combo("ctrl", "shift", "w")], { block_window_close: true }, "block_window_close", 0],
    ["meta+q", [combo("cmd", "q")], { block_window_close: true }, "block_window_close", 0],
    ["meta+w", [combo("win", "w")], { block_window_close: true }, "block_window_close", 0],
    ["alt+f4 in key_press form", [press("alt", "f4")], { block_window_close: true }, "block_window_close", 0],
    ["ctrl+w in key_press form", [press("ctrl", "w")], { block_window_close: true }, "block_window_close", 0],
    ["click left of min_x", [click(9, 50)], { coordinate_bounds: { min_x: 10 } }, "coordinate_bounds", 0],
    ["click over max_y", [click(50, 201)], { coordinate_bounds: { max_y: 200 } }, "coordinate_bounds", 0],
    ["drag end outside", [drag(10, 10, 300, 10)], { coordinate_bounds: { max_x: 200 } }, "coordinate_bounds", 0],
    ["move outside", [move(0, 0)], { coordinate_bounds: { min_y: 1 } }, "coordinate_bounds", 0],
    [
      "scroll anchor outside",
      [scroll({ x: 500, y: 5 })],
      { coordinate_bounds: { max_x: 100 } },
      "coordinate_bounds",
      0,
    ],
    [
      "first violation wins",
      [type("a"), combo("alt", "f4")],
      { allowed_actions: ["key_combo"], block_window_close: true },
      "allowed_actions",
      0,
    ],
  ])("%s", (_name, actions, policy, rule, index) => {
    const r = enforcePolicy(actions, policy);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.violation.rule).toBe(rule);
    expect(r.violation.index).toBe(index);
    expect(r.actions).toHaveLength(1);
    expect(r.actions[0]).toEqual({
      action_type: "fail",
      params: { code: "ACTION_POLICY_VIOLATION", message: expect.stringContaining(rule) },
    });
    // the replacement is itself a valid action
    expect(ActionSchema.parse(r.actions[0])).toEqual(r.actions[0]);
  });
});

describe("parseActionPolicy (422 VALIDATION_ERROR with body.action_policy paths)", () => {
  it("accepts a full policy and canonical values", () => {
    const p = parseActionPolicy({
      allowed_actions: ["click", "type_text"],
      blocked_actions: ["drag"],
      blocked_keys: ["f4", "ctrl+w", "Return"],
      block_window_close: true,
      max_actions: 5,
      coordinate_bounds: { min_x: 0, min_y: 0, max_x: 1279, max_y: 719 },
    });
    expect(p.max_actions).toBe(5);
    expect(p.block_window_close).toBe(true);
  });
  it("accepts an empty object", () => {
    expect(parseActionPolicy({})).toEqual({});
  });

  it.each<[string, unknown, string]>([
    ["not an object", "deny-all", "body.action_policy"],
    ["unknown field", { block_all: true }, "body.action_policy.block_all"],
    ["unknown action name", { allowed_actions: ["hover"] }, "body.action_policy.allowed_actions.0"],
    ["blocked_actions not a list", { blocked_actions: "drag" }, "body.action_policy.blocked_actions"],
    ["unknown key", { blocked_keys: ["enter", "hyperkey"] }, "body.action_policy.blocked_keys.1"],
    ["bad chord", { blocked_keys: ["ctrl+"] }, "body.action_policy.blocked_keys.0"],
    ["block_window_close not boolean", { block_window_close: "yes" }, "body.action_policy.block_window_close"],
    ["max_actions 0", { max_actions: 0 }, "body.action_policy.max_actions"],
    ["max_actions float", { max_actions: 1.5 }, "body.action_policy.max_actions"],
    [
      "bounds min_x > max_x",
      { coordinate_bounds: { min_x: 10, max_x: 5 } },
      "body.action_policy.coordinate_bounds.min_x",
    ],
    [
      "bounds min_y > max_y",
      { coordinate_bounds: { min_y: 10, max_y: 5 } },
      "body.action_policy.coordinate_bounds.min_y",
    ],
    ["bounds negative", { coordinate_bounds: { min_x: -1 } }, "body.action_policy.coordinate_bounds.min_x"],
    ["bounds float", { coordinate_bounds: { max_y: 2.5 } }, "body.action_policy.coordinate_bounds.max_y"],
    ["bounds unknown field", { coordinate_bounds: { min_z: 1 } }, "body.action_policy.coordinate_bounds.min_z"],
    [
      "allowed and blocked overlap",
      { allowed_actions: ["click"], blocked_actions: ["wait", "click"] },
      "body.action_policy.blocked_actions.1",
    ],
  ])("%s", (_name, raw, path) => {
    let err: unknown;
    try {
      parseActionPolicy(raw);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CoreError);
    expect((err as CoreError).code).toBe("VALIDATION_ERROR");
    expect((err as CoreError).status).toBe(422);
    expect((err as CoreError).extras.details?.map((d) => d.path)).toContain(path);
  });

  it("uses the given path prefix (session create, trajectory-free callers)", () => {
    expect(() => parseActionPolicy({ max_actions: -1 }, "body.session.action_policy")).toThrow(
      expect.objectContaining({
        extras: { details: [expect.objectContaining({ path: "body.session.action_policy.max_actions" })] },
      }),
    );
  });
});

describe("parseKeyEntry", () => {
  it.each<[string, string[] | null]>([
    ["f4", ["f4"]],
    ["Return", ["enter"]],
    ["W", ["w"]],
    ["+", ["+"]],
    ["ctrl+w", ["ctrl", "w"]],
    ["Control+Shift+W", ["ctrl", "shift", "w"]],
    ["ctrl++", ["ctrl", "+"]],
    ["ctrl+", null],
    ["+w", null],
    ["ctrl+nokey", null],
    ["nokey", null],
  ])("%j -> %j", (entry, expected) => {
    expect(parseKeyEntry(entry)).toEqual(expected);
  });
});
