// A short-lived cache of resolved API keys. Authentication is on every request's path; the cache spares
// the database lookup for repeat callers. Revocation through this process drops the entry at once. Other
// processes learn of it from a PostgreSQL NOTIFY on KEY_EVENTS_CHANNEL (sent in the revoking transaction,
// see revoke-key.ts), heard by a listener (apps/api/src/http/key-events.ts) that confirms its connection
// every second. While the listener is confirmed, entries live `listenedTtlMs` (60 s); otherwise
// `ttlMs` (2 s), and a (re)connected listener starts from an empty cache. The bound a revoked key is
// refused within, in every process (docs/api.md "API keys"): the NOTIFY's delivery (milliseconds) while
// the listener works; if its connection fails silently, at most `confirmMs` + `ttlMs` (5 s) after it failed.
import type { Principal } from "./authenticate-key.ts";

/** The NOTIFY channel of key revocations; payloads "key:<key id>" or "account:<account id>". */
export const KEY_EVENTS_CHANNEL = "cua_api_key_events";

interface Entry {
  principal: Principal;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  cachedAt: number;
}

export class KeyCache {
  private byHash = new Map<string, Entry>();
  /** bumped by every invalidation: a lookup that began before one does not cache its (maybe stale) row */
  private gen = 0;
  /** until when (ms) the revocation listener is known to be connected */
  private confirmedUntil = 0;
  constructor(
    readonly ttlMs = 2000,
    private readonly max = 10_000,
    readonly listenedTtlMs = 60_000,
    /** how long one confirmation of the listener counts */
    readonly confirmMs = 3000,
  ) {}

  get generation(): number {
    return this.gen;
  }

  /** The listener is connected and subscribed as of `now` (called on connect and on every heartbeat). */
  confirmListener(now: number) {
    this.confirmedUntil = now + this.confirmMs;
  }

  /** The listener lost its connection: notifications may be missed from now on. */
  listenerLost() {
    this.confirmedUntil = 0;
  }

  listening(now: number): boolean {
    return now < this.confirmedUntil;
  }

  get(hash: string, now: number): Entry | undefined {
    const e = this.byHash.get(hash);
    if (!e) return undefined;
    if (now - e.cachedAt > (this.listening(now) ? this.listenedTtlMs : this.ttlMs)) {
      this.byHash.delete(hash);
      return undefined;
    }
    return e;
  }

  /** Caches a looked-up key, unless an invalidation happened since `gen` (read before the lookup). */
  set(hash: string, e: Omit<Entry, "cachedAt">, now: number, gen = this.gen) {
    if (gen !== this.gen) return;
    if (this.byHash.size >= this.max) this.byHash.delete(this.byHash.keys().next().value!);
    this.byHash.set(hash, { ...e, cachedAt: now });
  }

  touch(hash: string, at: Date) {
    const e = this.byHash.get(hash);
    if (e) e.lastUsedAt = at;
  }

  dropKey(keyId: string) {
    this.gen += 1;
    for (const [h, e] of this.byHash) if (e.principal.keyId === keyId) this.byHash.delete(h);
  }

  dropAccount(accountId: string) {
    this.gen += 1;
    for (const [h, e] of this.byHash) if (e.principal.accountId === accountId) this.byHash.delete(h);
  }

  clear() {
    this.gen += 1;
    this.byHash.clear();
  }

  /** Applies one KEY_EVENTS_CHANNEL payload. */
  onEvent(payload: string) {
    if (payload.startsWith("key:")) this.dropKey(payload.slice(4));
    else if (payload.startsWith("account:")) this.dropAccount(payload.slice(8));
    else this.clear();
  }
}
