// GET /v1/runs/{id} and GET /v1/runs (SPEC.md "Runs"; DECISIONS.md "Runs", "Cross-cutting rules").
// Every query is scoped to the caller's account and mode: another account's run, or a run of the
// other mode, is 404 RUN_NOT_FOUND like an unknown one.

import { CoreError } from "@cua/base/errors";
import type { Run } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import type { KeyMode } from "../keys/scopes.ts";
import {
  invalidStatusFilter,
  LIST_DEFAULT_LIMIT,
  type ListBody,
  listBody,
  parseListLimit,
} from "../operations/list.ts";
import { checkRunId, isRunStatus, RUN_STATUSES, type RunRecord, type RunStatus, toRunRecord } from "./run-record.ts";

export interface RunPrincipal {
  accountId: string;
  mode: KeyMode;
}

export async function loadRun(deps: Pick<CoreDeps, "db">, principal: RunPrincipal, runId: string): Promise<Run> {
  checkRunId(runId);
  const run = await deps.db.run.findFirst({
    where: { id: runId, accountId: principal.accountId, mode: principal.mode },
  });
  if (!run) throw new CoreError("RUN_NOT_FOUND", "The run does not exist.");
  return run;
}

export async function runRecord(deps: Pick<CoreDeps, "db">, run: Run): Promise<RunRecord> {
  const deliveries = await deps.db.runCallbackDelivery.findMany({
    where: { runId: run.id },
    orderBy: { createdAt: "asc" },
  });
  return toRunRecord(run, deliveries);
}

export async function getRun(deps: Pick<CoreDeps, "db">, principal: RunPrincipal, runId: string): Promise<RunRecord> {
  return runRecord(deps, await loadRun(deps, principal, runId));
}

export interface ListRunsQuery {
  status?: string;
  limit?: number | string;
  cursor?: string;
}

export const DEFAULT_LIST_LIMIT = LIST_DEFAULT_LIMIT;

interface Cursor {
  c: string;
  i: string;
}

function encodeCursor(r: Run): string {
  return Buffer.from(JSON.stringify({ c: r.createdAt.toISOString(), i: r.id } satisfies Cursor)).toString("base64url");
}

function decodeCursor(raw: string): Cursor {
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as Partial<Cursor>;
    if (typeof v.c === "string" && typeof v.i === "string" && !Number.isNaN(Date.parse(v.c))) return v as Cursor;
  } catch {}
  throw new CoreError("INVALID_CURSOR");
}

export async function listRuns(
  deps: Pick<CoreDeps, "db">,
  principal: RunPrincipal,
  q: ListRunsQuery,
): Promise<ListBody<RunRecord>> {
  if (q.status !== undefined && !isRunStatus(q.status)) throw invalidStatusFilter(q.status, RUN_STATUSES);
  const limit = parseListLimit(q.limit, DEFAULT_LIST_LIMIT);
  const cur = q.cursor !== undefined ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.run.findMany({
    where: {
      accountId: principal.accountId,
      mode: principal.mode,
      ...(q.status ? { status: q.status as RunStatus } : {}),
      ...(cur
        ? { OR: [{ createdAt: { lt: new Date(cur.c) } }, { createdAt: new Date(cur.c), id: { lt: cur.i } }] }
        : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const deliveries = page.length
    ? await deps.db.runCallbackDelivery.findMany({
        where: { runId: { in: page.map((r) => r.id) } },
        orderBy: { createdAt: "asc" },
      })
    : [];
  const byRun = new Map<string, typeof deliveries>();
  for (const d of deliveries) byRun.set(d.runId, [...(byRun.get(d.runId) ?? []), d]);
  const hasMore = rows.length > limit;
  return listBody(
    page.map((r) => toRunRecord(r, byRun.get(r.id) ?? [])),
    { has_more: hasMore, next_cursor: hasMore ? encodeCursor(page.at(-1)!) : null },
  );
}
