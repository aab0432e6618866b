// POST /v1/machines/{id}/snapshot (snapshots:write; 1 credit on live keys, 202) archives the managed
// machine's home directory; POST /v1/machines/{id}/restore {snapshot_id} replaces the home directory
// with a snapshot's content (the machine keeps its status); GET /v1/machines/{id}/snapshots lists them.
// Provisioning with restore_from_snapshot starts a new machine from one. External machines: 400
// UNSUPPORTED_MACHINE_KIND.

import { CoreError } from "@cua/base/errors";
import type { MachineSnapshot } from "@cua/db/generated";
import { afterListCursor, encodeListCursor, type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import { withCharge } from "../predict/charge.ts";
import { bindManaged } from "./machine-access.ts";
import { asJson, withMachineOp } from "./machine-ops.ts";
import { MACHINE_PRICING } from "./pricing.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

export interface SnapshotRecord {
  machine_id: string;
  snapshot_id: string;
  name: string;
  status: "creating" | "available" | "failed";
  size_bytes: number | null;
  created_at: string;
  credits_charged: number;
}

function toSnapshotRecord(s: MachineSnapshot): SnapshotRecord {
  return {
    machine_id: s.machineId,
    snapshot_id: s.id,
    name: s.name,
    status: s.status as SnapshotRecord["status"],
    size_bytes: s.sizeBytes === null ? null : Number(s.sizeBytes),
    created_at: s.createdAt.toISOString(),
    credits_charged: s.creditsCharged,
  };
}

export async function snapshotMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  name: string | undefined,
  requestId?: string,
): Promise<{ snapshot: SnapshotRecord; creditsCharged: number; balance: number | null }> {
  const first = await loadMachine(deps, principal, id);
  if (first.kind === "external") {
    throw new CoreError("UNSUPPORTED_MACHINE_KIND", "Snapshots are for managed machines; this machine is external.");
  }
  const allowed = ["running", "stopped", "suspended"] as const;
  const price = first.isTest ? 0 : MACHINE_PRICING.snapshot_credits;
  // the one metering mechanism (predict/charge.ts): reserve, do the work, answer only after the capture
  // committed (else 503 BILLING_UNAVAILABLE, the hold left to the sweeper); a failure releases the hold
  const charged = await withCharge(
    deps,
    {
      accountId: principal.accountId,
      amount: price,
      billable: price > 0,
      endpoint: "POST /v1/machines/{id}/snapshot",
      requestId: requestId ?? "",
    },
    async () => {
      assertMachineStatus(first, [...allowed], "a snapshot");
      const info = await withMachineOp(deps, first.id, async (m) => {
        assertMachineStatus(m, [...allowed], "a snapshot");
        const { provider, handle } = bindManaged(deps, m);
        return provider.snapshot(handle, name ?? `snapshot-${deps.clock.now().toISOString()}`);
      });
      return deps.db.machineSnapshot.create({
        data: {
          id: info.snapshot_id,
          machineId: first.id,
          accountId: principal.accountId,
          mode: principal.mode,
          name: info.name,
          status: "available",
          sizeBytes: BigInt(info.size_bytes),
          providerRef: info.snapshot_id,
          creditsCharged: price,
        },
      });
    },
  );
  return { snapshot: toSnapshotRecord(charged.result), creditsCharged: charged.charged, balance: charged.remaining };
}

/** A machine's snapshots, newest first, in the list shape (DECISIONS.md "Compatibility amendments"). */
export async function listSnapshots(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  q: { limit?: string | number | undefined; cursor?: string | undefined } = {},
): Promise<ListBody<SnapshotRecord>> {
  const limit = parseListLimit(q.limit);
  const where = afterListCursor(q.cursor); // 400 INVALID_CURSOR before the machine is looked up
  const m = await loadMachine(deps, principal, id);
  const rows = await deps.db.machineSnapshot.findMany({
    where: { machineId: m.id, accountId: principal.accountId, mode: principal.mode, ...where },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page.at(-1);
  return listBody(page.map(toSnapshotRecord), {
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeListCursor(last.createdAt, last.id) : null,
  });
}

export async function restoreMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  snapshotId: string,
): Promise<{ machine_id: string; status: string; snapshot_id: string; message: string }> {
  const first = await loadMachine(deps, principal, id);
  if (first.kind === "external") {
    throw new CoreError("UNSUPPORTED_MACHINE_KIND", "Snapshots are for managed machines; this machine is external.");
  }
  const s = await deps.db.machineSnapshot.findFirst({
    where: { id: snapshotId, accountId: principal.accountId, mode: principal.mode, status: "available" },
  });
  if (!s) throw new CoreError("NOT_FOUND", `Snapshot ${snapshotId} does not exist.`);
  const allowed = ["running", "stopped", "suspended"] as const;
  assertMachineStatus(first, [...allowed], "a restore");
  return withMachineOp(deps, first.id, async (m) => {
    assertMachineStatus(m, [...allowed], "a restore");
    const { provider, handle } = bindManaged(deps, m);
    const h = await provider.restoreFromSnapshot(handle, s.providerRef ?? s.id);
    await deps.db.machine.update({ where: { id: m.id }, data: { handle: asJson(h) } });
    return {
      machine_id: m.id,
      status: m.status,
      snapshot_id: s.id,
      message: "The home directory now holds the snapshot's content.",
    };
  });
}
