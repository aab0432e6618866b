import { CoreError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";
import { type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import type { Principal } from "./authenticate-key.ts";
import { type KeyRecord, toKeyRecord } from "./key-record.ts";

/** SPEC: a test key sees only test keys; a live key sees live plus legacy. Revoked keys are not listed. */
/** Newest first, `limit` 1..200 (default 20) with a cursor; SPEC's `keys` repeats `data` (DECISIONS amendments). */
export async function listKeys(
  deps: CoreDeps,
  principal: Principal,
  q: { limit?: string | number | undefined; cursor?: string | undefined } = {},
): Promise<ListBody<KeyRecord> & { keys: KeyRecord[] }> {
  const kinds = principal.mode === "test" ? ["test"] : ["live", "legacy"];
  const limit = parseListLimit(q.limit);
  const cur = q.cursor ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.apiKey.findMany({
    where: {
      accountId: principal.accountId,
      kind: { in: kinds },
      revokedAt: null,
      ...(cur ? { OR: [{ createdAt: { lt: cur.createdAt } }, { createdAt: cur.createdAt, id: { lt: cur.id } }] } : {}),
    },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const items = page.map((k) => toKeyRecord(k, principal.tier));
  const last = page.at(-1);
  return listBody(
    items,
    {
      has_more: hasMore,
      next_cursor:
        hasMore && last
          ? Buffer.from(JSON.stringify([last.createdAt.toISOString(), last.id])).toString("base64url")
          : null,
    },
    { keys: items },
  );
}

function decodeCursor(c: string): { createdAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(c, "base64url").toString("utf8")) as [string, string];
    const createdAt = new Date(t);
    if (typeof id === "string" && !Number.isNaN(createdAt.getTime())) return { createdAt, id };
  } catch {}
  throw new CoreError("INVALID_CURSOR", "The cursor is not one this endpoint returned.");
}
