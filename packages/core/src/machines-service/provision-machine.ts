// POST /v1/machines (SPEC.md "Machines"; DECISIONS.md "Machines"). Live keys: a wallet gate of 20
// credits (not a fee), a row in status provisioning, 202; the desktop is created in the background and
// the row moves to running (or error with status_reason provision_failed). Test keys: a mock machine,
// running at once, 201, at most 5 per account (429 TEST_MACHINE_LIMIT).

import { CoreError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import type { MachineHandle } from "@cua/machines/provider";
import { newMachineId } from "./ids.ts";
import { asJson } from "./machine-ops.ts";
import { MACHINE_PRICING } from "./pricing.ts";
import type { MachinePrincipal, MachineRecord } from "./record.ts";
import { CAPABILITIES, toMachineRecord } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";
import type { ProvisionBody } from "./schemas.ts";

export const TEST_MACHINE_LIMIT = 5;

export function capabilitiesFor(desktopEnabled: boolean): string[] {
  return desktopEnabled ? [...CAPABILITIES] : ["terminal", "files"];
}

export function expiryFor(deps: MachinesDeps, ttlMinutes: number | undefined | null, from = deps.clock.now()) {
  if (!ttlMinutes) return { ttlMinutes: null, expiresAt: null };
  return { ttlMinutes, expiresAt: new Date(from.getTime() + ttlMinutes * deps.machines.minuteMs) };
}

export async function provisionMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  body: ProvisionBody,
): Promise<{ machine: MachineRecord; provisioning: boolean; status: 201 | 202 }> {
  const test = principal.mode === "test";
  const provider = test ? deps.machines.mock : deps.machines.managed;
  if (!provider) {
    throw new CoreError("UPSTREAM_UNAVAILABLE", "This server runs no managed machine provider.", { retry_after: 60 });
  }
  if (body.os_type === "windows" && !test) {
    throw new CoreError("FEATURE_NOT_AVAILABLE", "The machine provider of this server runs Linux desktops only.", {
      suggestion: 'Use os_type "linux".',
    });
  }
  let snapshotRef: string | null = null;
  if (body.restore_from_snapshot) {
    const s = await deps.db.machineSnapshot.findFirst({
      where: {
        id: body.restore_from_snapshot,
        accountId: principal.accountId,
        mode: principal.mode,
        status: "available",
      },
    });
    if (!s) throw new CoreError("NOT_FOUND", `Snapshot ${body.restore_from_snapshot} does not exist.`);
    snapshotRef = s.providerRef ?? s.id;
  }
  const id = newMachineId(principal.mode);
  const now = deps.clock.now();
  const ttl = expiryFor(deps, body.ttl_minutes, now);
  const row = await deps.db.$transaction(async (tx) => {
    // one provisioning decision at a time per account: the gate and the test limit hold under concurrency
    const acct = await tx.$queryRaw<{ balance_credits: number }[]>`
      SELECT balance_credits FROM accounts WHERE id = ${principal.accountId}::uuid FOR UPDATE`;
    const balance = acct[0]?.balance_credits ?? 0;
    if (test) {
      const count = await tx.machine.count({
        where: { accountId: principal.accountId, mode: "test", isTest: true, status: { not: "terminated" } },
      });
      if (count >= TEST_MACHINE_LIMIT) {
        throw new CoreError("TEST_MACHINE_LIMIT", `A test key may hold at most ${TEST_MACHINE_LIMIT} mock machines.`, {
          suggestion: "Terminate a mock machine (DELETE /v1/machines/{id}) first.",
        });
      }
    } else if (balance < MACHINE_PRICING.provision_gate_credits) {
      throw new CoreError(
        "INSUFFICIENT_CREDITS",
        `Provisioning needs a wallet balance of ${MACHINE_PRICING.provision_gate_credits} credits; the wallet holds ${balance}.`,
        { required: MACHINE_PRICING.provision_gate_credits, balance, suggestion: "Top up the wallet, then retry." },
      );
    }
    return tx.machine.create({
      data: {
        id,
        accountId: principal.accountId,
        mode: principal.mode,
        kind: "managed",
        isTest: test,
        displayName: body.display_name,
        osType: body.os_type,
        desktopEnabled: body.desktop_enabled,
        status: "provisioning",
        provider: provider.name,
        ttlMinutes: ttl.ttlMinutes,
        expiresAt: ttl.expiresAt,
        screenWidth: body.screen_width,
        screenHeight: body.screen_height,
        capabilities: capabilitiesFor(body.desktop_enabled),
        metadata: asJson(body.metadata ?? {}),
        billedThrough: now,
      },
    });
  });
  if (test) {
    const done = await finishProvisioning(deps, row, snapshotRef);
    return { machine: toMachineRecord(done), provisioning: false, status: 201 };
  }
  deps.machines.track(finishProvisioning(deps, row, snapshotRef));
  return { machine: toMachineRecord(row), provisioning: true, status: 202 };
}

/** Creates the machine with its provider and records the outcome. Also used by reconcile after a crash. */
export async function finishProvisioning(
  deps: MachinesDeps,
  row: Machine,
  snapshotRef: string | null,
): Promise<Machine> {
  const provider = row.isTest ? deps.machines.mock : deps.machines.managed;
  let handle: MachineHandle | null = null;
  try {
    if (!provider) throw new CoreError("UPSTREAM_UNAVAILABLE", "No managed machine provider.");
    handle = await provider.provision({
      machineId: row.id,
      displayName: row.displayName,
      screen: { width: row.screenWidth, height: row.screenHeight },
      desktopEnabled: row.desktopEnabled,
    });
    if (snapshotRef) handle = await provider.restoreFromSnapshot(handle, snapshotRef);
    const now = deps.clock.now();
    const moved = await deps.db.machine.updateMany({
      where: { id: row.id, status: "provisioning" },
      data: { status: "running", statusReason: null, statusMessage: null, handle: asJson(handle), billedThrough: now },
    });
    if (moved.count === 0) {
      // terminated while it was being created: nothing may keep running
      await provider.terminate(handle).catch(() => {});
      await deps.db.machine.update({ where: { id: row.id }, data: { handle: asJson(handle) } }).catch(() => {});
    }
    deps.logger.info("machine provisioned", { machine_id: row.id, provider: provider.name });
  } catch (e) {
    const err = (e instanceof Error ? e.message : String(e)).slice(0, 2000);
    deps.logger.warn("machine provisioning failed", { machine_id: row.id, err });
    // nothing of a failed machine stays on the host (its user and home included)
    if (handle && provider) await provider.terminate(handle).catch(() => {});
    else if (provider?.forget) await provider.forget(row.id).catch(() => {});
    await deps.db.machine.updateMany({
      where: { id: row.id, status: "provisioning" },
      data: { status: "error", statusReason: "provision_failed", statusMessage: err },
    });
    if (row.isTest) throw e;
  }
  return deps.db.machine.findUniqueOrThrow({ where: { id: row.id } });
}
