// Actions, batches, browser ops, terminal and file ops on a machine (SPEC.md "Machines"). Scopes are
// checked by the caller per command (see requiredScopes*); this file validates (422 / 400 UNKNOWN_*),
// resolves the machine (404), checks its state (409) and dispatches to the provider (managed, mock) or
// to the external machine's driver. Operation failures come back as success: false, never as errors.

import { CoreError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import type { MachineScope } from "@cua/machines/commands";
import {
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
} from "@cua/machines/commands";
import type { BatchResult, CommandResult, OpResult } from "@cua/machines/provider";
import { dispatchExternal, outcomeToCommand, outcomeToOp } from "./external-dispatch.ts";
import { readFrame } from "./frame-store.ts";
import { parseMachineId } from "./ids.ts";
import { bindManaged, externalRunnable, managedRunnable, syncHandle } from "./machine-access.ts";
import { withManagedReconcile } from "./reconcile-machine.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

// DECISIONS.md "Compatibility amendments (2026-11-25)": the commercial contract's command aliases
// `type_text` (= type) and `key_press {key}` (= key_press {keys: [key]}).
export const COMMAND_ALIASES: Record<string, string> = { type_text: "type" };

/** The command and parameters with the commercial aliases resolved (anything else unchanged). */
export function resolveAliases<P>(command: string, parameters: P): { command: string; parameters: P } {
  const name = COMMAND_ALIASES[command] ?? command;
  const p = parameters as Record<string, unknown> | undefined;
  if (name === "key_press" && p && typeof p === "object" && "key" in p && !("keys" in p)) {
    const { key, ...rest } = p;
    return { command: name, parameters: { ...rest, keys: [key] } as P };
  }
  return { command: name, parameters };
}

function batchWithAliases(body: unknown): unknown {
  const b = body as { steps?: unknown } | null;
  if (!b || typeof b !== "object" || !Array.isArray(b.steps)) return body;
  return {
    ...b,
    steps: b.steps.map((s) => {
      if (!s || typeof s !== "object" || typeof (s as { command?: unknown }).command !== "string") return s;
      const st = s as { command: string; parameters?: unknown };
      return { ...st, ...resolveAliases(st.command, st.parameters) };
    }),
  };
}

/** Scope of a single action; undefined for a command outside the allowlist (then 422 follows). */
export const actionScope = (command: unknown): MachineScope | undefined =>
  typeof command === "string" ? commandScope(resolveAliases(command, {}).command) : undefined;
export const batchScopesOf = (body: unknown): MachineScope[] => batchScopes(batchWithAliases(body));

/**
 * The screen after a command, base64 (DECISIONS.md "Compatibility amendments": action, browser, terminal and
 * file answers carry `screenshot` unless include_screenshot is false). Null when there is nothing to capture
 * (no desktop) or the capture failed: the command's own outcome is what the answer reports.
 */
async function screenAfter(
  deps: MachinesDeps,
  m: Machine,
  include: boolean | undefined,
  /** external: the newest frame id when the result was recorded (undefined: read it) */
  lastFrameId?: string | null,
) {
  if (include === false) return {};
  try {
    if (m.kind === "external") {
      // no second command is dispatched (the driver runs one at a time): the newest frame it observed
      const frameId =
        lastFrameId !== undefined
          ? lastFrameId
          : (await deps.db.machine.findUnique({ where: { id: m.id }, select: { lastFrameId: true } }))?.lastFrameId;
      if (!frameId) return { screenshot: null };
      return { screenshot: (await readFrame(deps, m.id, frameId)).png.toString("base64") };
    }
    if (!m.desktopEnabled) return { screenshot: null };
    const { provider, handle } = bindManaged(deps, m);
    return { screenshot: (await provider.screenshot(handle)).png.toString("base64") };
  } catch (e) {
    deps.logger.warn("screenshot after a command failed", { machine_id: m.id, err: String(e) });
    return { screenshot: null };
  }
}
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
    include_screenshot?: boolean | undefined;
  },
): Promise<CommandResult & { machine_id: string; screenshot?: string | null }> {
  parseMachineId(id);
  const aliased = resolveAliases(body.command, body.parameters);
  const parsed = parseCommand(aliased.command, aliased.parameters);
  const r = await runParsedAction(deps, principal, id, parsed, body);
  // a screenshot command answers its own image; other commands the screen after them
  const shot =
    parsed.command === "screenshot" ? {} : await screenAfter(deps, r.m, body.include_screenshot, r.lastFrameId);
  return { ...r.out, ...shot };
}

async function runParsedAction(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  parsed: ReturnType<typeof parseCommand>,
  body: { timeout_ms?: number | undefined; precondition_frame_id?: string | null | undefined },
): Promise<{ m: Machine; out: CommandResult & { machine_id: string }; lastFrameId?: string | null | undefined }> {
  const timeoutMs = parseTimeout(body.timeout_ms);
  const m = await runningMachine(deps, principal, id);
  checkOnScreen(parsed, { width: m.screenWidth, height: m.screenHeight });
  if (m.kind === "external") {
    if (parsed.command === "screenshot" || parsed.command === "wait") {
      // no driver command carries the precondition here: it is checked against the newest frame now
      if (body.precondition_frame_id != null && m.lastFrameId !== body.precondition_frame_id)
        throw new CoreError("FRAME_PRECONDITION_FAILED", "precondition_frame_id is not the machine's newest frame.");
      return {
        m,
        out: {
          machine_id: m.id,
          ...(await externalRunnable(deps, m).execute(parsed.command, parsed.params, { timeoutMs })),
        },
      };
    }
    const o = await dispatchExternal(deps, m, parsed.command, parsed.params as Record<string, unknown>, {
      timeoutMs,
      preconditionFrameId: body.precondition_frame_id ?? null,
    });
    return { m, out: { machine_id: m.id, ...outcomeToCommand(parsed.command, o) }, lastFrameId: o.lastFrameId };
  }
  return {
    m,
    out: {
      machine_id: m.id,
      ...(await withManagedReconcile(deps, m, ({ provider, handle }) =>
        provider.execute(handle, parsed.command, parsed.params, { timeoutMs }),
      )),
    },
  };
}

export async function runBatchOnMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  body: unknown,
): Promise<BatchResult & { machine_id: string }> {
  parseMachineId(id);
  const batch = parseBatch(batchWithAliases(body));
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
  body: {
    parameters: Record<string, unknown>;
    timeout_ms?: number | undefined;
    include_screenshot?: boolean | undefined;
  },
): Promise<Timed & { machine_id: string; op: string; command: string; screenshot?: string | null }> {
  parseMachineId(id);
  if (!isBrowserOp(op)) parseBrowserOp(op, {}); // 400 UNKNOWN_BROWSER_OP
  const parsed = parseBrowserOp(op, body.parameters);
  const timeoutMs = parseTimeout(body.timeout_ms);
  const m = await runningMachine(deps, principal, id);
  let lastFrameId: string | null | undefined;
  const r = await timed(async () => {
    if (m.kind === "external") {
      const o = await dispatchExternal(
        deps,
        m,
        "browser_op",
        { op, parameters: parsed.params, timeout_ms: timeoutMs },
        { timeoutMs },
      );
      lastFrameId = o.lastFrameId;
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
  const shot = op === "screenshot" ? {} : await screenAfter(deps, m, body.include_screenshot, lastFrameId);
  return { machine_id: m.id, op, command: `browser_${op}`, ...r, ...shot };
}

export async function runTerminal(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  rawBody: unknown,
): Promise<Timed & { machine_id: string; command: string; screenshot?: string | null }> {
  parseMachineId(id);
  const { include_screenshot, ...body } = (rawBody ?? {}) as { include_screenshot?: boolean };
  const input = parseTerminal(body);
  const m = await runningMachine(deps, principal, id);
  let lastFrameId: string | null | undefined;
  const r = await timed(async () => {
    if (m.kind === "external") {
      const o = await dispatchExternal(deps, m, "terminal_execute", input as Record<string, unknown>, {
        timeoutMs: input.timeout_ms ?? parseTimeout(undefined),
      });
      lastFrameId = o.lastFrameId;
      return outcomeToOp(o);
    }
    return withManagedReconcile(deps, m, ({ provider, handle }) => provider.terminal(handle, body));
  });
  return {
    machine_id: m.id,
    command: input.command,
    ...r,
    ...(await screenAfter(deps, m, include_screenshot, lastFrameId)),
  };
}

export async function runFileOpOnMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  op: string,
  body: { parameters: Record<string, unknown>; include_screenshot?: boolean | undefined },
): Promise<Timed & { machine_id: string; op: string; command: string; screenshot?: string | null }> {
  parseMachineId(id);
  if (!isFileOp(op)) parseFileOp(op, {}); // 400 UNKNOWN_FILE_OP
  const parsed = parseFileOp(op, body.parameters);
  const m = await runningMachine(deps, principal, id);
  let lastFrameId: string | null | undefined;
  const r = await timed(async () => {
    if (m.kind === "external") {
      const o = await dispatchExternal(deps, m, "file_op", { op, parameters: parsed.params });
      lastFrameId = o.lastFrameId;
      return outcomeToOp(o);
    }
    return withManagedReconcile(deps, m, ({ provider, handle }) => provider.files(handle, op, body.parameters));
  });
  return {
    machine_id: m.id,
    op,
    command: `file_${op.replace(/-/g, "_")}`,
    ...r,
    ...(await screenAfter(deps, m, body.include_screenshot, lastFrameId)),
  };
}
