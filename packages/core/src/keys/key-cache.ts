// A short-lived cache of resolved API keys. Authentication is on every request's path; the cache spares
// the database lookup for repeat callers. Revocation through this process drops the entry at once; other
// processes see it within the TTL (documented in docs/api.md).
import type { Principal } from "./authenticate-key.ts";

interface Entry {
  principal: Principal;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  cachedAt: number;
}

export class KeyCache {
  private byHash = new Map<string, Entry>();
  constructor(
    readonly ttlMs = 2000,
    private readonly max = 10_000,
  ) {}

  get(hash: string, now: number): Entry | undefined {
    const e = this.byHash.get(hash);
    if (!e) return undefined;
    if (now - e.cachedAt > this.ttlMs) {
      this.byHash.delete(hash);
      return undefined;
    }
    return e;
  }

  set(hash: string, e: Omit<Entry, "cachedAt">, now: number) {
    if (this.byHash.size >= this.max) this.byHash.delete(this.byHash.keys().next().value!);
    this.byHash.set(hash, { ...e, cachedAt: now });
  }

  touch(hash: string, at: Date) {
    const e = this.byHash.get(hash);
    if (e) e.lastUsedAt = at;
  }

  dropKey(keyId: string) {
    for (const [h, e] of this.byHash) if (e.principal.keyId === keyId) this.byHash.delete(h);
  }

  dropAccount(accountId: string) {
    for (const [h, e] of this.byHash) if (e.principal.accountId === accountId) this.byHash.delete(h);
  }
}
