// Limits on console sign-in and sign-up attempts, per email and per client IP, in fixed 15-minute windows.
// Counters live in the database (the rate_limit_windows table), so every API process sharing it enforces
// one limit. An attempt counts when it starts (so parallel guesses cannot slip past the check) and is
// given back when it succeeds: in effect only failures and attempts in flight use up the allowance.
import { createHash } from "node:crypto";
import { CoreError } from "@cua/base/errors";
import type { CoreDeps } from "../deps.ts";

export const ATTEMPT_WINDOW_MS = 15 * 60 * 1000;
export const MAX_ATTEMPTS_PER_EMAIL = 10;
export const MAX_ATTEMPTS_PER_IP = 100;

export interface AttemptBucket {
  bucket: string;
  limit: number;
}

export const emailBucket = (purpose: string, email: string): AttemptBucket => ({
  bucket: `console:${purpose}:email:${createHash("sha256").update(email).digest("hex").slice(0, 32)}`,
  limit: MAX_ATTEMPTS_PER_EMAIL,
});

export const ipBucket = (purpose: string, ip: string): AttemptBucket => ({
  bucket: `console:${purpose}:ip:${ip}`,
  limit: MAX_ATTEMPTS_PER_IP,
});

export interface Attempt {
  /** gives the attempt back (call on success) */
  release(): Promise<void>;
}

/** Counts one attempt in every bucket; 429 RATE_LIMIT_EXCEEDED with retry_after when any is over its limit. */
export async function beginAttempt(deps: CoreDeps, buckets: AttemptBucket[], what = "sign-in"): Promise<Attempt> {
  const now = deps.clock.now().getTime();
  const windowStart = now - (now % ATTEMPT_WINDOW_MS);
  const expires = new Date(windowStart + ATTEMPT_WINDOW_MS);
  let over = false;
  for (const b of buckets) {
    const rows = await deps.db.$queryRaw<{ count: number }[]>`
      INSERT INTO rate_limit_windows (bucket, window_start, count, expires_at)
      VALUES (${b.bucket}, ${BigInt(windowStart)}, 1, ${expires})
      ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
      RETURNING count`;
    if ((rows[0]?.count ?? 1) > b.limit) over = true;
  }
  if (over) {
    const retryAfter = Math.max(1, Math.ceil((windowStart + ATTEMPT_WINDOW_MS - now) / 1000));
    throw new CoreError(
      "RATE_LIMIT_EXCEEDED",
      `Too many ${what} attempts; wait ${retryAfter} seconds before trying again.`,
      {
        retry_after: retryAfter,
      },
    );
  }
  return {
    release: async () => {
      for (const b of buckets) {
        await deps.db.$executeRaw`
          UPDATE rate_limit_windows SET count = GREATEST(count - 1, 0)
          WHERE bucket = ${b.bucket} AND window_start = ${BigInt(windowStart)}`;
      }
    },
  };
}
