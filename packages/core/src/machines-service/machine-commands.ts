// Actions, batches, browser ops, terminal and file ops on a machine (SPEC.md "Machines"). Scopes are
// checked by the caller per command (see requiredScopes*); this file validates (422 / 400 UNKNOWN_*),
// resolves the machine (404), checks its state (409) and dispatches to the provider (managed, mock) or
// to the external machine's driver. Operation failures come back as success: false, never as errors.
import type { Machine } from "@cua/db/generated";
import { CoreError } from "../errors.ts";
import type { MachineScope } from "../machines/commands.ts";
import {
  BROWSER_OP_SCOPE,
  batchScopes,
  checkOnScreen,
  commandScope,
  fileOpScope,
  isBrowserOp,
  isFileOp,
  parseBatch,
  parseBrowserOp,
  parseCommand,
  parseFileOp,
  parseTerminal,
  parseTimeout,
  runBatch,
  TERMINAL_SCOPE,
} from "../machines/commands.ts";
import type { BatchResult, CommandResult, OpResult } from "../machines/provider.ts";
import { dispatchExternal, outcomeToCommand, outcomeToOp } from "./external-dispatch.ts";
import { parseMachineId } from "./ids.ts";
import { externalRunnable, managedRunnable, syncHandle } from "./machine-access.ts";
import { withManagedReconcile } from "./reconcile-machine.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

/** Scope of a single action; undefined for a command outside the allowlist (then 422 follows). */
export const actionScope = (command: unknown): MachineScope | undefined =>
  typeof command === "string" ? commandScope(command) : undefined;
export const batchScopesOf = (body: unknown): MachineScope[] => batchScopes(body);
export const browserScope = (): MachineScope => BROWSER_OP_SCOPE;
export const terminalScope = (): MachineScope => TERMINAL_SCOPE;
export const fileScope = (op: string): MachineScope | undefined => fileOpScope(op);

async function runningMachine(deps: MachinesDeps, principal: MachinePrincipal, id: string): Promise<Machine> {
  const m = await loadMachine(deps, principal, id);
  assertMachineStatus(m, ["running"], "this operation");
  return m;
}

export async function runAction(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  body: {
    command: string;
    parameters: Record<string, unknown>;
    timeout_ms?: number | undefined;
    precondition_frame_id?: string | null | undefined;
  },
): Promise<CommandResult & { machine_id: string }> {
  parseMachineId(id);
  const parsed = parseCommand(body.command, body.parameters);
  const timeoutMs = parseTimeout(body.timeout_ms);
  const m = await runningMachine(deps, principal, id);
  checkOnScreen(parsed, { width: m.screenWidth, height: m.screenHeight });
  if (m.kind === "external") {
    if (parsed.command === "screenshot" || parsed.command === "wait") {
      // no driver command carries the precondition here: it is checked against the newest frame now
      if (body.precondition_frame_id != null && m.lastFrameId !== body.precondition_frame_id)
        throw new CoreError("FRAME_PRECONDITION_FAILED", "precondition_frame_id is not the machine's newest frame.");
      return {
        machine_id: m.id,
        ...(await externalRunnable(deps, m).execute(parsed.command, parsed.params, { timeoutMs })),
      };
    }
    const o = await dispatchExternal(deps, m, parsed.command, parsed.params as Record<string, unknown>, {
      timeoutMs,
      preconditionFrameId: body.precondition_frame_id ?? null,
    });
    return { machine_id: m.id, ...outcomeToCommand(parsed.command, o) };
  }
  return {
    machine_id: m.id,
    ...(await withManagedReconcile(deps, m, ({ provider, handle }) =>
      provider.execute(handle, parsed.command, parsed.params, { timeoutMs }),
    )),
  };
}

export async function runBatchOnMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  body: unknown,
): Promise<BatchResult & { machine_id: string }> {
  parseMachineId(id);
  const batch = parseBatch(body);
  const m = await runningMachine(deps, principal, id);
  batch.steps.forEach((s, i) => {
    checkOnScreen(s.parsed, { width: m.screenWidth, height: m.screenHeight }, `body.steps.${i}.parameters`);
  });
  const runnable = m.kind === "external" ? externalRunnable(deps, m) : managedRunnable(deps, m);
  const r = await runBatch(batch, (parsed, timeoutMs) =>
    runnable.execute(parsed.command, parsed.params as object, { timeoutMs }),
  );
  return { machine_id: m.id, ...r };
}

type Timed = OpResult & { duration_ms: number };

async function timed(fn: () => Promise<OpResult>): Promise<Timed> {
  const started = performance.now();
  const r = await fn();
  return { ...r, duration_ms: Math.round(performance.now() - started) };
}

export async function runBrowserOp(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  op: string,
  body: { parameters: Record<string, unknown>; timeout_ms?: number | undefined },
): Promise<Timed & { machine_id: string; op: string }> {
  parseMachineId(id);
  if (!isBrowserOp(op)) parseBrowserOp(op, {}); // 400 UNKNOWN_BROWSER_OP
  const parsed = parseBrowserOp(op, body.parameters);
  const timeoutMs = parseTimeout(body.timeout_ms);
  const m = await runningMachine(deps, principal, id);
  const r = await timed(async () => {
    if (m.kind === "external") {
      const o = await dispatchExternal(
        deps,
        m,
        "browser_op",
        { op, parameters: parsed.params, timeout_ms: timeoutMs },
        { timeoutMs },
      );
      return outcomeToOp(o);
    }
    return withManagedReconcile(deps, m, async ({ provider, handle }) => {
      try {
        return await provider.browser(handle, op, body.parameters, { timeoutMs });
      } finally {
        await syncHandle(deps, m, provider);
      }
    });
  });
  return { machine_id: m.id, op, ...r };
}

export async function runTerminal(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  body: unknown,
): Promise<Timed & { machine_id: string }> {
  parseMachineId(id);
  const input = parseTerminal(body);
  const m = await runningMachine(deps, principal, id);
  const r = await timed(async () => {
    if (m.kind === "external") {
      const o = await dispatchExternal(deps, m, "terminal_execute", input as Record<string, unknown>, {
        timeoutMs: input.timeout_ms ?? parseTimeout(undefined),
      });
      return outcomeToOp(o);
    }
    return withManagedReconcile(deps, m, ({ provider, handle }) => provider.terminal(handle, body));
  });
  return { machine_id: m.id, ...r };
}

export async function runFileOpOnMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  op: string,
  body: { parameters: Record<string, unknown> },
): Promise<Timed & { machine_id: string; op: string }> {
  parseMachineId(id);
  if (!isFileOp(op)) parseFileOp(op, {}); // 400 UNKNOWN_FILE_OP
  const parsed = parseFileOp(op, body.parameters);
  const m = await runningMachine(deps, principal, id);
  const r = await timed(async () => {
    if (m.kind === "external") {
      const o = await dispatchExternal(deps, m, "file_op", { op, parameters: parsed.params });
      return outcomeToOp(o);
    }
    return withManagedReconcile(deps, m, ({ provider, handle }) => provider.files(handle, op, body.parameters));
  });
  return { machine_id: m.id, op, ...r };
}
