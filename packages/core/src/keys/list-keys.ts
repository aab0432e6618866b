import type { CoreDeps } from "../deps.ts";
import type { Principal } from "./authenticate-key.ts";
import { type KeyRecord, toKeyRecord } from "./key-record.ts";

/** SPEC: a test key sees only test keys; a live key sees live plus legacy. Revoked keys are not listed. */
export async function listKeys(deps: CoreDeps, principal: Principal): Promise<{ keys: KeyRecord[] }> {
  const kinds = principal.mode === "test" ? ["test"] : ["live", "legacy"];
  const rows = await deps.db.apiKey.findMany({
    where: { accountId: principal.accountId, kind: { in: kinds }, revokedAt: null },
    orderBy: { createdAt: "desc" },
  });
  return { keys: rows.map((k) => toKeyRecord(k, principal.tier)) };
}
