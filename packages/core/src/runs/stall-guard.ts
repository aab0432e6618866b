// The stall guard: an agent that repeats the same action on an unchanged screen (same screenshot
// digest) burns credits until max_steps. On the third identical (screen, actions) pair in a row, the
// run asks for a human with reason `stalled` instead (on_awaiting_human decides: pause, fail, cancel).
// Only steps since the last resume count: a human who resumed the run gets three fresh tries.
import { createHash } from "node:crypto";
import type { Action } from "@cua/base/actions/action";

export const STALL_REPEATS = 3;
export const STALLED_REASON = "stalled";

export interface StepFingerprint {
  screenshotDigest: string | null;
  actionsDigest: string | null;
}

export function digestBytes(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Order-stable digest of an action batch (params keys sorted). */
export function digestActions(actions: Action[]): string {
  const canon = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canon);
    if (v && typeof v === "object") {
      return Object.fromEntries(
        Object.keys(v as Record<string, unknown>)
          .sort()
          .map((k) => [k, canon((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return createHash("sha256")
    .update(JSON.stringify(canon(actions)))
    .digest("hex");
}

/**
 * `history`: the committed steps since the last resume, oldest first. True when the newest
 * STALL_REPEATS - 1 of them and `current` share one screenshot digest and one action digest.
 */
export function isStalled(history: StepFingerprint[], current: StepFingerprint, repeats = STALL_REPEATS): boolean {
  if (!current.screenshotDigest || !current.actionsDigest) return false;
  const tail = history.slice(-(repeats - 1));
  if (tail.length < repeats - 1) return false;
  return tail.every(
    (h) => h.screenshotDigest === current.screenshotDigest && h.actionsDigest === current.actionsDigest,
  );
}
