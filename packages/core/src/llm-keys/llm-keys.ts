// Stored provider keys (BYOK): SPEC.md "Idempotency, keys, provider keys, health" and DECISIONS.md.

import { createHash } from "node:crypto";
import { CoreError, validationError } from "@cua/base/errors";
import { newUuid } from "@cua/base/ids";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { listBody } from "../operations/list.ts";
import { open, seal } from "./envelope.ts";

export const LLM_PROVIDERS = ["anthropic", "openai"] as const;
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

export function parseProvider(p: string): LlmProvider {
  if ((LLM_PROVIDERS as readonly string[]).includes(p)) return p as LlmProvider;
  throw new CoreError(
    "LLM_PROVIDER_UNSUPPORTED",
    p === "managed"
      ? "The managed engine has no storable key."
      : `Unsupported provider "${p}"; use anthropic or openai.`,
  );
}

/** DECISIONS.md: the first 16 lowercase hex characters of SHA-256 of the raw key. */
export function keyFingerprint(raw: string): string {
  return createHash("sha256").update(raw).digest("hex").slice(0, 16);
}

/** PUT checks the key's form only; the provider's rejection surfaces at use as LLM_KEY_INVALID. */
export function checkProviderKeyForm(provider: LlmProvider, key: string): void {
  if (key.length < 20 || key.length > 512 || /\s/.test(key)) {
    throw validationError("body.api_key", "must be 20 to 512 characters without whitespace");
  }
  if (provider === "anthropic" && !key.startsWith("sk-ant-"))
    throw validationError("body.api_key", "an Anthropic key starts with sk-ant-");
  if (provider === "openai" && !key.startsWith("sk-"))
    throw validationError("body.api_key", "an OpenAI key starts with sk-");
}

function requireLive(p: Principal) {
  if (p.mode !== "live") throw new CoreError("FEATURE_NOT_AVAILABLE", "Stored provider keys require a live key.");
}

const ctxOf = (accountId: string, provider: string) => `${accountId}:${provider}`;

export async function putLlmKey(deps: CoreDeps, p: Principal, providerRaw: string, apiKey: string) {
  requireLive(p);
  const provider = parseProvider(providerRaw);
  checkProviderKeyForm(provider, apiKey);
  const s = seal(deps.kek, apiKey, ctxOf(p.accountId, provider));
  const fp = keyFingerprint(apiKey);
  const bytes = (b: Buffer) => new Uint8Array(b);
  const data = {
    ciphertext: bytes(s.ciphertext),
    iv: bytes(s.iv),
    tag: bytes(s.tag),
    wrappedDek: bytes(s.wrappedDek),
    fingerprint: fp,
  };
  await deps.db.providerKey.upsert({
    where: { accountId_provider: { accountId: p.accountId, provider } },
    create: { id: newUuid(), accountId: p.accountId, provider, ...data },
    update: data,
  });
  return { provider, key_fingerprint: fp, stored: true as const };
}

export async function listLlmKeys(deps: CoreDeps, p: Principal) {
  requireLive(p);
  const rows = await deps.db.providerKey.findMany({ where: { accountId: p.accountId }, orderBy: { provider: "asc" } });
  const items = rows.map((r) => ({
    provider: r.provider,
    key_fingerprint: r.fingerprint,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  }));
  // DECISIONS.md "Compatibility amendments": the list shape, plus SPEC's own `keys` (at most one per provider)
  return listBody(items, { has_more: false, next_cursor: null }, { keys: items });
}

export async function deleteLlmKey(deps: CoreDeps, p: Principal, providerRaw: string) {
  requireLive(p);
  const provider = parseProvider(providerRaw);
  const r = await deps.db.providerKey.deleteMany({ where: { accountId: p.accountId, provider } });
  if (r.count === 0) throw new CoreError("LLM_KEY_NOT_FOUND");
  return { deleted: true as const };
}

/** The stored key in clear, for engine use only (never returned by the API). Null when none is stored. */
export async function resolveStoredLlmKey(
  deps: CoreDeps,
  accountId: string,
  provider: LlmProvider,
): Promise<string | null> {
  const r = await deps.db.providerKey.findUnique({ where: { accountId_provider: { accountId, provider } } });
  if (!r) return null;
  return open(
    deps.kek,
    {
      ciphertext: Buffer.from(r.ciphertext),
      iv: Buffer.from(r.iv),
      tag: Buffer.from(r.tag),
      wrappedDek: Buffer.from(r.wrappedDek),
    },
    ctxOf(accountId, provider),
  );
}
