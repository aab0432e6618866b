// DELETE /v1/machines/{id}: any status -> terminated. Managed: the provider removes processes, user and
// home (snapshots stay). External: the device token is revoked, outstanding commands are cancelled and
// stored frames are deleted. Also used by the TTL sweep (status_reason ttl_expired).
import type { Machine } from "@cua/db/generated";
import type { MachineHandle, TerminateResult } from "@cua/machines/provider";
import { OUTSTANDING } from "./external-dispatch.ts";
import { providerFor } from "./machine-access.ts";
import { setMachineStatus, withMachineOp } from "./machine-ops.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

const LIVE_STATUSES = ["provisioning", "running", "stopped", "suspended", "error"] as const;

export async function terminateMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
): Promise<{ machine_id: string; status: "terminated"; terminated: true; message: string }> {
  const first = await loadMachine(deps, principal, id);
  assertMachineStatus(first, [...LIVE_STATUSES], "terminate");
  await withMachineOp(deps, first.id, async (m) => {
    assertMachineStatus(m, [...LIVE_STATUSES], "terminate");
    await terminateRow(deps, m, null);
  });
  return {
    machine_id: first.id,
    status: "terminated",
    terminated: true,
    message:
      first.kind === "external"
        ? "The external machine is terminated; its device token and outstanding commands are revoked."
        : "The machine is terminated; its processes and files are gone (snapshots are kept).",
  };
}

/** Tears a machine down and marks it terminated (caller holds the op lease). */
export async function terminateRow(deps: MachinesDeps, m: Machine, reason: string | null): Promise<void> {
  const now = deps.clock.now();
  if (m.kind === "external") {
    await deps.db.$transaction(async (tx) => {
      await tx.machine.update({
        where: { id: m.id },
        data: {
          status: "terminated",
          statusReason: reason,
          terminatedAt: now,
          deviceTokenRevokedAt: now,
          fencingToken: { increment: 1 },
        },
      });
      await tx.machineCommand.updateMany({
        where: { machineId: m.id, status: { in: [...OUTSTANDING] } },
        data: { status: "cancelled", completedAt: now },
      });
      await tx.machineFrame.deleteMany({ where: { machineId: m.id } });
    });
    deps.machines.frames.drop(m.id);
    deps.machines.signals.notify(m.id, "results");
    deps.machines.signals.notify(m.id, "commands");
    return;
  }
  let r: TerminateResult | undefined;
  if (m.handle) {
    r = await providerFor(deps, m).terminate(m.handle as unknown as MachineHandle);
  } else {
    // no handle: a provision cut short (a crash); the provider still removes what it made for this id
    const p = m.isTest ? deps.machines.mock : deps.machines.managed;
    if (p?.forget && p.name === m.provider) r = await p.forget(m.id);
  }
  if (r && r.leftover_processes > 0) {
    deps.logger.warn("machine terminated with leftover processes", { machine_id: m.id, count: r.leftover_processes });
  }
  await setMachineStatus(deps, m.id, { status: "terminated", statusReason: reason, terminatedAt: now });
}
