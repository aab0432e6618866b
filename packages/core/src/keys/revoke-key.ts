import { CoreError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "./authenticate-key.ts";
import { KEY_EVENTS_CHANNEL, type KeyCache } from "./key-cache.ts";

export const KEY_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

/** Revokes a key of the caller's account and mode; another mode's key or an unknown id is 404. */
export async function revokeKey(
  deps: CoreDeps & { keyCache?: KeyCache },
  principal: Principal,
  keyId: string,
): Promise<{ id: string; revoked: true; revoked_at: string }> {
  if (!KEY_ID_RE.test(keyId)) throw new CoreError("INVALID_KEY_ID");
  const kinds = principal.mode === "test" ? ["test"] : ["live", "legacy"];
  const now = deps.clock.now();
  // the NOTIFY is delivered on commit, with the revocation: other processes drop their cached entry
  // (key-cache.ts); notifying for an id that matched nothing only drops nothing
  const [r] = await deps.db.$transaction([
    deps.db.apiKey.updateMany({
      where: { id: keyId, accountId: principal.accountId, kind: { in: kinds }, revokedAt: null },
      data: { revokedAt: now },
    }),
    deps.db.$executeRaw`SELECT pg_notify(${KEY_EVENTS_CHANNEL}, ${`key:${keyId}`})`,
  ]);
  if (r.count === 0) throw new CoreError("KEY_NOT_FOUND", "No such key.");
  deps.keyCache?.dropKey(keyId);
  return { id: keyId, revoked: true, revoked_at: now.toISOString() };
}
