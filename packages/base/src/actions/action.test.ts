import { describe, expect, it } from "vitest";
import { CoreError } from "../errors.ts";
import { joinPath } from "../validation.ts";
import {
  ACTION_TYPES,
  ActionSchema,
  actionPoints,
  FILTERABLE_TOOLS,
  parseAction,
  validateEngineActions,
} from "./action.ts";

// SPEC "Resources and their fields / Action": action types, params, defaults; SPEC "Limits":
// key_press 1..100 keys, key_combo 2..8 keys.

describe("ACTION_TYPES and FILTERABLE_TOOLS (SPEC Action, DECISIONS Precise answers)", () => {
  it("lists the ten action types of SPEC Action", () => {
    expect([...ACTION_TYPES].sort()).toEqual(
      ["click", "type_text", "key_press", "key_combo", "scroll", "drag", "move", "wait", "done", "fail"].sort(),
    );
  });
  it("lists exactly the eight filterable tools", () => {
    expect([...FILTERABLE_TOOLS]).toEqual([
      "click",
      "type_text",
      "key_press",
      "key_combo",
      "scroll",
      "drag",
      "move",
      "wait",
    ]);
  });
});

describe("ActionSchema accepts valid actions and applies defaults (SPEC Action)", () => {
  it.each([
    [
      "click defaults button left, clicks 1",
      { action_type: "click", params: { x: 10, y: 20 } },
      { action_type: "click", params: { x: 10, y: 20, button: "left", clicks: 1 } },
    ],
    [
      "click with everything",
      { action_type: "click", params: { x: 0, y: 0, button: "right", clicks: 2, hold_keys: ["Control", "shift"] } },
      { action_type: "click", params: { x: 0, y: 0, button: "right", clicks: 2, hold_keys: ["ctrl", "shift"] } },
    ],
    ["move", { action_type: "move", params: { x: 5, y: 6 } }, { action_type: "move", params: { x: 5, y: 6 } }],
    [
      "type_text keeps text literally",
      { action_type: "type_text", params: { text: "  ctrl+v\n" } },
      { action_type: "type_text", params: { text: "  ctrl+v\n" } },
    ],
    [
      "key_press normalises names",
      { action_type: "key_press", params: { keys: ["Return", "esc", "A"] } },
      { action_type: "key_press", params: { keys: ["enter", "escape", "A"] } },
    ],
    [
      "key_combo paste is ctrl and v",
      { action_type: "key_combo", params: { keys: ["ctrl", "v"] } },
      { action_type: "key_combo", params: { keys: ["ctrl", "v"] } },
    ],
    [
      "scroll defaults to vertical",
      { action_type: "scroll", params: { clicks: -3 } },
      { action_type: "scroll", params: { clicks: -3, direction: "vertical" } },
    ],
    [
      "scroll horizontal with anchor",
      { action_type: "scroll", params: { clicks: 2, direction: "horizontal", x: 1, y: 2 } },
      { action_type: "scroll", params: { clicks: 2, direction: "horizontal", x: 1, y: 2 } },
    ],
    [
      "drag defaults button left",
      { action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4 } },
      { action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4, button: "left" } },
    ],
    [
      "wait fractional",
      { action_type: "wait", params: { seconds: 0.5 } },
      { action_type: "wait", params: { seconds: 0.5 } },
    ],
    ["wait 0", { action_type: "wait", params: { seconds: 0 } }, { action_type: "wait", params: { seconds: 0 } }],
    ["wait 60", { action_type: "wait", params: { seconds: 60 } }, { action_type: "wait", params: { seconds: 60 } }],
    ["done without params", { action_type: "done" }, { action_type: "done", params: {} }],
    ["done with empty params", { action_type: "done", params: {} }, { action_type: "done", params: {} }],
    ["fail without params", { action_type: "fail" }, { action_type: "fail", params: {} }],
    [
      "fail with code and message",
      { action_type: "fail", params: { code: "ACTION_POLICY_VIOLATION", message: "no" } },
      { action_type: "fail", params: { code: "ACTION_POLICY_VIOLATION", message: "no" } },
    ],
  ])("%s", (_name, input, expected) => {
    expect(ActionSchema.parse(input)).toEqual(expected);
  });

  it("key_press accepts exactly 100 keys (SPEC Limits)", () => {
    const keys = Array.from({ length: 100 }, () => "a");
    expect(ActionSchema.safeParse({ action_type: "key_press", params: { keys } }).success).toBe(true);
  });
  it("key_combo accepts 8 distinct keys (SPEC Limits)", () => {
    const keys = ["ctrl", "alt", "shift", "meta", "a", "b", "c", "d"];
    expect(ActionSchema.safeParse({ action_type: "key_combo", params: { keys } }).success).toBe(true);
  });
});

describe("ActionSchema rejects invalid actions (SPEC Action and Limits)", () => {
  it.each([
    ["unknown action_type", { action_type: "hover", params: { x: 1, y: 1 } }, "action_type"],
    ["missing action_type", { params: {} }, "action_type"],
    ["float coordinate", { action_type: "click", params: { x: 1.5, y: 1 } }, "params.x"],
    ["negative coordinate", { action_type: "move", params: { x: -1, y: 1 } }, "params.x"],
    ["huge coordinate", { action_type: "move", params: { x: 40000, y: 1 } }, "params.x"],
    ["string coordinate", { action_type: "click", params: { x: "10", y: 1 } }, "params.x"],
    ["missing y", { action_type: "click", params: { x: 1 } }, "params.y"],
    ["bad button", { action_type: "click", params: { x: 1, y: 1, button: "back" } }, "params.button"],
    ["clicks 0", { action_type: "click", params: { x: 1, y: 1, clicks: 0 } }, "params.clicks"],
    ["clicks float", { action_type: "click", params: { x: 1, y: 1, clicks: 1.5 } }, "params.clicks"],
    ["clicks 11", { action_type: "click", params: { x: 1, y: 1, clicks: 11 } }, "params.clicks"],
    [
      "hold_keys non-modifier",
      { action_type: "click", params: { x: 1, y: 1, hold_keys: ["a"] } },
      "params.hold_keys.0",
    ],
    [
      "hold_keys repeated",
      { action_type: "click", params: { x: 1, y: 1, hold_keys: ["ctrl", "control"] } },
      "params.hold_keys",
    ],
    ["unknown param", { action_type: "click", params: { x: 1, y: 1, z: 1 } }, "params"],
    ["unknown top-level field", { action_type: "done", params: {}, extra: 1 }, ""],
    ["empty text", { action_type: "type_text", params: { text: "" } }, "params.text"],
    ["text too long", { action_type: "type_text", params: { text: "x".repeat(10_001) } }, "params.text"],
    ["key_press empty", { action_type: "key_press", params: { keys: [] } }, "params.keys"],
    ["key_press 101 keys", { action_type: "key_press", params: { keys: Array(101).fill("a") } }, "params.keys"],
    ["key_press unknown key", { action_type: "key_press", params: { keys: ["enter", "hyper"] } }, "params.keys.1"],
    ["key_press chord string", { action_type: "key_press", params: { keys: ["alt+f4"] } }, "params.keys.0"],
    ["key_combo one key", { action_type: "key_combo", params: { keys: ["ctrl"] } }, "params.keys"],
    [
      "key_combo 9 keys",
      { action_type: "key_combo", params: { keys: ["ctrl", "alt", "shift", "meta", "a", "b", "c", "d", "e"] } },
      "params.keys",
    ],
    ["key_combo repeated key", { action_type: "key_combo", params: { keys: ["ctrl", "Control"] } }, "params.keys"],
    ["scroll 0 clicks", { action_type: "scroll", params: { clicks: 0 } }, "params.clicks"],
    ["scroll 101 clicks", { action_type: "scroll", params: { clicks: 101 } }, "params.clicks"],
    [
      "scroll bad direction",
      { action_type: "scroll", params: { clicks: 1, direction: "diagonal" } },
      "params.direction",
    ],
    ["scroll x without y", { action_type: "scroll", params: { clicks: 1, x: 5 } }, "params.x"],
    ["drag missing y2", { action_type: "drag", params: { x1: 1, y1: 1, x2: 1 } }, "params.y2"],
    ["wait negative", { action_type: "wait", params: { seconds: -1 } }, "params.seconds"],
    ["wait over 60", { action_type: "wait", params: { seconds: 61 } }, "params.seconds"],
    ["wait NaN", { action_type: "wait", params: { seconds: Number.NaN } }, "params.seconds"],
    ["wait Infinity", { action_type: "wait", params: { seconds: Number.POSITIVE_INFINITY } }, "params.seconds"],
    ["done with params", { action_type: "done", params: { reason: "x" } }, "params"],
    ["fail unknown param", { action_type: "fail", params: { reason: "x" } }, "params"],
    ["fail empty code", { action_type: "fail", params: { code: "" } }, "params.code"],
  ])("%s", (_name, input, path) => {
    const r = ActionSchema.safeParse(input);
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => joinPath("", i.path))).toContain(path);
  });
});

describe("validateEngineActions (502 PREDICTION_FAILED on a bad engine answer)", () => {
  const screen = { width: 1280, height: 720 };

  it("returns parsed actions with defaults and canonical keys", () => {
    const out = validateEngineActions(
      [
        { action_type: "click", params: { x: 1279, y: 719 } },
        { action_type: "key_combo", params: { keys: ["cmd", "s"] } },
      ],
      screen,
    );
    expect(out).toEqual([
      { action_type: "click", params: { x: 1279, y: 719, button: "left", clicks: 1 } },
      { action_type: "key_combo", params: { keys: ["meta", "s"] } },
    ]);
  });

  it("accepts an empty list", () => {
    expect(validateEngineActions([], screen)).toEqual([]);
  });

  it.each([
    ["not an array", { action_type: "done" }, "engine.actions"],
    ["null", null, "engine.actions"],
    ["x == width is outside", [{ action_type: "click", params: { x: 1280, y: 0 } }], "engine.actions.0.params.x"],
    ["y == height is outside", [{ action_type: "move", params: { x: 0, y: 720 } }], "engine.actions.0.params.x"],
    [
      "drag end outside",
      [{ action_type: "drag", params: { x1: 0, y1: 0, x2: 5000, y2: 1 } }],
      "engine.actions.0.params.x2",
    ],
    [
      "scroll anchor outside",
      [{ action_type: "scroll", params: { clicks: 1, x: 0, y: 800 } }],
      "engine.actions.0.params.x",
    ],
    [
      "schema failure in second item",
      [{ action_type: "done" }, { action_type: "click", params: {} }],
      "engine.actions.1.params.x",
    ],
  ])("%s", (_name, raw, path) => {
    let err: unknown;
    try {
      validateEngineActions(raw, screen);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CoreError);
    const ce = err as CoreError;
    expect(ce.code).toBe("PREDICTION_FAILED");
    expect(ce.status).toBe(502);
    expect(ce.extras.details?.map((d) => d.path)).toContain(path);
  });

  it("scroll without an anchor is valid on any screen", () => {
    expect(
      validateEngineActions([{ action_type: "scroll", params: { clicks: -1 } }], { width: 1, height: 1 }),
    ).toHaveLength(1);
  });
});

describe("parseAction (trajectory items, 422 VALIDATION_ERROR with paths)", () => {
  it("prefixes paths", () => {
    expect(() =>
      parseAction({ action_type: "click", params: { x: "a", y: 1 } }, "body.trajectory.0.actions.2"),
    ).toThrow(
      expect.objectContaining({
        code: "VALIDATION_ERROR",
        extras: expect.objectContaining({
          details: expect.arrayContaining([expect.objectContaining({ path: "body.trajectory.0.actions.2.params.x" })]),
        }),
      }),
    );
  });
  it("reports an unknown param as its own path", () => {
    try {
      parseAction({ action_type: "move", params: { x: 1, y: 1, speed: 3 } }, "body.a");
      expect.unreachable();
    } catch (e) {
      expect((e as CoreError).extras.details).toEqual([{ path: "body.a.params.speed", message: "unknown field" }]);
    }
  });
});

describe("actionPoints", () => {
  it.each([
    [{ action_type: "click", params: { x: 1, y: 2 } }, [[1, 2]]],
    [
      { action_type: "drag", params: { x1: 1, y1: 2, x2: 3, y2: 4 } },
      [
        [1, 2],
        [3, 4],
      ],
    ],
    [{ action_type: "scroll", params: { clicks: 1 } }, []],
    [{ action_type: "type_text", params: { text: "a" } }, []],
  ])("%j", (input, expected) => {
    expect(actionPoints(ActionSchema.parse(input)).map((p) => [p.x, p.y])).toEqual(expected);
  });
});
