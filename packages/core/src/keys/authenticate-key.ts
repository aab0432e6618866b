// Resolves a raw API key to its principal. Lookup by SHA-256 hash (unique index), then a
// constant-time comparison of the stored hash; revoked or expired keys are 401 INVALID_API_KEY.

import { CoreError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";
import { constantTimeEqualHex, hashKey, parseRawKey } from "./api-key-format.ts";
import type { KeyCache } from "./key-cache.ts";
import type { KeyMode, Scope } from "./scopes.ts";

export interface Principal {
  keyId: string;
  accountId: string;
  mode: KeyMode;
  scopes: Scope[];
  tier: "free" | "starter" | "professional" | "enterprise";
  keyKind: string;
}

const LAST_USED_RESOLUTION_MS = 60_000;

export async function authenticateKey(deps: CoreDeps & { keyCache?: KeyCache }, raw: string): Promise<Principal> {
  if (!parseRawKey(raw)) throw new CoreError("INVALID_API_KEY");
  const hash = hashKey(raw);
  const now = deps.clock.now();
  let entry = deps.keyCache?.get(hash, now.getTime());
  if (!entry) {
    const gen = deps.keyCache?.generation; // a revocation heard during the lookup keeps its row out of the cache
    const key = await deps.db.apiKey.findUnique({
      where: { keyHash: hash },
      include: { account: { select: { tier: true } } },
    });
    if (!key || !constantTimeEqualHex(key.keyHash, hash) || key.revokedAt) throw new CoreError("INVALID_API_KEY");
    entry = {
      principal: {
        keyId: key.id,
        accountId: key.accountId,
        mode: key.mode,
        scopes: key.scopes as Scope[],
        tier: key.account.tier,
        keyKind: key.kind,
      },
      expiresAt: key.expiresAt,
      lastUsedAt: key.lastUsedAt,
      cachedAt: now.getTime(),
    };
    deps.keyCache?.set(hash, entry, now.getTime(), gen);
  }
  if (entry.expiresAt && entry.expiresAt <= now) throw new CoreError("INVALID_API_KEY");
  if (!entry.lastUsedAt || now.getTime() - entry.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    // best effort, coarse: one write a minute per key at most
    entry.lastUsedAt = now;
    deps.keyCache?.touch(hash, now);
    deps.db.apiKey.update({ where: { id: entry.principal.keyId }, data: { lastUsedAt: now } }).catch((e) => {
      deps.logger.warn("last_used_at update failed", { err: String(e) });
    });
  }
  return entry.principal;
}
