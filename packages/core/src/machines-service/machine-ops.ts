// Serialises lifecycle operations on one machine across API processes: an operation takes a lease on
// the row (op_locked_until) with a conditional UPDATE, re-reads the row under it, and releases it when
// done. A lease left by a crashed process expires on its own.
import type { Machine, Prisma } from "@cua/db/generated";
import { CoreError } from "../errors.ts";
import { settleMeter } from "./meter-machines.ts";
import type { MachinesDeps } from "./runtime.ts";

const LEASE_MS = 10 * 60_000;
const WAIT_MS = 120_000;

export async function withMachineOp<T>(
  deps: MachinesDeps,
  machineId: string,
  fn: (m: Machine) => Promise<T>,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const now = new Date();
    const got = await deps.db.machine.updateMany({
      where: { id: machineId, OR: [{ opLockedUntil: null }, { opLockedUntil: { lt: now } }] },
      data: { opLockedUntil: new Date(now.getTime() + LEASE_MS) },
    });
    if (got.count === 1) break;
    const exists = await deps.db.machine.findUnique({ where: { id: machineId }, select: { id: true } });
    if (!exists) throw new CoreError("NOT_FOUND", "The machine does not exist.");
    if (Date.now() - started > WAIT_MS) {
      throw new CoreError("INVALID_STATE", "Another operation on this machine is still running.");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    const m = await deps.db.machine.findUniqueOrThrow({ where: { id: machineId } });
    return await fn(m);
  } finally {
    await deps.db.machine.update({ where: { id: machineId }, data: { opLockedUntil: null } }).catch(() => {});
  }
}

/** Status change: settles the meter at the old status first, then writes the new one. */
export async function setMachineStatus(
  deps: MachinesDeps,
  machineId: string,
  data: Prisma.MachineUpdateInput & { status: string },
): Promise<Machine> {
  await settleMeter(deps, machineId);
  return deps.db.machine.update({ where: { id: machineId }, data });
}

export function asJson(v: unknown): Prisma.InputJsonValue {
  return v as Prisma.InputJsonValue;
}
