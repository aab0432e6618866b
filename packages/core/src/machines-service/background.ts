// The machine service's background work in each API process:
//   meter tick    every MACHINE_METER_INTERVAL_MS: settle each metered machine's whole minutes;
//                 a wallet that cannot pay stops the machine (suspended / suspended_for_billing)
//   TTL sweep     same tick: machines past expires_at are terminated (status_reason ttl_expired)
//   frame purge   same tick: external frames older than 900 s are deleted
//   reconcile     once at start: the database is the truth; what the provider runs is brought in line
//   shutdown      stop(): with stopDesktops, running desktops are stopped (resumed by the next start)
// Several API processes may tick at once: every step is a conditional update or runs under the
// machine's row lock / op lease, so nothing is charged or terminated twice.
import type { Machine } from "@cua/db/generated";
import type { MachineHandle } from "@cua/machines/provider";
import { purgeExpiredFrames } from "./frame-store.ts";
import { asJson, setMachineStatus, withMachineOp } from "./machine-ops.ts";
import { lockMachineRow, settleMeterTx } from "./meter-machines.ts";
import { finishProvisioning } from "./provision-machine.ts";
import { reconcileRow, SERVICE_STOPPED } from "./reconcile-machine.ts";
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
  /** machines that could not be brought back (status error: start_failed, provision_interrupted, ...) */
  failed: string[];
  /** machines stopped by the service's shutdown and started again */
  resumed: string[];
  /** machine ids whose users/homes were on the host without a live row, removed */
  orphans: string[];
}

/** status_reason of a provisioning row this start provisions again; seen again at the next start: error */
export const PROVISION_RETRY = "provision_retry";

/**
 * After a restart (the database is the truth; issue 10: a start never loops on a stuck machine):
 * - provisioning rows without a handle are provisioned again ONCE (marked provision_retry first); a row
 *   still marked at the next start was cut short twice and becomes error / provision_interrupted;
 * - every other live managed machine is reconciled (reconcile-machine.ts): running ones whose desktop
 *   died are started again, machines the shutdown stopped (service_stopped) resume, stopped/suspended
 *   ones have stray processes reaped, a machine that cannot start becomes error / start_failed, one whose
 *   user or home vanished error / lost;
 * - users and homes the provider holds for machines that have no live row are removed.
 */
export async function reconcileMachines(deps: MachinesDeps): Promise<ReconcileReport> {
  const report: ReconcileReport = {
    checked: 0,
    restarted: [],
    stopped: [],
    lost: [],
    reprovisioned: [],
    failed: [],
    resumed: [],
    orphans: [],
  };
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
    if (row.statusReason === PROVISION_RETRY) {
      await provider.forget?.(row.id).catch(() => {});
      const moved = await deps.db.machine.updateMany({
        where: { id: row.id, status: "provisioning", statusReason: PROVISION_RETRY },
        data: {
          status: "error",
          statusReason: "provision_interrupted",
          statusMessage: "Provisioning was cut short by a restart of the service twice; it is not tried again.",
        },
      });
      if (moved.count === 1) report.failed.push(row.id);
      continue;
    }
    const claimed = await deps.db.machine.updateMany({
      where: { id: row.id, status: "provisioning", statusReason: row.statusReason },
      data: { statusReason: PROVISION_RETRY },
    });
    if (claimed.count === 0) continue;
    report.reprovisioned.push(row.id);
    deps.machines.track(finishProvisioning(deps, { ...row, statusReason: PROVISION_RETRY }, null));
  }
  const withHandles = rows.filter((r) => r.handle);
  report.checked = withHandles.length;
  for (const row of withHandles) {
    try {
      await withMachineOp(deps, row.id, async (m) => {
        if (!m.handle || !["provisioning", "running", "stopped", "suspended"].includes(m.status)) return;
        const resuming = m.status === "stopped" && m.statusReason === SERVICE_STOPPED;
        const out = await reconcileRow(deps, provider, m);
        if (out.outcome === "lost") report.lost.push(m.id);
        else if (out.outcome === "error") report.failed.push(m.id);
        else if (resuming) report.resumed.push(m.id);
        else if (out.outcome === "restarted") report.restarted.push(m.id);
        else if (out.outcome === "stopped") report.stopped.push(m.id);
      });
    } catch (e) {
      deps.logger.warn("machine reconcile failed", {
        machine_id: row.id,
        err: e instanceof Error ? e.message : String(e),
      });
    }
  }
  report.orphans = await removeOrphans(deps).catch((e) => {
    deps.logger.warn("machine orphan sweep failed", { err: e instanceof Error ? e.message : String(e) });
    return [];
  });
  return report;
}

/** Users/homes of this provider's root whose machine has no live row (terminated, or never recorded). */
async function removeOrphans(deps: MachinesDeps): Promise<string[]> {
  const provider = deps.machines.managed;
  if (!provider?.listMachineIds || !provider.forget) return [];
  const ids = await provider.listMachineIds();
  if (ids.length === 0) return [];
  const live = await deps.db.machine.findMany({
    where: { id: { in: ids }, status: { not: "terminated" } },
    select: { id: true },
  });
  const keep = new Set(live.map((r) => r.id));
  const removed: string[] = [];
  for (const id of ids.filter((x) => !keep.has(x))) {
    await provider.forget(id);
    removed.push(id);
  }
  return removed;
}

/**
 * The service's shutdown (issue 10): every running desktop of this provider is stopped (its files stay)
 * and marked stopped / service_stopped, metered at the stopped rate while the service is down; the
 * reconcile at the next start resumes them (SPEC "Machines": stop preserves state).
 */
export async function stopDesktopsForShutdown(deps: MachinesDeps): Promise<string[]> {
  const provider = deps.machines.managed;
  if (!provider) return [];
  const rows = await deps.db.machine.findMany({
    where: { kind: "managed", isTest: false, provider: provider.name, status: "running" },
    select: { id: true },
  });
  const stopped: string[] = [];
  for (const { id } of rows) {
    try {
      await withMachineOp(deps, id, async (m) => {
        if (m.status !== "running" || !m.handle) return;
        const h = m.handle as unknown as MachineHandle;
        const after = h.status === "running" ? await provider.stop(h) : h;
        await setMachineStatus(deps, m.id, {
          status: "stopped",
          statusReason: SERVICE_STOPPED,
          statusMessage: "Stopped by the service's shutdown; it starts again with the service.",
          handle: asJson(after),
        });
        stopped.push(m.id);
      });
    } catch (e) {
      deps.logger.warn("machine stop at shutdown failed", {
        machine_id: id,
        err: e instanceof Error ? e.message : String(e),
      });
    }
  }
  if (stopped.length > 0) deps.logger.info("machines stopped for shutdown", { count: stopped.length });
  return stopped;
}

export interface MachineBackground {
  stop(): Promise<void>;
  /** one pass now (tests and the bench call it) */
  tick(): Promise<void>;
}

export function startMachineBackground(
  deps: MachinesDeps,
  opts: {
    intervalMs: number;
    reconcileAtStart?: boolean;
    /** stop(): stop this provider's running desktops (they resume at the next start); default false */
    stopDesktopsOnStop?: boolean;
  },
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
      if (opts.stopDesktopsOnStop) {
        await deps.machines.settle(); // provisioning and the start's reconcile finish first
        await stopDesktopsForShutdown(deps);
      }
    },
  };
}
