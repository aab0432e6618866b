import type { ApiKey } from "@cua/db/generated";

export interface KeyRecord {
  id: string;
  name: string;
  prefix: string;
  key_kind: "live" | "test" | "legacy";
  mode: "live" | "test";
  scopes: string[];
  tier: string;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

export function toKeyRecord(k: ApiKey, tier: string): KeyRecord {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    key_kind: k.kind as KeyRecord["key_kind"],
    mode: k.mode,
    scopes: k.scopes,
    tier,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    expires_at: k.expiresAt?.toISOString() ?? null,
  };
}
