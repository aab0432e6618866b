import { CoreError } from "@cua/base/errors";
import { describe, expect, it } from "vitest";
import {
  batchScopes,
  COMMAND_NAMES,
  type CommandBackend,
  checkOnScreen,
  commandScope,
  fileOpScope,
  parseBatch,
  parseBrowserOp,
  parseCommand,
  parseFileOp,
  parseTerminal,
  parseTimeout,
  runBatch,
  runCommand,
} from "../src/commands.ts";
import { toKeysym } from "../src/keys.ts";
import { resolveInHome } from "../src/paths.ts";
import { MachineOpError, opOk } from "../src/provider.ts";

function caught(fn: () => unknown): CoreError {
  try {
    fn();
  } catch (e) {
    if (e instanceof CoreError) return e;
    throw e;
  }
  throw new Error("expected a CoreError");
}

describe("command allowlist and scopes", () => {
  it.each([
    ["click", "actions:exec"],
    ["double_click", "actions:exec"],
    ["right_click", "actions:exec"],
    ["move", "actions:exec"],
    ["type", "actions:exec"],
    ["key_press", "actions:exec"],
    ["key_combo", "actions:exec"],
    ["scroll", "actions:exec"],
    ["drag", "actions:exec"],
    ["wait", "actions:exec"],
    ["screenshot", "actions:exec"],
    ["browser_navigate", "actions:exec"],
    ["browser_click", "actions:exec"],
    ["browser_type", "actions:exec"],
    ["browser_execute", "browser:execute"],
    ["terminal_execute", "terminal:exec"],
    ["file_read", "files:read"],
    ["file_write", "files:write"],
  ])("%s needs %s", (cmd, scope) => {
    expect(commandScope(cmd)).toBe(scope);
  });

  it("has exactly the eighteen commands of DECISIONS.md", () => {
    expect(COMMAND_NAMES).toHaveLength(18);
  });

  it.each([
    ["read", "files:read"],
    ["exists", "files:read"],
    ["list", "files:read"],
    ["list-directory", "files:read"],
    ["download", "files:read"],
    ["list-downloads", "files:read"],
    ["write", "files:write"],
    ["edit", "files:write"],
    ["append", "files:write"],
    ["delete", "files:write"],
    ["delete-directory", "files:write"],
  ])("file op %s needs %s", (op, scope) => {
    expect(fileOpScope(op)).toBe(scope);
  });

  it("unknown command is 422 VALIDATION_ERROR at body.command", () => {
    const e = caught(() => parseCommand("format_disk", {}));
    expect(e.code).toBe("VALIDATION_ERROR");
    expect(e.status).toBe(422);
    expect(e.extras.details?.[0]?.path).toBe("body.command");
    expect(commandScope("format_disk")).toBeUndefined();
    // prototype names are not commands
    expect(caught(() => parseCommand("toString", {})).code).toBe("VALIDATION_ERROR");
  });

  it("unknown browser op is 400 UNKNOWN_BROWSER_OP; unknown file op is 400 UNKNOWN_FILE_OP", () => {
    const b = caught(() => parseBrowserOp("hack", {}));
    expect([b.code, b.status]).toEqual(["UNKNOWN_BROWSER_OP", 400]);
    const f = caught(() => parseFileOp("chmod", { path: "x" }));
    expect([f.code, f.status]).toEqual(["UNKNOWN_FILE_OP", 400]);
  });

  it("all sixteen browser ops parse", () => {
    const ops: [string, unknown][] = [
      ["open", {}],
      ["navigate", { url: "https://example.com" }],
      ["click", { selector: "#a" }],
      ["type", { text: "x" }],
      ["dom", {}],
      ["clickables", {}],
      ["state", {}],
      ["info", {}],
      ["scroll", { delta_y: 100 }],
      ["close", {}],
      ["screenshot", {}],
      ["wait", { selector: "#a" }],
      ["list-tabs", {}],
      ["open-tab", {}],
      ["close-tab", {}],
      ["switch-tab", { tab_id: "T1" }],
    ];
    for (const [op, p] of ops) expect(parseBrowserOp(op, p).op).toBe(op);
  });
});

describe("parameter validation (422 VALIDATION_ERROR with a field path)", () => {
  const bad: [string, unknown, string][] = [
    ["click", { x: 1 }, "body.parameters.y"],
    ["click", { x: -1, y: 0 }, "body.parameters.x"],
    ["click", { x: 1.5, y: 0 }, "body.parameters.x"],
    ["click", { x: 1, y: 1, button: "side" }, "body.parameters.button"],
    ["click", { x: 1, y: 1, extra: true }, "body.parameters.extra"],
    ["type", { text: "" }, "body.parameters.text"],
    ["key_press", { keys: [] }, "body.parameters.keys"],
    ["key_press", { keys: Array(101).fill("a") }, "body.parameters.keys"],
    ["key_press", { keys: ["no such key!"] }, "body.parameters.keys.0"],
    ["key_combo", { keys: ["ctrl"] }, "body.parameters.keys"],
    ["key_combo", { keys: Array(9).fill("a") }, "body.parameters.keys"],
    ["scroll", { clicks: 3, x: 5 }, "body.parameters.x"],
    ["drag", { x1: 0, y1: 0, x2: 1 }, "body.parameters.y2"],
    ["wait", { seconds: 61 }, "body.parameters.seconds"],
    ["browser_navigate", { url: "file:///etc/passwd" }, "body.parameters.url"],
    ["browser_navigate", { url: "javascript:alert(1)" }, "body.parameters.url"],
    ["browser_click", {}, "body.parameters"],
    ["browser_click", { selector: "#a", x: 1, y: 2 }, "body.parameters"],
    ["terminal_execute", { command: "ls", timeout_ms: 999 }, "body.parameters.timeout_ms"],
    ["terminal_execute", { command: "ls", timeout_ms: 120_001 }, "body.parameters.timeout_ms"],
    ["terminal_execute", { command: "ls", session_id: "a b" }, "body.parameters.session_id"],
    ["file_write", { path: "a", content: "x", encoding: "latin1" }, "body.parameters.encoding"],
    ["screenshot", { full: true }, "body.parameters.full"],
  ];
  it.each(bad)("%s %j -> %s", (cmd, params, path) => {
    const e = caught(() => parseCommand(cmd, params));
    expect(e.code).toBe("VALIDATION_ERROR");
    expect(e.extras.details?.map((d) => d.path)).toContain(path);
  });

  it("applies defaults", () => {
    expect(parseCommand("click", { x: 1, y: 2 })).toEqual({
      command: "click",
      params: { x: 1, y: 2, button: "left", clicks: 1 },
    });
    expect(parseCommand("scroll", { clicks: -3 }).params).toEqual({ clicks: -3, direction: "vertical" });
    expect(parseCommand("file_read", { path: "a" }).params).toEqual({ path: "a", encoding: "utf8" });
  });

  it("timeout_ms is 1000..120000", () => {
    expect(parseTimeout(undefined)).toBe(30_000);
    expect(parseTimeout(1000)).toBe(1000);
    expect(parseTimeout(120_000)).toBe(120_000);
    expect(caught(() => parseTimeout(999)).code).toBe("VALIDATION_ERROR");
    expect(caught(() => parseTimeout(120_001)).code).toBe("VALIDATION_ERROR");
    expect(caught(() => parseTerminal({ command: "x", timeout_ms: 50 })).extras.details?.[0]?.path).toBe(
      "body.timeout_ms",
    );
  });

  it("coordinates must be on the screen", () => {
    const screen = { width: 1280, height: 720 };
    expect(() => checkOnScreen(parseCommand("click", { x: 1279, y: 719 }), screen)).not.toThrow();
    expect(
      caught(() => checkOnScreen(parseCommand("click", { x: 1280, y: 0 }), screen)).extras.details?.[0]?.path,
    ).toBe("body.parameters.x");
    expect(
      caught(() => checkOnScreen(parseCommand("drag", { x1: 0, y1: 0, x2: 5, y2: 720 }), screen)).extras.details?.[0]
        ?.path,
    ).toBe("body.parameters.y2");
  });

  it("file op parameters", () => {
    expect(parseFileOp("list", {}).params).toEqual({ path: ".", recursive: false });
    expect(caught(() => parseFileOp("download", { url: "ftp://x/y" })).code).toBe("VALIDATION_ERROR");
    expect(caught(() => parseFileOp("edit", { path: "a", old_text: "", new_text: "b" })).code).toBe("VALIDATION_ERROR");
    expect(parseFileOp("delete-directory", { path: "d" }).params).toEqual({ path: "d", recursive: false });
  });
});

describe("keys", () => {
  it.each([
    ["enter", "Return"],
    ["Ctrl", "Control_L"],
    ["cmd", "Super_L"],
    ["a", "a"],
    ["+", "plus"],
    ["F5", "F5"],
    ["pagedown", "Next"],
    ["é", "U00E9"],
    ["KP_Enter", "KP_Enter"],
  ])("%s -> %s", (name, sym) => expect(toKeysym(name)).toBe(sym));
  it.each(["", "ctrl+c", "a b", "\n", "x".repeat(41)])("rejects %j", (name) => expect(toKeysym(name)).toBeNull());
});

describe("home confinement (lexical)", () => {
  const home = "/data/machines/cua-1";
  it.each([
    ["notes.txt", "notes.txt"],
    ["./a/../b", "b"],
    ["~", "."],
    ["~/x/y", "x/y"],
    ["/data/machines/cua-1/z", "z"],
    [".", "."],
  ])("%s is inside", (input, rel) => expect(resolveInHome(home, input).rel).toBe(rel));
  it.each(["../cua-2/x", "..", "/etc/passwd", "/data/machines/cua-10/x", "a/../../b", "~root/x", "a\0b"])(
    "%s is rejected",
    (input) => {
      const e = caught(() => resolveInHome(home, input));
      expect(e.code).toBe("VALIDATION_ERROR");
      expect(e.extras.details?.[0]?.path).toBe("parameters.path");
    },
  );
});

describe("batch", () => {
  const okBackend = (log: string[], failAt = -1): CommandBackend => ({
    input: async (a) => {
      log.push(a.kind);
      if (log.length - 1 === failAt) throw new MachineOpError("INPUT_FAILED", "boom");
    },
    screenshot: async () => {
      throw new CoreError("SCREENSHOT_FAILED");
    },
    browser: async () => opOk({}),
    browserExecute: async () => opOk({}),
    terminal: async () => opOk({ output: "" }),
    file: async () => opOk({}),
  });

  it("accepts 50 steps and rejects 51 or 0", () => {
    const step = { command: "move", parameters: { x: 1, y: 1 } };
    expect(parseBatch({ steps: Array(50).fill(step) }).steps).toHaveLength(50);
    expect(caught(() => parseBatch({ steps: Array(51).fill(step) })).extras.details?.[0]?.path).toBe("body.steps");
    expect(caught(() => parseBatch({ steps: [] })).code).toBe("VALIDATION_ERROR");
  });

  it("validates every step before running any, with the step's path", () => {
    const e = caught(() =>
      parseBatch({
        steps: [
          { command: "move", parameters: { x: 1, y: 1 } },
          { command: "click", parameters: { x: 1 } },
        ],
      }),
    );
    expect(e.extras.details?.[0]?.path).toBe("body.steps.1.parameters.y");
    const u = caught(() => parseBatch({ steps: [{ command: "nope" }] }));
    expect(u.extras.details?.[0]?.path).toBe("body.steps.0.command");
  });

  it("lists the scopes a batch needs", () => {
    expect(
      batchScopes({
        steps: [{ command: "click" }, { command: "terminal_execute" }, { command: "file_read" }, { command: "move" }],
      }).sort(),
    ).toEqual(["actions:exec", "files:read", "terminal:exec"]);
  });

  it("stop_on_error (default) aborts and reports the rest as skipped", async () => {
    const log: string[] = [];
    const batch = parseBatch({
      steps: [
        { command: "move", parameters: { x: 1, y: 1 } },
        { command: "click", parameters: { x: 1, y: 1 } },
        { command: "move", parameters: { x: 2, y: 2 } },
      ],
    });
    const r = await runBatch(batch, (p, t) => runCommand(okBackend(log, 1), p, t));
    expect(r.completed_count).toBe(1);
    expect(r.failed_count).toBe(1);
    expect(r.aborted).toBe(true);
    expect(r.results.map((s) => s.status)).toEqual(["succeeded", "failed", "skipped"]);
    expect(r.results[1]?.error?.code).toBe("INPUT_FAILED");
    expect(log).toEqual(["move", "click"]);
  });

  it("without stop_on_error runs every step; thrown CoreErrors count as failed steps", async () => {
    const log: string[] = [];
    const batch = parseBatch({
      stop_on_error: false,
      steps: [{ command: "screenshot" }, { command: "move", parameters: { x: 3, y: 3 } }],
    });
    const r = await runBatch(batch, (p, t) => runCommand(okBackend(log), p, t));
    expect(r).toMatchObject({ completed_count: 1, failed_count: 1, aborted: false });
    expect(r.results[0]).toMatchObject({
      index: 0,
      command: "screenshot",
      status: "failed",
      error: { code: "SCREENSHOT_FAILED" },
    });
  });

  it("a command past its deadline is a TIMEOUT failure", async () => {
    const r = await runCommand(okBackend([]), parseCommand("wait", { seconds: 5 }), 1000);
    expect(r).toMatchObject({ success: false, error: { code: "TIMEOUT" } });
    expect(r.duration_ms).toBeGreaterThanOrEqual(990);
    expect(r.duration_ms).toBeLessThan(3000);
  });
});
