// The machine service's background work in each API process:
//   meter tick    every MACHINE_METER_INTERVAL_MS: settle each metered machine's whole minutes;
//                 a wallet that cannot pay stops the machine (suspended / suspended_for_billing)
//   TTL sweep     same tick: machines past expires_at are terminated (status_reason ttl_expired)
//   frame purge   same tick: external frames older than 900 s are deleted
//   reconcile     once at start: the database is the truth; what the provider runs is brought in line
// Several API processes may tick at once: every step is a conditional update or runs under the
// machine's row lock / op lease, so nothing is charged or terminated twice.
import type { Machine } from "@cua/db/generated";
import type { MachineHandle } from "../machines/provider.ts";
import { purgeExpiredFrames } from "./frame-store.ts";
import { asJson, withMachineOp } from "./machine-ops.ts";
import { lockMachineRow, settleMeterTx } from "./meter-machines.ts";
import { finishProvisioning } from "./provision-machine.ts";
import type { MachinesDeps } from "./runtime.ts";
import { terminateRow } from "./terminate-machine.ts";

/** One metering pass; returns the machines suspended for billing. */
export async function meterTick(deps: MachinesDeps): Promise<string[]> {
  const now = deps.clock.now();
  const due = new Date(now.getTime() - deps.machines.minuteMs);
  const rows = await deps.db.machine.findMany({
    where: {
      kind: "managed",
      isTest: false,
      mode: "live",
      status: { in: ["running", "stopped", "suspended"] },
      billedThrough: { lte: due },
    },
    select: { id: true },
    take: 1000,
  });
  const suspended: string[] = [];
  for (const { id } of rows) {
    try {
      const out = await deps.db.$transaction(async (tx) => {
        const m = await lockMachineRow(tx, id);
        if (!m) return null;
        const r = await settleMeterTx(tx, m, now, deps.machines.minuteMs);
        if (r.unpaid && (m.status === "running" || m.status === "stopped")) {
          await tx.machine.update({
            where: { id },
            data: { status: "suspended", statusReason: "suspended_for_billing" },
          });
          return m;
        }
        return null;
      });
      if (out) {
        suspended.push(id);
        if (out.status === "running") deps.machines.track(stopForBilling(deps, out));
      }
    } catch (e) {
      deps.logger.warn("machine metering failed", { machine_id: id, err: e instanceof Error ? e.message : String(e) });
    }
  }
  return suspended;
}

async function stopForBilling(deps: MachinesDeps, m: Machine): Promise<void> {
  await withMachineOp(deps, m.id, async (cur) => {
    if (cur.status !== "suspended" || !cur.handle) return;
    const provider = cur.isTest ? deps.machines.mock : deps.machines.managed;
    if (!provider || provider.name !== cur.provider) return;
    const h = cur.handle as unknown as MachineHandle;
    if (h.status !== "running") return;
    const stopped = await provider.stop(h);
    await deps.db.machine.update({ where: { id: cur.id }, data: { handle: asJson(stopped) } });
    deps.logger.info("machine suspended for billing", { machine_id: cur.id });
  });
}

/** Terminates machines whose TTL elapsed; returns their ids. */
export async function ttlSweep(deps: MachinesDeps): Promise<string[]> {
  const now = deps.clock.now();
  const rows = await deps.db.machine.findMany({
    where: { expiresAt: { lte: now }, status: { notIn: ["terminated"] }, kind: "managed" },
    select: { id: true },
    take: 100,
  });
  const done: string[] = [];
  for (const { id } of rows) {
    try {
      await withMachineOp(deps, id, async (m) => {
        if (m.status === "terminated" || !m.expiresAt || m.expiresAt > deps.clock.now()) return;
        if (m.status === "provisioning") return; // next tick, once it has a handle
        await terminateRow(deps, m, "ttl_expired");
        done.push(id);
        deps.logger.info("machine TTL expired", { machine_id: id });
      });
    } catch (e) {
      deps.logger.warn("machine TTL termination failed", {
        machine_id: id,
        err: e instanceof Error ? e.message : String(e),
      });
    }
  }
  return done;
}

export interface ReconcileReport {
  checked: number;
  restarted: string[];
  stopped: string[];
  lost: string[];
  reprovisioned: string[];
}

/**
 * After a restart: provisioning rows without a handle are provisioned again (the provider's provision
 * is idempotent per machine id); every managed machine's handle goes to provider.reconcile and what
 * runs is brought in line with the stored status (running -> started again if its processes died;
 * stopped/suspended -> processes reaped); a machine whose user or home vanished becomes error/lost.
 */
export async function reconcileMachines(deps: MachinesDeps): Promise<ReconcileReport> {
  const report: ReconcileReport = { checked: 0, restarted: [], stopped: [], lost: [], reprovisioned: [] };
  const provider = deps.machines.managed;
  if (!provider) return report;
  const rows = await deps.db.machine.findMany({
    where: {
      kind: "managed",
      isTest: false,
      provider: provider.name,
      status: { in: ["provisioning", "running", "stopped", "suspended"] },
    },
  });
  for (const row of rows.filter((r) => r.status === "provisioning" && !r.handle)) {
    report.reprovisioned.push(row.id);
    deps.machines.track(finishProvisioning(deps, row, null));
  }
  const withHandles = rows.filter((r) => r.handle);
  report.checked = withHandles.length;
  if (withHandles.length === 0) return report;
  const results = await provider.reconcile(withHandles.map((r) => r.handle as unknown as MachineHandle));
  for (const r of results) {
    const row = withHandles.find((x) => x.id === r.machine_id);
    if (!row) continue;
    try {
      await withMachineOp(deps, row.id, async (m) => {
        if (r.status === "lost") {
          await deps.db.machine.update({ where: { id: m.id }, data: { status: "error", statusReason: "lost" } });
          report.lost.push(m.id);
          return;
        }
        let handle = r.handle;
        const want = m.status === "running" || m.status === "provisioning" ? "running" : "stopped";
        if (want === "running" && r.status !== "running") {
          handle = await provider.start(handle);
          report.restarted.push(m.id);
        } else if (want === "stopped" && r.status === "running") {
          handle = await provider.stop(handle);
          report.stopped.push(m.id);
        }
        await deps.db.machine.update({
          where: { id: m.id },
          data: { handle: asJson(handle), ...(m.status === "provisioning" ? { status: "running" } : {}) },
        });
      });
    } catch (e) {
      deps.logger.warn("machine reconcile failed", {
        machine_id: row.id,
        err: e instanceof Error ? e.message : String(e),
      });
    }
  }
  return report;
}

export interface MachineBackground {
  stop(): Promise<void>;
  /** one pass now (tests and the bench call it) */
  tick(): Promise<void>;
}

export function startMachineBackground(
  deps: MachinesDeps,
  opts: { intervalMs: number; reconcileAtStart?: boolean },
): MachineBackground {
  let running: Promise<void> | null = null;
  let stopped = false;
  const tick = async () => {
    if (running) return running;
    running = (async () => {
      try {
        await meterTick(deps);
        await ttlSweep(deps);
        await purgeExpiredFrames(deps);
      } catch (e) {
        deps.logger.warn("machine background tick failed", { err: e instanceof Error ? e.message : String(e) });
      }
    })().finally(() => {
      running = null;
    });
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void tick();
  }, opts.intervalMs);
  timer.unref();
  if (opts.reconcileAtStart !== false) {
    deps.machines.track(
      reconcileMachines(deps)
        .then((r) => {
          if (r.checked + r.reprovisioned.length > 0) deps.logger.info("machines reconciled", { ...r });
        })
        .catch((e) =>
          deps.logger.warn("machine reconcile failed", { err: e instanceof Error ? e.message : String(e) }),
        ),
    );
  }
  return {
    tick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
