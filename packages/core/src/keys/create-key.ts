import { CoreError, validationError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import type { DbOrTx } from "@cua/db/client";
import type { CoreDeps } from "../deps.ts";
import { generateRawKey, hashKey, keyPrefix } from "./api-key-format.ts";
import type { Principal } from "./authenticate-key.ts";
import { type KeyRecord, toKeyRecord } from "./key-record.ts";
import { defaultScopes, isScope, type KeyMode, type Scope } from "./scopes.ts";

export const MAX_ACTIVE_KEYS = 200;

export interface CreateKeyInput {
  name?: string;
  scopes?: string[];
  expires_at?: string;
}

/** Inserts a key and returns the raw key once. Used by the API (through createKey) and the admin CLI. */
export async function insertKey(
  db: DbOrTx,
  args: { accountId: string; mode: KeyMode; name: string; scopes: Scope[]; expiresAt?: Date | null },
): Promise<{ raw: string; id: string }> {
  const raw = generateRawKey(args.mode);
  const id = `key_${hex(12)}`;
  await db.apiKey.create({
    data: {
      id,
      accountId: args.accountId,
      name: args.name,
      keyHash: hashKey(raw),
      prefix: keyPrefix(raw),
      mode: args.mode,
      kind: args.mode,
      scopes: [...new Set(args.scopes)],
      expiresAt: args.expiresAt ?? null,
    },
  });
  return { raw, id };
}

export async function createKey(
  deps: CoreDeps,
  principal: Principal,
  input: CreateKeyInput,
): Promise<KeyRecord & { key: string }> {
  const requested = input.scopes ?? defaultScopes(principal.mode);
  requested.forEach((s, i) => {
    if (!isScope(s)) throw validationError(`body.scopes.${i}`, `unknown scope "${s}"`);
  });
  if (principal.mode === "test" && requested.includes("llm_keys") && input.scopes === undefined) {
    // defaults never carry llm_keys on test keys; explicit requests are checked below like any scope
  }
  // A key may only grant scopes it holds itself.
  const missing = requested.find((s) => !principal.scopes.includes(s as Scope));
  if (missing) {
    throw new CoreError("INSUFFICIENT_SCOPE", `This key cannot grant the scope "${missing}" it does not hold.`, {
      required_scope: missing,
      current_scopes: principal.scopes,
    });
  }
  let expiresAt: Date | null = null;
  if (input.expires_at !== undefined) {
    expiresAt = new Date(input.expires_at);
    if (Number.isNaN(expiresAt.getTime())) throw validationError("body.expires_at", "must be an ISO 8601 timestamp");
    if (expiresAt <= deps.clock.now()) throw validationError("body.expires_at", "must be in the future");
  }
  const now = deps.clock.now();
  const active = await deps.db.apiKey.count({
    where: { accountId: principal.accountId, revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] },
  });
  if (active >= MAX_ACTIVE_KEYS) {
    throw new CoreError("KEY_LIMIT_REACHED", `An account may hold at most ${MAX_ACTIVE_KEYS} active keys.`);
  }
  const { raw, id } = await insertKey(deps.db, {
    accountId: principal.accountId,
    mode: principal.mode,
    name: input.name ?? "",
    scopes: requested as Scope[],
    expiresAt,
  });
  const row = await deps.db.apiKey.findUniqueOrThrow({ where: { id } });
  return { ...toKeyRecord(row, principal.tier), key: raw };
}
