// GET /v1/machines (limit 1..200, default 50; opaque cursor; optional status filter) and
// GET /v1/machines/{id}. Only the caller's account and mode; terminated machines are listed only when
// asked for with status=terminated.

import { CoreError } from "@cua/base/errors";
import type { Prisma } from "@cua/db/generated";
import { invalidStatusFilter, type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import type { MachinePrincipal, MachineRecord } from "./record.ts";
import { loadMachine, MACHINE_STATUSES, toMachineRecord } from "./record.ts";
import type { MachineDeps0 } from "./types.ts";

function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString("base64url");
}

function decodeCursor(c: string): { createdAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as [string, string];
    const createdAt = new Date(t);
    if (typeof id !== "string" || Number.isNaN(createdAt.getTime())) throw new Error("bad");
    return { createdAt, id };
  } catch {
    throw new CoreError("INVALID_CURSOR", "The cursor is not one this endpoint returned.");
  }
}

/** SPEC "Limits": machines list 1..200, default 50 (INVALID_LIMIT with actual, min, max). */
export function parseLimit(raw: unknown, dflt = 50): number {
  return parseListLimit(raw, dflt);
}

export async function listMachines(
  deps: MachineDeps0,
  principal: MachinePrincipal,
  q: { limit?: unknown; cursor?: string | undefined; status?: string | undefined },
): Promise<ListBody<MachineRecord>> {
  const limit = parseLimit(q.limit);
  if (q.status !== undefined && !(MACHINE_STATUSES as readonly string[]).includes(q.status)) {
    throw invalidStatusFilter(q.status, MACHINE_STATUSES);
  }
  const where: Prisma.MachineWhereInput = {
    accountId: principal.accountId,
    mode: principal.mode,
    status: q.status ?? { not: "terminated" },
  };
  if (q.cursor) {
    const c = decodeCursor(q.cursor);
    where.OR = [{ createdAt: { lt: c.createdAt } }, { createdAt: c.createdAt, id: { lt: c.id } }];
  }
  const rows = await deps.db.machine.findMany({
    where,
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const has_more = rows.length > limit;
  const last = page[page.length - 1];
  return listBody(page.map(toMachineRecord), {
    has_more,
    next_cursor: has_more && last ? encodeCursor(last.createdAt, last.id) : null,
  });
}

export async function getMachine(deps: MachineDeps0, principal: MachinePrincipal, id: string): Promise<MachineRecord> {
  return toMachineRecord(await loadMachine(deps, principal, id));
}
