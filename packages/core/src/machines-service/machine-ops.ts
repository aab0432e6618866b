// Serialises lifecycle operations on one machine across API processes: an operation takes a lease on
// the row (op_locked_until, holder in op_locked_by) with a conditional UPDATE, re-reads the row under it,
// and releases it when done. A lease left by a crashed process expires on its own after LEASE_MS; when
// the holder was a process of this host that is gone (same boot, its pid dead or reused), the lease is
// taken over at once (issue 10: a DELETE after a crash waited 101 s for such a lease).
import { readFileSync } from "node:fs";
import os from "node:os";
import { CoreError } from "@cua/base/errors";
import type { Machine, Prisma } from "@cua/db/generated";
import { procInfo } from "@cua/machines/process-utils";
import { settleMeter } from "./meter-machines.ts";
import type { MachinesDeps } from "./runtime.ts";

const LEASE_MS = 10 * 60_000;
const WAIT_MS = 120_000;

function bootId(): string {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "unknown";
  }
}

let owner: string | null = null;
/** `<host>/<boot id>/<pid>/<start time>` of this process */
export async function leaseOwner(): Promise<string> {
  if (!owner) {
    const start = (await procInfo(process.pid))?.start_time ?? 0;
    owner = `${os.hostname()}/${bootId()}/${process.pid}/${start}`;
  }
  return owner;
}

/** The holder ran on this host since its last boot and that process no longer exists. */
export async function holderGone(holder: string | null): Promise<boolean> {
  if (!holder) return false;
  const [host, boot, pid, start] = holder.split("/");
  if (host !== os.hostname() || boot !== bootId() || !pid || !start) return false;
  const p = await procInfo(Number(pid));
  return !p || p.state === "Z" || String(p.start_time) !== start;
}

export async function withMachineOp<T>(
  deps: MachinesDeps,
  machineId: string,
  fn: (m: Machine) => Promise<T>,
): Promise<T> {
  const started = Date.now();
  const me = await leaseOwner();
  for (;;) {
    const now = new Date();
    const got = await deps.db.machine.updateMany({
      where: { id: machineId, OR: [{ opLockedUntil: null }, { opLockedUntil: { lt: now } }] },
      data: { opLockedUntil: new Date(now.getTime() + LEASE_MS), opLockedBy: me },
    });
    if (got.count === 1) break;
    const cur = await deps.db.machine.findUnique({
      where: { id: machineId },
      select: { id: true, opLockedBy: true, opLockedUntil: true },
    });
    if (!cur) throw new CoreError("MACHINE_NOT_FOUND", "The machine does not exist.");
    if (cur.opLockedUntil && (await holderGone(cur.opLockedBy))) {
      const stolen = await deps.db.machine.updateMany({
        where: { id: machineId, opLockedBy: cur.opLockedBy, opLockedUntil: cur.opLockedUntil },
        data: { opLockedUntil: new Date(Date.now() + LEASE_MS), opLockedBy: me },
      });
      if (stolen.count === 1) {
        deps.logger.info("machine op lease of a dead process taken over", {
          machine_id: machineId,
          holder: cur.opLockedBy,
        });
        break;
      }
    }
    if (Date.now() - started > WAIT_MS) {
      throw new CoreError("INVALID_STATE", "Another operation on this machine is still running.");
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  try {
    const m = await deps.db.machine.findUniqueOrThrow({ where: { id: machineId } });
    return await fn(m);
  } finally {
    await deps.db.machine
      .update({ where: { id: machineId }, data: { opLockedUntil: null, opLockedBy: null } })
      .catch(() => {});
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
