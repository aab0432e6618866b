// PATCH /v1/machines/{id} {ttl_minutes?, display_name?, metadata?}: ttl_minutes 5..10080 sets a new TTL
// counted from now (extends or shortens), 0 clears it. An empty body is 400 EMPTY_UPDATE.

import { CoreError } from "@cua/base/errors";
import type { Prisma } from "@cua/db/generated";
import { parseMachineId } from "./ids.ts";
import { asJson } from "./machine-ops.ts";
import { expiryFor } from "./provision-machine.ts";
import type { MachinePrincipal, MachineRecord } from "./record.ts";
import { assertMachineStatus, loadMachine, toMachineRecord } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

export async function updateMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
  body: {
    ttl_minutes?: number | undefined;
    display_name?: string | undefined;
    metadata?: Record<string, unknown> | undefined;
  },
): Promise<MachineRecord> {
  parseMachineId(id);
  if (body.ttl_minutes === undefined && body.display_name === undefined && body.metadata === undefined) {
    throw new CoreError("EMPTY_UPDATE", "Send at least one of ttl_minutes, display_name, metadata.");
  }
  const m = await loadMachine(deps, principal, id);
  assertMachineStatus(m, ["provisioning", "running", "stopped", "suspended", "error"], "an update");
  const data: Prisma.MachineUpdateInput = {};
  if (body.display_name !== undefined) data.displayName = body.display_name;
  if (body.metadata !== undefined) data.metadata = asJson(body.metadata);
  if (body.ttl_minutes !== undefined) {
    if (m.kind === "external" && body.ttl_minutes !== 0) {
      throw new CoreError("UNSUPPORTED_MACHINE_KIND", "External machines have no TTL.");
    }
    Object.assign(data, expiryFor(deps, body.ttl_minutes));
  }
  const updated = await deps.db.machine.update({ where: { id: m.id }, data });
  return toMachineRecord(updated);
}
