// Owner-side dispatch to an external machine (DECISIONS.md "External machines"): the owner's action is
// queued as one command for the driver, and the caller waits for its result up to the command's
// deadline (504 UPSTREAM_TIMEOUT after it). At most one queued or delivered command per machine: a
// second concurrent dispatch is 409 MACHINE_BUSY. The machine row is locked (SELECT ... FOR UPDATE, inside
// the database function enqueue_machine_command) while the outstanding check and the insert run, so two API
// processes cannot both win.

import { CoreError, validationError } from "@cua/base/errors";
import type { Machine, MachineCommand } from "@cua/db/generated";
import { DEFAULT_TIMEOUT_MS } from "@cua/machines/commands";
import { type DriverCommand, PROTOCOL_VERSION } from "@cua/machines/driver-wire";
import type { CommandResult, OpResult } from "@cua/machines/provider";
import { newCommandId } from "./ids.ts";
import type { Capability } from "./record.ts";
import { assertMachineStatus } from "./record.ts";
import type { ArmedWake, MachinesDeps } from "./runtime.ts";

/** Protocol-level command names: the action allowlist plus browser_op, file_op and terminal. */
export const COMMAND_CAPABILITY: Record<string, Capability> = {
  click: "mouse",
  double_click: "mouse",
  right_click: "mouse",
  move: "mouse",
  drag: "mouse",
  type: "keyboard",
  key_press: "keyboard",
  key_combo: "keyboard",
  scroll: "scroll",
  wait: "screenshot",
  screenshot: "screenshot",
  browser_navigate: "browser",
  browser_click: "browser",
  browser_type: "browser",
  browser_execute: "browser",
  browser_op: "browser",
  terminal_execute: "terminal",
  file_read: "files",
  file_write: "files",
  file_op: "files",
};

export const OUTSTANDING = ["queued", "delivered"] as const;
export const TERMINAL_COMMAND_STATUSES = ["succeeded", "failed", "rejected", "cancelled", "expired"] as const;

/** Extra time the driver gets beyond the command's own timeout (transport, long-poll latency): as much again, at most 5 s. */
export const deliverySlackMs = (timeoutMs: number): number => Math.min(timeoutMs, 5000);

export interface DispatchOptions {
  timeoutMs?: number;
  preconditionFrameId?: string | null;
}

export interface DriverOutcome {
  status: "succeeded" | "failed" | "rejected";
  result: Record<string, unknown>;
  error: { code: string; message: string } | null;
  duration_ms: number;
  /** the machine's newest frame when the result was recorded; undefined when not known without a read */
  lastFrameId?: string | null | undefined;
}

/** A command as the poll answers it (protocol version 1). */
export type WireCommand = DriverCommand;

/** Payload of a "commands" notification: the command just queued (a long poll in this process hands it out). */
export interface QueuedSignal {
  command: WireCommand;
}

/** Payload of a "results" notification: the result just recorded (the waiting dispatcher answers from it). */
export interface ResultSignal {
  commandId: string;
  status: string;
  result: unknown;
  lastFrameId: string | null;
}

/** Enqueue and wait. Returns the driver's outcome; throws 409/504 CoreErrors. */
export async function dispatchExternal(
  deps: MachinesDeps,
  machine: Pick<Machine, "id" | "capabilities">,
  command: string,
  parameters: Record<string, unknown>,
  opts: DispatchOptions = {},
): Promise<DriverOutcome> {
  let capability = COMMAND_CAPABILITY[command];
  if (!capability) throw validationError("body.command", `unknown command ${JSON.stringify(command)}`);
  // wait needs nothing of the host: any enrolled capability carries it
  if (command === "wait" && !machine.capabilities.includes(capability))
    capability = machine.capabilities[0] as Capability;
  if (!machine.capabilities.includes(capability)) {
    throw validationError("body.command", `the machine did not enroll the "${capability}" capability`);
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const now = deps.clock.now();
  const deadline = new Date(now.getTime() + timeoutMs + deliverySlackMs(timeoutMs));
  const id = newCommandId();
  // armed before the command exists, so that its result cannot land unheard
  const wake = deps.machines.signals.arm(machine.id, "results");
  let queued: WireCommand;
  try {
    queued = await enqueue(deps, machine.id, id, command, parameters, capability, deadline, now, opts);
  } catch (e) {
    wake.cancel();
    throw e;
  }
  deps.machines.signals.notify(machine.id, "commands", { command: queued } satisfies QueuedSignal);
  return outcomeOf(await waitForCommand(deps, machine.id, id, deadline, wake));
}

/**
 * Queues the command in one round trip: the database function `enqueue_machine_command` (migration
 * 20261125155410) locks the machine row, checks its status and the frame precondition, expires outstanding
 * commands past their deadline, refuses when one is still outstanding, and inserts the command with the next
 * sequence number, all in one transaction that serialises concurrent dispatches of every API process.
 */
async function enqueue(
  deps: MachinesDeps,
  machineId: string,
  id: string,
  command: string,
  parameters: Record<string, unknown>,
  capability: Capability,
  deadline: Date,
  now: Date,
  opts: DispatchOptions,
): Promise<WireCommand> {
  const pre = opts.preconditionFrameId ?? null;
  const rows = await deps.db.$queryRaw<
    {
      outcome: "queued" | "not_found" | "invalid_state" | "precondition_failed" | "busy";
      machine_status: string | null;
      fencing_token: number | null;
      last_frame_id: string | null;
      seq: number | null;
    }[]
  >`SELECT * FROM enqueue_machine_command(${machineId}::text, ${id}::text, ${command}::text,
      ${JSON.stringify(parameters)}::jsonb, ${capability}::text, ${pre}::text, ${deadline}::timestamptz,
      ${now}::timestamptz)`;
  const r = rows[0];
  if (!r || r.outcome === "not_found") throw new CoreError("MACHINE_NOT_FOUND", "The machine does not exist.");
  if (r.outcome === "invalid_state")
    assertMachineStatus({ status: String(r.machine_status) }, ["running"], "an action");
  if (r.outcome === "precondition_failed") {
    throw new CoreError("FRAME_PRECONDITION_FAILED", "precondition_frame_id is not the machine's newest frame.", {
      last_frame_id: r.last_frame_id,
    });
  }
  if (r.outcome === "busy") {
    throw new CoreError("MACHINE_BUSY", "The machine already has a command outstanding; retry when it finishes.", {
      retry_after: 1,
    });
  }
  return {
    id,
    seq: Number(r.seq),
    command,
    parameters,
    capability,
    fencing_token: Number(r.fencing_token),
    precondition_frame_id: pre,
    deadline: deadline.toISOString(),
    protocol_version: PROTOCOL_VERSION,
  };
}

type Settled = Pick<MachineCommand, "status" | "result"> & { lastFrameId?: string | null };

/**
 * Waits for the command's terminal state: from the result notification of this process when the driver
 * posted here (no read), else from the row (re-read every pollIntervalMs for results recorded by another API
 * process, and after any notification that does not name this command).
 */
async function waitForCommand(
  deps: MachinesDeps,
  machineId: string,
  id: string,
  deadline: Date,
  armed: ArmedWake,
): Promise<Settled> {
  let wake: ArmedWake | null = armed;
  for (;;) {
    if (!wake) {
      wake = deps.machines.signals.arm(machineId, "results");
      const c = await deps.db.machineCommand.findUniqueOrThrow({ where: { id } });
      if ((TERMINAL_COMMAND_STATUSES as readonly string[]).includes(c.status)) {
        wake.cancel();
        return c;
      }
    }
    const remaining = deadline.getTime() - deps.clock.now().getTime();
    if (remaining <= 0) {
      wake.cancel();
      wake = null;
      const expired = await deps.db.machineCommand.updateMany({
        where: { id, status: { in: [...OUTSTANDING] } },
        data: { status: "expired", completedAt: deps.clock.now() },
      });
      if (expired.count === 1) {
        deps.machines.signals.notify(machineId, "commands");
        throw new CoreError("UPSTREAM_TIMEOUT", "The external machine did not answer before the command's deadline.");
      }
      continue; // a result landed at the last moment
    }
    const signal = (await wake.wait(Math.min(remaining, deps.machines.pollIntervalMs))) as ResultSignal | undefined;
    wake = null;
    if (signal?.commandId === id)
      return {
        status: signal.status,
        result: signal.result as MachineCommand["result"],
        lastFrameId: signal.lastFrameId,
      };
  }
}

function outcomeOf(c: Settled): DriverOutcome {
  if (c.status === "cancelled") {
    throw new CoreError("INVALID_STATE", "The command was cancelled: the machine was stopped or restarted.", {
      current_state: "stopped",
      allowed_from: ["running"],
    });
  }
  if (c.status === "expired") {
    throw new CoreError("UPSTREAM_TIMEOUT", "The external machine did not answer before the command's deadline.");
  }
  const r = (c.result ?? {}) as Partial<DriverOutcome>;
  return {
    status: c.status as DriverOutcome["status"],
    result: (r.result ?? {}) as Record<string, unknown>,
    error: r.error ?? (c.status === "succeeded" ? null : { code: "FAILED", message: "The command failed." }),
    duration_ms: typeof r.duration_ms === "number" ? r.duration_ms : 0,
    lastFrameId: c.lastFrameId,
  };
}

export function outcomeToOp(o: DriverOutcome): OpResult {
  return { success: o.status === "succeeded", result: o.result, error: o.status === "succeeded" ? null : o.error };
}

export function outcomeToCommand(command: string, o: DriverOutcome): CommandResult {
  return { command, ...outcomeToOp(o), duration_ms: o.duration_ms };
}
