// One managed machine's stored state brought in line with what its provider really runs (issue 10):
// used by the reconcile at start (background.ts) and after every failed action on a live managed
// machine, so that a desktop whose processes died never shows `running` while its actions answer 409.
//
//   stored running (or provisioning, or stopped by the service's shutdown) -> the desktop must run:
//     alive -> kept (missing openbox/Chromium restarted by the provider); dead -> started again;
//     cannot start -> status error, status_reason start_failed, status_message says why
//   stored stopped / suspended -> stray processes reaped, a running desktop stopped
//   user or home gone -> status error, status_reason lost

import { CoreError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import type { CommandResult, MachineHandle, MachineProvider, OpResult } from "@cua/machines/provider";
import { bindManaged } from "./machine-access.ts";
import { asJson, holderGone, setMachineStatus, withMachineOp } from "./machine-ops.ts";
import type { MachinesDeps } from "./runtime.ts";

/** status_reason of machines the service stopped at its shutdown; reconcile at start resumes them */
export const SERVICE_STOPPED = "service_stopped";

export type ReconcileOutcome = "unchanged" | "restarted" | "stopped" | "error" | "lost";

export interface MachineReconcile {
  outcome: ReconcileOutcome;
  /** the row's status afterwards */
  status: string;
  detail: string;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 2000);

/** Whether the stored status means the desktop should be running. */
export function wantsRunning(m: Pick<Machine, "status" | "statusReason">): boolean {
  return (
    m.status === "running" ||
    m.status === "provisioning" ||
    (m.status === "stopped" && m.statusReason === SERVICE_STOPPED)
  );
}

/** Reconciles one row that has a handle. The caller holds the machine's op lease and passes the fresh row. */
export async function reconcileRow(
  deps: MachinesDeps,
  provider: MachineProvider,
  m: Machine,
): Promise<MachineReconcile> {
  const handle = m.handle as unknown as MachineHandle;
  let r: Awaited<ReturnType<MachineProvider["reconcile"]>>[number] | undefined;
  try {
    [r] = await provider.reconcile([handle]);
  } catch (e) {
    const detail = `The provider could not check the machine: ${message(e)}`;
    await setMachineStatus(deps, m.id, { status: "error", statusReason: "reconcile_failed", statusMessage: detail });
    return { outcome: "error", status: "error", detail };
  }
  if (!r) return { outcome: "unchanged", status: m.status, detail: "not reported by the provider" };
  if (r.status === "lost") {
    const detail = `The machine's ${r.detail.replace(/^the machine's /, "")}.`;
    await setMachineStatus(deps, m.id, { status: "error", statusReason: "lost", statusMessage: detail });
    return { outcome: "lost", status: "error", detail };
  }
  let h = r.handle;
  let outcome: ReconcileOutcome = "unchanged";
  if (wantsRunning(m)) {
    if (r.status !== "running") {
      try {
        h = await provider.start(h);
        outcome = "restarted";
      } catch (e) {
        const detail = `The machine's desktop had stopped (${r.detail}) and could not be started again: ${message(e)}`;
        await setMachineStatus(deps, m.id, {
          status: "error",
          statusReason: "start_failed",
          statusMessage: detail,
          handle: asJson(h),
        });
        deps.logger.warn("machine could not be restarted", { machine_id: m.id, err: detail });
        return { outcome: "error", status: "error", detail };
      }
    }
    if (m.status !== "running") {
      await setMachineStatus(deps, m.id, {
        status: "running",
        statusReason: null,
        statusMessage: null,
        handle: asJson(h),
      });
    } else {
      await deps.db.machine.update({ where: { id: m.id }, data: { handle: asJson(h) } });
    }
    return { outcome, status: "running", detail: r.detail };
  }
  if (r.status === "running") {
    h = await provider.stop(h);
    outcome = "stopped";
  }
  await deps.db.machine.update({ where: { id: m.id }, data: { handle: asJson(h) } });
  return { outcome, status: m.status, detail: r.detail };
}

/**
 * The op lease when it is free right now (or held by a process of this host that is gone); null when
 * another live operation holds it (that operation settles the state).
 */
async function withFreeLease<T>(deps: MachinesDeps, id: string, fn: (m: Machine) => Promise<T>): Promise<T | null> {
  const cur = await deps.db.machine.findUnique({ where: { id }, select: { opLockedUntil: true, opLockedBy: true } });
  if (!cur) return null;
  const free = !cur.opLockedUntil || cur.opLockedUntil < new Date() || (await holderGone(cur.opLockedBy));
  if (!free) return null;
  return withMachineOp(deps, id, fn).catch((e) => {
    if (e instanceof CoreError && e.code === "INVALID_STATE") return null;
    throw e;
  });
}

/** After a failed action on a live managed machine: reconcile it (when no lifecycle operation runs). */
export async function reconcileAfterFailure(deps: MachinesDeps, m: Machine): Promise<MachineReconcile | null> {
  if (m.kind !== "managed" || m.isTest || !m.handle) return null;
  const provider = deps.machines.managed;
  if (!provider || provider.name !== m.provider) return null;
  try {
    return await withFreeLease(deps, m.id, async (cur) => {
      if (cur.status !== "running" || !cur.handle) return null;
      const out = await reconcileRow(deps, provider, cur);
      if (out.outcome !== "unchanged")
        deps.logger.info("machine reconciled after a failed action", { machine_id: m.id, ...out });
      return out;
    });
  } catch (e) {
    deps.logger.warn("machine reconcile after a failure failed", { machine_id: m.id, err: message(e) });
    return null;
  }
}

/** Errors that say something about the machine's processes rather than about the request. */
function infraError(e: unknown): boolean {
  if (!(e instanceof CoreError)) return true;
  return ["INVALID_STATE", "SCREENSHOT_FAILED", "UPSTREAM_UNAVAILABLE", "UPSTREAM_TIMEOUT", "INTERNAL_ERROR"].includes(
    e.code,
  );
}

const INFRA_OP_CODES = new Set([
  "INPUT_FAILED",
  "BROWSER_UNAVAILABLE",
  "TIMEOUT",
  "SCREENSHOT_FAILED",
  "INVALID_STATE",
  "UPSTREAM_UNAVAILABLE",
  "INTERNAL_ERROR",
]);

/** An operation answer that failed for a reason of the machine (a dead X server, a vanished browser). */
export function infraFailure(r: unknown): boolean {
  const one = (x: OpResult | CommandResult) => !x.success && INFRA_OP_CODES.has(x.error?.code ?? "");
  const v = r as { results?: CommandResult[] } & OpResult;
  if (Array.isArray(v.results)) return v.results.some(one);
  return typeof v.success === "boolean" && one(v);
}

/**
 * Runs a provider call on a managed machine; when it fails for a reason of the machine, the machine
 * is reconciled before the answer goes out. A 409 from the provider while the row said running (its
 * processes had died) is retried once when the reconcile brought the desktop back.
 */
export async function withManagedReconcile<T>(
  deps: MachinesDeps,
  m: Machine,
  fn: (target: { provider: MachineProvider; handle: MachineHandle }) => Promise<T>,
): Promise<T> {
  const target = bindManaged(deps, m);
  if (m.kind !== "managed" || m.isTest) return fn(target);
  let result: T;
  try {
    result = await fn(target);
  } catch (e) {
    if (!infraError(e)) throw e;
    const out = await reconcileAfterFailure(deps, m);
    if (e instanceof CoreError && e.code === "INVALID_STATE" && out?.status === "running") {
      const fresh = await deps.db.machine.findUniqueOrThrow({ where: { id: m.id } });
      return fn(bindManaged(deps, fresh));
    }
    if (out?.status === "error") {
      const fresh = await deps.db.machine.findUniqueOrThrow({ where: { id: m.id } });
      throw new CoreError("INVALID_STATE", `The machine is error: ${fresh.statusMessage ?? out.detail}`, {
        current_state: "error",
        allowed_from: ["running"],
      });
    }
    throw e;
  }
  if (infraFailure(result)) await reconcileAfterFailure(deps, m);
  return result;
}
