// The machine command allowlist (DECISIONS.md "Machines"), each command's scope and parameter schema
// ("Precise answers"), the browser ops and file ops of SPEC.md, and the batch runner.
// Providers supply a CommandBackend; runCommand/runBatch hold the logic every provider shares.

import { CoreError, validationError } from "@cua/base/errors";
import { detailsError, issuesToDetails } from "@cua/base/validation";
import { z } from "zod";
import { isValidKeyName } from "./keys.ts";
import type { BatchResult, BatchStepResult, CommandResult, OpResult, ScreenSize, Screenshot } from "./provider.ts";
import { MachineOpError, opFail, opOk } from "./provider.ts";

export type MachineScope = "actions:exec" | "terminal:exec" | "files:read" | "files:write" | "browser:execute";

export const MIN_TIMEOUT_MS = 1000;
export const MAX_TIMEOUT_MS = 120_000;
export const DEFAULT_TIMEOUT_MS = 30_000;
export const MAX_BATCH_STEPS = 50;
export const TERMINAL_OUTPUT_LIMIT = 5000;
/** largest file read or written through file ops (bytes) */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;

export const TimeoutMs = z
  .number()
  .int()
  .min(MIN_TIMEOUT_MS)
  .max(MAX_TIMEOUT_MS)
  .describe("Deadline for this command in milliseconds (1000..120000)");

// ---------------------------------------------------------------------------------------------
// Shared field schemas

const Coord = z.number().int().min(0).max(16_384).describe("Screen coordinate in pixels");
const Button = z.enum(["left", "right", "middle"]).describe("Mouse button");
const KeyName = z
  .string()
  .min(1)
  .max(40)
  .refine(isValidKeyName, { message: "unknown key name" })
  .describe("Key name, e.g. enter, ctrl, a, f5");
const HoldKeys = z.array(KeyName).max(8).describe("Modifier keys held during the action");

const ALLOWED_URL_SCHEMES = new Set(["http:", "https:"]);
export function isAllowedUrl(value: string): boolean {
  if (value === "about:blank") return true;
  try {
    const u = new URL(value);
    return ALLOWED_URL_SCHEMES.has(u.protocol);
  } catch {
    return false;
  }
}
const Url = z
  .string()
  .min(1)
  .max(8192)
  .refine(isAllowedUrl, { message: "must be an http(s) URL or about:blank" })
  .describe("http(s) URL or about:blank");
const DownloadUrl = z
  .string()
  .min(1)
  .max(8192)
  .refine((v) => isAllowedUrl(v) && v !== "about:blank", { message: "must be an http(s) URL" })
  .describe("http(s) URL to download");
const Selector = z.string().min(1).max(4096).describe("CSS selector");
const Path = z
  .string()
  .min(1)
  .max(4096)
  .describe(
    "Path on the machine: relative or ~/x (inside the home), or absolute (anything the machine's user may touch)",
  );
const Encoding = z.enum(["utf8", "base64"]).describe("Content encoding (default utf8)");
const Content = z
  .string()
  .max(MAX_FILE_BYTES * 2)
  .describe("File content in the given encoding");
const TabId = z.string().min(1).max(128).describe("Tab id from list-tabs");

const xyTogether = (v: { x?: number | undefined; y?: number | undefined }) =>
  (v.x === undefined) === (v.y === undefined);

// ---------------------------------------------------------------------------------------------
// Action commands

export const ClickParams = z.strictObject({
  x: Coord,
  y: Coord,
  button: Button.default("left"),
  clicks: z.number().int().min(1).max(3).default(1).describe("Number of clicks"),
  hold_keys: HoldKeys.optional(),
});
export const PointParams = z.strictObject({ x: Coord, y: Coord, hold_keys: HoldKeys.optional() });
export const MoveParams = z.strictObject({ x: Coord, y: Coord });
export const TypeParams = z.strictObject({
  text: z.string().min(1).max(10_000).describe("Literal text typed at the current focus"),
});
export const KeyPressParams = z.strictObject({
  keys: z.array(KeyName).min(1).max(100).describe("Keys pressed and released in sequence"),
});
export const KeyComboParams = z.strictObject({
  keys: z.array(KeyName).min(2).max(8).describe("Keys held together as one chord"),
});
export const ScrollParams = z
  .strictObject({
    clicks: z.number().int().min(-100).max(100).describe("Vertical: positive up; horizontal: positive right"),
    direction: z.enum(["vertical", "horizontal"]).default("vertical"),
    x: Coord.optional(),
    y: Coord.optional(),
  })
  .refine(xyTogether, { message: "x and y go together", path: ["x"] });
export const DragParams = z.strictObject({
  x1: Coord,
  y1: Coord,
  x2: Coord,
  y2: Coord,
  button: Button.default("left"),
  hold_keys: HoldKeys.optional(),
});
export const WaitParams = z.strictObject({
  seconds: z.number().min(0).max(60).describe("Seconds to wait (0..60)"),
});
export const EmptyParams = z.strictObject({});
export const BrowserNavigateParams = z.strictObject({ url: Url });
export const BrowserClickParams = z
  .strictObject({
    selector: Selector.optional(),
    x: Coord.optional().describe("Viewport x (with y, instead of selector)"),
    y: Coord.optional(),
  })
  .refine((v) => (v.selector !== undefined) !== (v.x !== undefined && v.y !== undefined) && xyTogether(v), {
    message: "give either selector or x and y",
  });
export const BrowserTypeParams = z.strictObject({
  selector: Selector,
  text: z.string().max(100_000).describe("Text inserted into the element"),
});
export const BrowserExecuteParams = z.strictObject({
  script: z.string().min(1).max(100_000).describe("JavaScript evaluated in the active tab; the value is returned"),
});
export const TerminalParams = z.strictObject({
  command: z.string().min(1).max(100_000).describe("bash command line"),
  timeout_ms: TimeoutMs.optional(),
  session_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .optional()
    .describe("Reuse a persistent shell (cwd and environment persist)"),
  cwd: z.string().min(1).max(4096).optional().describe("Working directory (relative to home when relative)"),
});
export const FileReadParams = z.strictObject({ path: Path, encoding: Encoding.default("utf8") });
export const FileWriteParams = z.strictObject({ path: Path, content: Content, encoding: Encoding.default("utf8") });

interface CommandSpec {
  scope: MachineScope;
  schema: z.ZodType;
  /** needs the desktop (X server / browser) */
  desktop: boolean;
}

export const COMMANDS = {
  click: { scope: "actions:exec", schema: ClickParams, desktop: true },
  double_click: { scope: "actions:exec", schema: PointParams, desktop: true },
  right_click: { scope: "actions:exec", schema: PointParams, desktop: true },
  move: { scope: "actions:exec", schema: MoveParams, desktop: true },
  type: { scope: "actions:exec", schema: TypeParams, desktop: true },
  key_press: { scope: "actions:exec", schema: KeyPressParams, desktop: true },
  key_combo: { scope: "actions:exec", schema: KeyComboParams, desktop: true },
  scroll: { scope: "actions:exec", schema: ScrollParams, desktop: true },
  drag: { scope: "actions:exec", schema: DragParams, desktop: true },
  wait: { scope: "actions:exec", schema: WaitParams, desktop: false },
  screenshot: { scope: "actions:exec", schema: EmptyParams, desktop: true },
  browser_navigate: { scope: "actions:exec", schema: BrowserNavigateParams, desktop: true },
  browser_click: { scope: "actions:exec", schema: BrowserClickParams, desktop: true },
  browser_type: { scope: "actions:exec", schema: BrowserTypeParams, desktop: true },
  browser_execute: { scope: "browser:execute", schema: BrowserExecuteParams, desktop: true },
  terminal_execute: { scope: "terminal:exec", schema: TerminalParams, desktop: false },
  file_read: { scope: "files:read", schema: FileReadParams, desktop: false },
  file_write: { scope: "files:write", schema: FileWriteParams, desktop: false },
} as const satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];
export type CommandParams<C extends CommandName> = z.output<(typeof COMMANDS)[C]["schema"]>;
export type ParsedCommand = { [C in CommandName]: { command: C; params: CommandParams<C> } }[CommandName];

export function isCommandName(name: unknown): name is CommandName {
  return typeof name === "string" && Object.hasOwn(COMMANDS, name);
}

/** The scope a command needs, or undefined for a command outside the allowlist. */
export function commandScope(name: string): MachineScope | undefined {
  return isCommandName(name) ? COMMANDS[name].scope : undefined;
}

// ---------------------------------------------------------------------------------------------
// Browser ops (POST /v1/machines/{id}/browser/{op}, scope actions:exec)

const WaitUntil = z.enum(["load", "domcontentloaded", "none"]).default("load");

export const BROWSER_OPS = {
  open: z.strictObject({ url: Url.optional() }),
  navigate: z.strictObject({ url: Url, wait_until: WaitUntil }),
  click: z
    .strictObject({
      selector: Selector.optional(),
      x: Coord.optional().describe("Viewport x"),
      y: Coord.optional().describe("Viewport y"),
      button: Button.default("left"),
      clicks: z.number().int().min(1).max(3).default(1),
    })
    .refine((v) => (v.selector !== undefined) !== (v.x !== undefined && v.y !== undefined) && xyTogether(v), {
      message: "give either selector or x and y",
    }),
  type: z.strictObject({
    selector: Selector.optional().describe("Element to focus first; default: the focused element"),
    text: z.string().max(100_000),
    clear: z.boolean().default(false).describe("Clear the field before typing"),
    submit: z.boolean().default(false).describe("Press Enter after typing"),
  }),
  dom: z.strictObject({
    selector: Selector.optional().describe("Return this element's HTML instead of the document's"),
    max_length: z.number().int().min(1).max(2_000_000).default(200_000),
  }),
  clickables: z.strictObject({ max: z.number().int().min(1).max(1000).default(200) }),
  state: EmptyParams,
  info: EmptyParams,
  scroll: z
    .strictObject({
      selector: Selector.optional().describe("Scroll this element into view"),
      delta_x: z.number().int().min(-100_000).max(100_000).optional(),
      delta_y: z.number().int().min(-100_000).max(100_000).optional(),
      to: z.enum(["top", "bottom"]).optional(),
    })
    .refine((v) => [v.selector, v.to, v.delta_x ?? v.delta_y].filter((x) => x !== undefined).length <= 1, {
      message: "give one of selector, to, or delta_x/delta_y",
    }),
  close: EmptyParams,
  screenshot: z.strictObject({
    format: z.enum(["png", "jpeg"]).default("png"),
    quality: z.number().int().min(1).max(100).optional(),
    full_page: z.boolean().default(false),
  }),
  wait: z.strictObject({
    selector: Selector.optional(),
    state: z.enum(["attached", "visible", "hidden", "detached"]).default("visible"),
    ms: z.number().int().min(0).max(60_000).optional().describe("Plain delay when no selector is given"),
  }),
  "list-tabs": EmptyParams,
  "open-tab": z.strictObject({ url: Url.optional() }),
  "close-tab": z.strictObject({ tab_id: TabId.optional() }),
  "switch-tab": z.strictObject({ tab_id: TabId }),
} as const satisfies Record<string, z.ZodType>;

export type BrowserOpName = keyof typeof BROWSER_OPS;
export const BROWSER_OP_NAMES = Object.keys(BROWSER_OPS) as BrowserOpName[];
export type BrowserOpParams<O extends BrowserOpName> = z.output<(typeof BROWSER_OPS)[O]>;
export type ParsedBrowserOp = { [O in BrowserOpName]: { op: O; params: BrowserOpParams<O> } }[BrowserOpName];
export const BROWSER_OP_SCOPE: MachineScope = "actions:exec";

export function isBrowserOp(op: unknown): op is BrowserOpName {
  return typeof op === "string" && Object.hasOwn(BROWSER_OPS, op);
}

// ---------------------------------------------------------------------------------------------
// File ops (POST /v1/machines/{id}/files/{op})

const ListParams = z.strictObject({
  path: Path.default("."),
  recursive: z.boolean().default(false),
});

export const FILE_OPS = {
  read: { scope: "files:read", schema: FileReadParams },
  exists: { scope: "files:read", schema: z.strictObject({ path: Path }) },
  list: { scope: "files:read", schema: ListParams },
  "list-directory": { scope: "files:read", schema: ListParams },
  download: {
    scope: "files:read",
    schema: z.strictObject({
      url: DownloadUrl,
      filename: z.string().min(1).max(200).optional().describe("File name inside Downloads"),
    }),
  },
  "list-downloads": { scope: "files:read", schema: EmptyParams },
  write: { scope: "files:write", schema: FileWriteParams },
  edit: {
    scope: "files:write",
    schema: z.strictObject({
      path: Path,
      old_text: z.string().min(1).max(MAX_FILE_BYTES),
      new_text: z.string().max(MAX_FILE_BYTES),
      replace_all: z.boolean().default(false).describe("Replace every occurrence (otherwise old_text must be unique)"),
    }),
  },
  append: { scope: "files:write", schema: FileWriteParams },
  delete: { scope: "files:write", schema: z.strictObject({ path: Path }) },
  "delete-directory": {
    scope: "files:write",
    schema: z.strictObject({ path: Path, recursive: z.boolean().default(false) }),
  },
} as const satisfies Record<string, { scope: MachineScope; schema: z.ZodType }>;

export type FileOpName = keyof typeof FILE_OPS;
export const FILE_OP_NAMES = Object.keys(FILE_OPS) as FileOpName[];
export type FileOpParams<O extends FileOpName> = z.output<(typeof FILE_OPS)[O]["schema"]>;
export type ParsedFileOp = { [O in FileOpName]: { op: O; params: FileOpParams<O> } }[FileOpName];

export function isFileOp(op: unknown): op is FileOpName {
  return typeof op === "string" && Object.hasOwn(FILE_OPS, op);
}

/** files:read for read/exists/list/list-directory/download/list-downloads, files:write for the rest. */
export function fileOpScope(op: string): MachineScope | undefined {
  return isFileOp(op) ? FILE_OPS[op].scope : undefined;
}

export const TERMINAL_SCOPE: MachineScope = "terminal:exec";
export type TerminalInput = z.output<typeof TerminalParams>;

// ---------------------------------------------------------------------------------------------
// Validation entry points (throw CoreError)

/** A command body's zod error, through the one validation mapper (packages/base/src/validation.ts). */
export function zodToCoreError(error: z.ZodError, prefix: string): CoreError {
  return detailsError(issuesToDetails(error.issues, prefix));
}

function parseWith<T extends z.ZodType>(schema: T, value: unknown, prefix: string): z.output<T> {
  const r = schema.safeParse(value ?? {});
  if (!r.success) throw zodToCoreError(r.error, prefix);
  return r.data;
}

/** Unknown command -> 422 VALIDATION_ERROR (SPEC: "an unknown command returns 422"). */
export function parseCommand(command: unknown, parameters: unknown, prefix = "body"): ParsedCommand {
  if (!isCommandName(command)) {
    throw new CoreError(
      "VALIDATION_ERROR",
      `${prefix}.command: unknown command ${JSON.stringify(command)}; allowed: ${COMMAND_NAMES.join(", ")}`,
      { details: [{ path: `${prefix}.command`, message: "unknown command" }] },
    );
  }
  const params = parseWith(COMMANDS[command].schema, parameters, `${prefix}.parameters`);
  return { command, params } as ParsedCommand;
}

/** Unknown op -> 400 UNKNOWN_BROWSER_OP; bad parameters -> 422 VALIDATION_ERROR. */
export function parseBrowserOp(op: string, parameters: unknown, prefix = "body.parameters"): ParsedBrowserOp {
  if (!isBrowserOp(op)) {
    throw new CoreError("UNKNOWN_BROWSER_OP", `Unknown browser op "${op}"; known: ${BROWSER_OP_NAMES.join(", ")}.`);
  }
  return { op, params: parseWith(BROWSER_OPS[op], parameters, prefix) } as ParsedBrowserOp;
}

/** Unknown op -> 400 UNKNOWN_FILE_OP; bad parameters -> 422 VALIDATION_ERROR. */
export function parseFileOp(op: string, parameters: unknown, prefix = "body.parameters"): ParsedFileOp {
  if (!isFileOp(op)) {
    throw new CoreError("UNKNOWN_FILE_OP", `Unknown file op "${op}"; known: ${FILE_OP_NAMES.join(", ")}.`);
  }
  return { op, params: parseWith(FILE_OPS[op].schema, parameters, prefix) } as ParsedFileOp;
}

export function parseTerminal(input: unknown, prefix = "body"): TerminalInput {
  return parseWith(TerminalParams, input, prefix);
}

export function parseTimeout(value: unknown, path = "body.timeout_ms"): number {
  if (value === undefined || value === null) return DEFAULT_TIMEOUT_MS;
  return parseWith(TimeoutMs, value, path);
}

export const BatchStep = z.strictObject({
  command: z.string().describe("Allowlisted command name"),
  parameters: z.record(z.string(), z.unknown()).default({}).describe("Command parameters"),
  timeout_ms: TimeoutMs.optional(),
});
export const BatchBody = z.strictObject({
  steps: z.array(BatchStep).min(1).max(MAX_BATCH_STEPS).describe("At most 50 steps run in order"),
  stop_on_error: z.boolean().default(true).describe("Stop at the first failed step (default true)"),
});

export interface ParsedBatch {
  steps: { parsed: ParsedCommand; timeoutMs: number }[];
  stop_on_error: boolean;
}

/** Validates every step before anything runs; the first problem is a 422 with its step path. */
export function parseBatch(body: unknown): ParsedBatch {
  const b = parseWith(BatchBody, body, "body");
  return {
    stop_on_error: b.stop_on_error,
    steps: b.steps.map((s, i) => ({
      parsed: parseCommand(s.command, s.parameters, `body.steps.${i}`),
      timeoutMs: s.timeout_ms ?? DEFAULT_TIMEOUT_MS,
    })),
  };
}

/** Scopes a batch needs (one per distinct step command); unknown commands are skipped here. */
export function batchScopes(body: unknown): MachineScope[] {
  const steps = (body as { steps?: unknown } | null)?.steps;
  if (!Array.isArray(steps)) return [];
  const scopes = new Set<MachineScope>();
  for (const s of steps) {
    const scope = commandScope(String((s as { command?: unknown } | null)?.command ?? ""));
    if (scope) scopes.add(scope);
  }
  return [...scopes];
}

/** Coordinates must lie on the screen (422 with the parameter path). */
export function checkOnScreen(parsed: ParsedCommand, screen: ScreenSize, prefix = "body.parameters"): void {
  const pts: [string, number, "x" | "y"][] = [];
  const p = parsed.params as Record<string, unknown>;
  for (const k of ["x", "x1", "x2"]) if (typeof p[k] === "number") pts.push([k, p[k] as number, "x"]);
  for (const k of ["y", "y1", "y2"]) if (typeof p[k] === "number") pts.push([k, p[k] as number, "y"]);
  // browser_click x/y are viewport coordinates, checked by the browser itself
  if (parsed.command === "browser_click") return;
  for (const [k, v, axis] of pts) {
    const limit = axis === "x" ? screen.width : screen.height;
    if (v >= limit)
      throw validationError(
        `${prefix}.${k}`,
        `must be less than the screen ${axis === "x" ? "width" : "height"} ${limit}`,
      );
  }
}

// ---------------------------------------------------------------------------------------------
// Running commands

/** A low-level input step; the local provider turns it into xdotool calls, the mock into state. */
export type InputAction =
  | { kind: "click"; x: number; y: number; button: "left" | "right" | "middle"; clicks: number; hold_keys: string[] }
  | { kind: "move"; x: number; y: number }
  | { kind: "type"; text: string }
  | { kind: "keys"; keys: string[]; chord: boolean }
  | {
      kind: "scroll";
      clicks: number;
      direction: "vertical" | "horizontal";
      x?: number | undefined;
      y?: number | undefined;
    }
  | {
      kind: "drag";
      x1: number;
      y1: number;
      x2: number;
      y2: number;
      button: "left" | "right" | "middle";
      hold_keys: string[];
    };

export interface CommandBackend {
  input(action: InputAction, signal: AbortSignal): Promise<void>;
  screenshot(): Promise<Screenshot>;
  browser(op: ParsedBrowserOp, timeoutMs: number): Promise<OpResult>;
  browserExecute(script: string, timeoutMs: number): Promise<OpResult>;
  terminal(input: TerminalInput): Promise<OpResult>;
  file(op: ParsedFileOp): Promise<OpResult>;
}

function inputActionFor(parsed: ParsedCommand): InputAction | null {
  switch (parsed.command) {
    case "click": {
      const p = parsed.params;
      return { kind: "click", x: p.x, y: p.y, button: p.button, clicks: p.clicks, hold_keys: p.hold_keys ?? [] };
    }
    case "double_click":
      return {
        kind: "click",
        x: parsed.params.x,
        y: parsed.params.y,
        button: "left",
        clicks: 2,
        hold_keys: parsed.params.hold_keys ?? [],
      };
    case "right_click":
      return {
        kind: "click",
        x: parsed.params.x,
        y: parsed.params.y,
        button: "right",
        clicks: 1,
        hold_keys: parsed.params.hold_keys ?? [],
      };
    case "move":
      return { kind: "move", x: parsed.params.x, y: parsed.params.y };
    case "type":
      return { kind: "type", text: parsed.params.text };
    case "key_press":
      return { kind: "keys", keys: parsed.params.keys, chord: false };
    case "key_combo":
      return { kind: "keys", keys: parsed.params.keys, chord: true };
    case "scroll": {
      const p = parsed.params;
      return { kind: "scroll", clicks: p.clicks, direction: p.direction, x: p.x, y: p.y };
    }
    case "drag": {
      const p = parsed.params;
      return { kind: "drag", x1: p.x1, y1: p.y1, x2: p.x2, y2: p.y2, button: p.button, hold_keys: p.hold_keys ?? [] };
    }
    default:
      return null;
  }
}

class DeadlineError extends Error {}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new DeadlineError("aborted"));
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        reject(new DeadlineError("aborted"));
      },
      { once: true },
    );
  });
}

/**
 * Runs one parsed command against a backend within timeoutMs. Operation failures come back as
 * success: false; CoreErrors (SCREENSHOT_FAILED, INVALID_STATE, ...) propagate.
 */
export async function runCommand(
  backend: CommandBackend,
  parsed: ParsedCommand,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<CommandResult> {
  const started = performance.now();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new DeadlineError(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    const outcome = await Promise.race([dispatch(backend, parsed, controller.signal, timeoutMs), deadline]);
    return { command: parsed.command, ...outcome, duration_ms: Math.round(performance.now() - started) };
  } catch (e) {
    if (e instanceof DeadlineError) {
      return {
        command: parsed.command,
        ...opFail("TIMEOUT", `The command did not finish within ${timeoutMs} ms.`),
        duration_ms: Math.round(performance.now() - started),
      };
    }
    if (e instanceof MachineOpError) {
      return {
        command: parsed.command,
        ...opFail(e.code, e.message),
        duration_ms: Math.round(performance.now() - started),
      };
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

async function dispatch(
  backend: CommandBackend,
  parsed: ParsedCommand,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<OpResult> {
  const action = inputActionFor(parsed);
  if (action) {
    await backend.input(action, signal);
    return opOk({ ...parsed.params });
  }
  switch (parsed.command) {
    case "wait":
      await sleep(parsed.params.seconds * 1000, signal);
      return opOk({ seconds: parsed.params.seconds });
    case "screenshot": {
      const shot = await backend.screenshot();
      return opOk({
        image_b64: shot.png.toString("base64"),
        mime_type: shot.mime_type,
        width: shot.width,
        height: shot.height,
        captured_at: shot.captured_at,
      });
    }
    case "browser_navigate":
      return backend.browser({ op: "navigate", params: { url: parsed.params.url, wait_until: "load" } }, timeoutMs);
    case "browser_click": {
      const p = parsed.params;
      return backend.browser(
        { op: "click", params: { selector: p.selector, x: p.x, y: p.y, button: "left", clicks: 1 } },
        timeoutMs,
      );
    }
    case "browser_type":
      return backend.browser(
        {
          op: "type",
          params: { selector: parsed.params.selector, text: parsed.params.text, clear: false, submit: false },
        },
        timeoutMs,
      );
    case "browser_execute":
      return backend.browserExecute(parsed.params.script, timeoutMs);
    case "terminal_execute":
      // the terminal enforces its own timeout_ms; the action deadline bounds it otherwise
      return backend.terminal({ ...parsed.params, timeout_ms: parsed.params.timeout_ms ?? timeoutMs });
    case "file_read":
      return backend.file({ op: "read", params: parsed.params });
    case "file_write":
      return backend.file({ op: "write", params: parsed.params });
    default:
      throw new Error(`unhandled command ${parsed.command}`);
  }
}

/**
 * Runs a validated batch in order. With stop_on_error the first failure ends it: the remaining steps
 * are reported with status "skipped" and aborted is true. A step that throws (e.g. SCREENSHOT_FAILED)
 * counts as failed with the error's code.
 */
export async function runBatch(
  batch: ParsedBatch,
  run: (parsed: ParsedCommand, timeoutMs: number) => Promise<CommandResult>,
): Promise<BatchResult> {
  const results: BatchStepResult[] = [];
  let completed = 0;
  let failed = 0;
  let aborted = false;
  for (const [index, step] of batch.steps.entries()) {
    if (aborted) {
      results.push({
        index,
        command: step.parsed.command,
        status: "skipped",
        success: false,
        result: {},
        error: { code: "SKIPPED", message: "Not run: an earlier step failed and stop_on_error is set." },
        duration_ms: 0,
      });
      continue;
    }
    let r: CommandResult;
    const started = performance.now();
    try {
      r = await run(step.parsed, step.timeoutMs);
    } catch (e) {
      const code = e instanceof CoreError ? e.code : "INTERNAL_ERROR";
      const message = e instanceof Error ? e.message : String(e);
      r = {
        command: step.parsed.command,
        success: false,
        result: {},
        error: { code, message },
        duration_ms: Math.round(performance.now() - started),
      };
    }
    results.push({ index, status: r.success ? "succeeded" : "failed", ...r });
    if (r.success) completed++;
    else {
      failed++;
      if (batch.stop_on_error && index < batch.steps.length - 1) aborted = true;
    }
  }
  return { results, completed_count: completed, failed_count: failed, aborted };
}
