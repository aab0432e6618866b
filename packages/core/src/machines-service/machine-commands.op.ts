// Commands on a machine: one action, a batch, a browser op, a terminal command, a file op. Scopes that
// depend on the body (the command, the file op) are checked here with requireScopes.
import { z } from "zod";
import { requireScopes } from "../operations/caller.ts";
import { defineOperation } from "../operations/define.ts";
import {
  actionScope,
  batchScopesOf,
  fileScope,
  runAction,
  runBatchOnMachine,
  runBrowserOp,
  runFileOpOnMachine,
  runTerminal,
} from "./machine-commands.ts";
import { DISPATCH_ERRORS, RUNNING_ERRORS } from "./op-errors.ts";
import {
  ActionBody,
  ActionResponse,
  BatchBodySchema,
  BatchResponse,
  MachineIdParam,
  OpBody,
  OpResponse,
  TerminalBody,
  TerminalResponse,
} from "./schemas.ts";

const tags = ["Machines"];

export const runActionOp = defineOperation({
  id: "machines.action",
  method: "POST",
  path: "/machines/{id}/actions",
  input: ActionBody.extend(MachineIdParam.shape),
  output: ActionResponse,
  errors: [...RUNNING_ERRORS, "SCREENSHOT_FAILED", "FEATURE_NOT_AVAILABLE", ...DISPATCH_ERRORS, "INSUFFICIENT_SCOPE"],
  docs: {
    tags,
    summary: "Run one command",
    description:
      "Allowlist and scopes: click, double_click, right_click, move, type, key_press, key_combo, scroll, drag, wait, screenshot, browser_navigate, browser_click, browser_type (actions:exec); browser_execute (browser:execute); terminal_execute (terminal:exec); file_read (files:read); file_write (files:write). Unknown command: 422. timeout_ms 1000..120000 (default 30000).",
  },
  console: "shared",
  mcp: { tool: "run_action", group: "machines" },
  handler: (ctx, input) => {
    requireScopes(ctx.caller, [actionScope(input.command)]);
    const { id, ...body } = input;
    return runAction(ctx.deps, ctx.caller, id, body);
  },
});

export const runBatchOp = defineOperation({
  id: "machines.batch",
  method: "POST",
  path: "/machines/{id}/actions/batch",
  input: BatchBodySchema.extend(MachineIdParam.shape),
  output: BatchResponse,
  errors: [...RUNNING_ERRORS, "FEATURE_NOT_AVAILABLE", ...DISPATCH_ERRORS, "INSUFFICIENT_SCOPE"],
  docs: {
    tags,
    summary: "Run a batch of commands",
    description:
      "1 to 50 steps in order; each step needs its command's scope. stop_on_error (default true) skips the rest after a failure (aborted: true). Every step is validated before any runs.",
  },
  console: "shared",
  mcp: { tool: "run_actions_batch", group: "machines" },
  handler: async (ctx, input) => {
    const { id, ...body } = input;
    requireScopes(ctx.caller, batchScopesOf(body));
    const r = await runBatchOnMachine(ctx.deps, ctx.caller, id, body);
    return { ...r, request_id: ctx.requestId };
  },
});

export const browserOpOp = defineOperation({
  id: "machines.browser",
  method: "POST",
  path: "/machines/{id}/browser/{op}",
  scope: "actions:exec",
  input: OpBody.extend({
    id: MachineIdParam.shape.id,
    op: z
      .string()
      .describe(
        "open, navigate, click, type, dom, clickables, state, info, scroll, close, screenshot, wait, list-tabs, open-tab, close-tab, switch-tab",
      ),
  }),
  output: OpResponse,
  errors: [...RUNNING_ERRORS, "UNKNOWN_BROWSER_OP", "FEATURE_NOT_AVAILABLE", ...DISPATCH_ERRORS],
  docs: {
    tags,
    summary: "Browser operation",
    description:
      "One of sixteen ops on the machine's Chromium: open, navigate, click, type, dom, clickables, state, info, scroll, close, screenshot, wait, list-tabs, open-tab, close-tab, switch-tab. Unknown op: 400 UNKNOWN_BROWSER_OP. browser_execute is not here (use actions with browser:execute).",
  },
  console: "shared",
  mcp: { tool: "browser_op", group: "machines" },
  handler: (ctx, input) => {
    const { id, op, ...body } = input;
    return runBrowserOp(ctx.deps, ctx.caller, id, op, body);
  },
});

export const terminalOp = defineOperation({
  id: "machines.terminal",
  method: "POST",
  path: "/machines/{id}/terminal",
  scope: "terminal:exec",
  input: TerminalBody.extend(MachineIdParam.shape),
  output: TerminalResponse,
  errors: [...RUNNING_ERRORS, ...DISPATCH_ERRORS],
  docs: {
    tags,
    summary: "Run a terminal command",
    description:
      "bash on Linux; session_id keeps a persistent shell (cwd, environment); cwd relative to home; timeout_ms 1000..120000; result.output holds at most 5000 characters.",
  },
  console: "shared",
  mcp: { tool: "terminal_exec", group: "machines" },
  handler: (ctx, input) => {
    const { id, ...body } = input;
    return runTerminal(ctx.deps, ctx.caller, id, body);
  },
});

export const fileOpOp = defineOperation({
  id: "machines.files",
  method: "POST",
  path: "/machines/{id}/files/{op}",
  input: OpBody.extend({
    id: MachineIdParam.shape.id,
    op: z
      .string()
      .describe(
        "read, exists, list, list-directory, download, list-downloads (files:read); write, edit, append, delete, delete-directory (files:write)",
      ),
  }),
  output: OpResponse,
  errors: [...RUNNING_ERRORS, "UNKNOWN_FILE_OP", "INSUFFICIENT_SCOPE", ...DISPATCH_ERRORS],
  docs: {
    tags,
    summary: "File operation",
    description:
      "Confined to the machine's home directory. files:read: read, exists, list, list-directory, download, list-downloads; files:write: write, edit, append, delete, delete-directory. Unknown op: 400 UNKNOWN_FILE_OP.",
  },
  console: "shared",
  mcp: { tool: "file_op", group: "machines" },
  handler: (ctx, input) => {
    const { id, op, ...body } = input;
    requireScopes(ctx.caller, [fileScope(op)]);
    return runFileOpOnMachine(ctx.deps, ctx.caller, id, op, body);
  },
});
