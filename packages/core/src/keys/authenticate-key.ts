// Resolves a raw API key to its principal. Lookup by SHA-256 hash (unique index), then a
// constant-time comparison of the stored hash; revoked or expired keys are 401 INVALID_API_KEY.
import type { CoreDeps } from "../deps.ts";
import { CoreError } from "../errors.ts";
import { constantTimeEqualHex, hashKey, parseRawKey } from "./api-key-format.ts";
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

export async function authenticateKey(deps: CoreDeps, raw: string): Promise<Principal> {
  if (!parseRawKey(raw)) throw new CoreError("INVALID_API_KEY");
  const hash = hashKey(raw);
  const key = await deps.db.apiKey.findUnique({ where: { keyHash: hash }, include: { account: { select: { tier: true } } } });
  const now = deps.clock.now();
  if (!key || !constantTimeEqualHex(key.keyHash, hash) || key.revokedAt || (key.expiresAt && key.expiresAt <= now)) {
    throw new CoreError("INVALID_API_KEY");
  }
  if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
    // best effort, coarse: one write a minute per key at most
    deps.db.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: now } }).catch((e) => {
      deps.logger.warn("last_used_at update failed", { err: String(e) });
    });
  }
  return {
    keyId: key.id,
    accountId: key.accountId,
    mode: key.mode,
    scopes: key.scopes as Scope[],
    tier: key.account.tier,
    keyKind: key.kind,
  };
}
