// Issue 16: the key cache's bounds (docs/api.md "API keys"): entries live 60 s only while the revocation
// listener is confirmed, 2 s otherwise; a lookup that overlapped a revocation never caches its row.

import { describe, expect, it } from "vitest";
import type { Principal } from "../src/keys/authenticate-key.ts";
import { KeyCache } from "../src/keys/key-cache.ts";

const principal = (keyId: string, accountId = "acct-1"): Principal => ({
  keyId,
  accountId,
  mode: "live",
  scopes: ["usage"],
  tier: "free",
  keyKind: "live",
});
const entry = (keyId: string, accountId?: string) => ({
  principal: principal(keyId, accountId),
  expiresAt: null,
  lastUsedAt: null,
});

describe("KeyCache", () => {
  it("keeps entries 60 s while the listener is confirmed, 2 s once its confirmation (3 s) lapses", () => {
    const c = new KeyCache();
    c.confirmListener(0);
    c.set("h1", entry("k1"), 0);
    expect(c.get("h1", 2500)?.principal.keyId).toBe("k1"); // confirmed until 3,000: the 60 s TTL applies
    c.confirmListener(2500);
    expect(c.get("h1", 5000)?.principal.keyId).toBe("k1");
    // no confirmation since 2,500: at 5,600 the listener may have missed a revocation; 2 s TTL
    expect(c.get("h1", 5600)).toBeUndefined();
    c.set("h2", entry("k2"), 10_000);
    c.listenerLost();
    expect(c.get("h2", 11_900)?.principal.keyId).toBe("k2");
    expect(c.get("h2", 12_100)).toBeUndefined();
  });

  it("drops a revoked key, an account's keys, or everything on the channel's events", () => {
    const c = new KeyCache();
    c.set("a", entry("k1", "acct-1"), 0);
    c.set("b", entry("k2", "acct-1"), 0);
    c.set("c", entry("k3", "acct-2"), 0);
    c.onEvent("key:k1");
    expect([c.get("a", 1), c.get("b", 1)?.principal.keyId]).toEqual([undefined, "k2"]);
    c.onEvent("account:acct-1");
    expect([c.get("b", 1), c.get("c", 1)?.principal.keyId]).toEqual([undefined, "k3"]);
    c.onEvent("something else");
    expect(c.get("c", 1)).toBeUndefined();
  });

  it("a lookup that began before a revocation does not cache what it read", () => {
    const c = new KeyCache();
    const gen = c.generation; // the lookup starts
    c.onEvent("key:k1"); // the revocation is heard while the row (read before it committed) is in flight
    c.set("h", entry("k1"), 0, gen);
    expect(c.get("h", 1)).toBeUndefined();
    c.set("h", entry("k1"), 0, c.generation);
    expect(c.get("h", 1)?.principal.keyId).toBe("k1");
  });
});
