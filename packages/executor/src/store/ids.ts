// Time-ordered ids (ULID layout: 48-bit ms timestamp + 80 random bits, Crockford base32), so runs
// and events sort by creation time. Monotonic within one process.
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
let lastTime = -1;
let lastRandom: number[] = [];

function encodeTime(ms: number): string {
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = (ALPHABET[ms % 32] as string) + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

export function ulid(now: number = Date.now()): string {
  if (now <= lastTime) {
    // same millisecond (or clock went back): increment the random part
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      const v = (lastRandom[i] as number) + 1;
      if (v < 32) {
        lastRandom[i] = v;
        break;
      }
      lastRandom[i] = 0;
    }
    now = lastTime;
  } else {
    const bytes = randomBytes(16);
    lastRandom = Array.from({ length: 16 }, (_, i) => (bytes[i] as number) % 32);
    lastTime = now;
  }
  return encodeTime(now) + lastRandom.map((v) => ALPHABET[v]).join("");
}
