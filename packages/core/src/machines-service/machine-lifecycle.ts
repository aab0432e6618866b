// POST /v1/machines/{id}/start | stop | restart -> {machine_id, status, message}.
// Managed: the provider starts or stops the desktop (stop keeps the home directory). A machine
// suspended for billing starts again once the wallet holds credits (402 otherwise).
// External (DECISIONS.md "External machines"): logical dispatch gates. Each bumps the fencing token
// and cancels pending commands; none powers the host.

import { CoreError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import { OUTSTANDING } from "./external-dispatch.ts";
import { bindManaged } from "./machine-access.ts";
import { asJson, setMachineStatus, withMachineOp } from "./machine-ops.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

export type LifecycleOp = "start" | "stop" | "restart";

export interface LifecycleResult {
  machine_id: string;
  status: string;
  message: string;
}

const ALLOWED: Record<LifecycleOp, ("running" | "stopped" | "suspended" | "error")[]> = {
  start: ["stopped", "suspended"],
  stop: ["running"],
  restart: ["running"],
};

/**
 * A managed machine whose desktop died and could not be started again (error / start_failed) keeps its
 * user and files: start may try again (once the host is repaired). Other error reasons are final.
 */
function allowedFor(m: Pick<Machine, "status" | "statusReason" | "kind">, op: LifecycleOp) {
  return op === "start" && m.kind === "managed" && m.status === "error" && m.statusReason === "start_failed"
    ? [...ALLOWED.start, "error" as const]
    : ALLOWED[op];
}

export async function machineLifecycle(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  op: LifecycleOp,
): Promise<LifecycleResult> {
  const first = await loadMachine(deps, principal, id);
  if (op === "start" && first.status === "suspended") await assertCanResume(deps, first);
  assertMachineStatus(first, allowedFor(first, op), op);
  return withMachineOp(deps, first.id, async (m) => {
    assertMachineStatus(m, allowedFor(m, op), op);
    if (m.kind === "external") return externalGate(deps, m, op);
    const { provider, handle } = bindManaged(deps, m);
    if (op === "start") {
      let h = handle;
      if (!(m.status === "suspended" && handle.status === "running")) {
        try {
          h = await provider.start(handle);
        } catch (e) {
          if (m.status === "error") {
            const detail = `The machine's desktop could not be started again: ${e instanceof Error ? e.message : String(e)}`;
            await deps.db.machine.update({ where: { id: m.id }, data: { statusMessage: detail.slice(0, 2000) } });
          }
          throw e;
        }
      }
      await setMachineStatus(deps, m.id, {
        status: "running",
        statusReason: null,
        statusMessage: null,
        handle: asJson(h),
      });
      return { machine_id: m.id, status: "running", message: "The machine is running." };
    }
    if (op === "stop") {
      const h = await provider.stop(handle);
      await setMachineStatus(deps, m.id, {
        status: "stopped",
        statusReason: null,
        statusMessage: null,
        handle: asJson(h),
      });
      return { machine_id: m.id, status: "stopped", message: "The machine is stopped; its files are kept." };
    }
    const h = await provider.restart(handle);
    await deps.db.machine.update({
      where: { id: m.id },
      data: { handle: asJson(h), statusReason: null, statusMessage: null },
    });
    return { machine_id: m.id, status: "running", message: "The machine restarted." };
  });
}

async function assertCanResume(deps: MachinesDeps, m: Machine): Promise<void> {
  if (m.kind !== "managed" || m.isTest) return;
  const a = await deps.db.account.findUnique({ where: { id: m.accountId }, select: { balanceCredits: true } });
  const balance = a?.balanceCredits ?? 0;
  if (balance < 1) {
    throw new CoreError(
      "INSUFFICIENT_CREDITS",
      "The machine was suspended for billing; top up the wallet to start it.",
      {
        required: 1,
        balance,
      },
    );
  }
}

/** Bumps the fence and cancels queued/delivered commands (their waiting callers get 409). */
export async function bumpFence(deps: MachinesDeps, machineId: string, status: string): Promise<number> {
  const now = deps.clock.now();
  const fence = await deps.db.$transaction(async (tx) => {
    const m = await tx.machine.update({
      where: { id: machineId },
      data: { fencingToken: { increment: 1 }, status, statusReason: null },
    });
    await tx.machineCommand.updateMany({
      where: { machineId, status: { in: [...OUTSTANDING] } },
      data: { status: "cancelled", completedAt: now },
    });
    return m.fencingToken;
  });
  deps.machines.signals.notify(machineId, "results");
  deps.machines.signals.notify(machineId, "commands");
  return fence;
}

async function externalGate(deps: MachinesDeps, m: Machine, op: LifecycleOp): Promise<LifecycleResult> {
  const status = op === "stop" ? "stopped" : "running";
  const fence = await bumpFence(deps, m.id, status);
  const verb = op === "stop" ? "stopped (no commands are dispatched)" : op === "start" ? "started" : "restarted";
  return {
    machine_id: m.id,
    status,
    message: `The external machine's dispatch gate ${verb}; fencing token is now ${fence} and pending commands were cancelled.`,
  };
}
