// API keys as the operator manages them: mint a key of either mode with any scope set (DECISIONS.md:
// "The console's operator can mint keys with any scope set"), list the active keys of both modes,
// revoke any of them. The raw key is returned once, by creation.
import type { CoreDeps } from "../deps.ts";
import { CoreError, validationError } from "../errors.ts";
import { insertKey, MAX_ACTIVE_KEYS } from "../keys/create-key.ts";
import type { KeyCache } from "../keys/key-cache.ts";
import { type KeyRecord, toKeyRecord } from "../keys/key-record.ts";
import { listKeys } from "../keys/list-keys.ts";
import { revokeKey } from "../keys/revoke-key.ts";
import { isScope, type KeyMode, type Scope } from "../keys/scopes.ts";
import { operatorPrincipal } from "./operator-principal.ts";
import type { Operator } from "./session.ts";

export interface OperatorKeyInput {
  mode: KeyMode;
  name?: string;
  scopes: string[];
  expires_at?: string;
}

export async function createOperatorKey(
  deps: CoreDeps,
  op: Operator,
  input: OperatorKeyInput,
): Promise<KeyRecord & { key: string }> {
  if (input.scopes.length === 0) throw validationError("body.scopes", "choose at least one scope");
  input.scopes.forEach((s, i) => {
    if (!isScope(s)) throw validationError(`body.scopes.${i}`, `unknown scope "${s}"`);
  });
  const now = deps.clock.now();
  let expiresAt: Date | null = null;
  if (input.expires_at !== undefined) {
    expiresAt = new Date(input.expires_at);
    if (Number.isNaN(expiresAt.getTime())) throw validationError("body.expires_at", "must be an ISO 8601 timestamp");
    if (expiresAt <= now) throw validationError("body.expires_at", "must be in the future");
  }
  const active = await deps.db.apiKey.count({
    where: { accountId: op.accountId, revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
  });
  if (active >= MAX_ACTIVE_KEYS) {
    throw new CoreError("KEY_LIMIT_REACHED", `An account may hold at most ${MAX_ACTIVE_KEYS} active keys.`);
  }
  const { raw, id } = await insertKey(deps.db, {
    accountId: op.accountId,
    mode: input.mode,
    name: input.name?.trim() ?? "",
    scopes: input.scopes as Scope[],
    expiresAt,
  });
  const row = await deps.db.apiKey.findUniqueOrThrow({ where: { id } });
  return { ...toKeyRecord(row, op.tier), key: raw };
}

/** Active keys of both modes (live, legacy and test), newest first. */
export async function listOperatorKeys(deps: CoreDeps, op: Operator): Promise<{ keys: KeyRecord[] }> {
  const [live, test] = await Promise.all([
    listKeys(deps, operatorPrincipal(op, "live")),
    listKeys(deps, operatorPrincipal(op, "test")),
  ]);
  const keys = [...live.keys, ...test.keys].sort((a, b) => b.created_at.localeCompare(a.created_at));
  return { keys };
}

export async function revokeOperatorKey(
  deps: CoreDeps & { keyCache?: KeyCache },
  op: Operator,
  keyId: string,
): Promise<{ id: string; revoked: true; revoked_at: string }> {
  const key = /^[A-Za-z0-9_-]{1,128}$/.test(keyId)
    ? await deps.db.apiKey.findFirst({ where: { id: keyId, accountId: op.accountId }, select: { mode: true } })
    : null;
  // revokeKey re-checks the id's form, the account and that the key is still active
  return revokeKey(deps, operatorPrincipal(op, key?.mode ?? "live"), keyId);
}
