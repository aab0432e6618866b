import { hash, randomBytes, timingSafeEqual } from "node:crypto";
import type { KeyMode } from "./scopes.ts";

const KEY_RE = /^sk-svc-(live|test)-[0-9a-f]{48}$/;

export function generateRawKey(mode: KeyMode): string {
  return `sk-svc-${mode}-${randomBytes(24).toString("hex")}`;
}

export function parseRawKey(raw: string): { mode: KeyMode } | null {
  const m = KEY_RE.exec(raw);
  return m ? { mode: m[1] as KeyMode } : null;
}

/** SHA-256 of the raw key, hex. The one-shot `hash` (no Hash object per call): every authenticated call pays it. */
export function hashKey(raw: string): string {
  return hash("sha256", raw, "hex");
}

/** DECISIONS.md: prefix = the first 16 characters of the raw key. */
export function keyPrefix(raw: string): string {
  return raw.slice(0, 16);
}

export function constantTimeEqualHex(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}
