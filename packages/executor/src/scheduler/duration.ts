// Time strings and dates as the SDK sends them (SDK_SPEC 1.3.2): "1h30m", "500ms", "2w", or an
// ISO 8601 date for sleepUntil. The JS SDK renders durations with timeStr(), which writes "" for
// zero and rounds sub-second durations up to "1s".

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

const PART = /(\d+(?:\.\d+)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w)/y;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T|$)/;

export class DurationError extends Error {
  override name = "DurationError";
}

/** Milliseconds in a time string; "" is zero. Throws DurationError on anything else. */
export function parseDuration(input: string): number {
  const s = input.trim();
  if (s === "") return 0;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const at = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== at) throw new DurationError(`invalid time string "${input}"`);
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  }
  return Math.round(total);
}

/** True for the ISO 8601 dates sleepUntil and timeouts may carry. */
export function isIsoDate(input: string): boolean {
  return ISO_DATE.test(input.trim()) && !Number.isNaN(Date.parse(input));
}

/** The instant a time string or ISO date designates, counted from `now`. */
export function resolveInstant(input: string, now: Date): Date {
  if (isIsoDate(input)) return new Date(Date.parse(input));
  return new Date(now.getTime() + parseDuration(input));
}

/**
 * The Retry-After header as the SDK writes it for RetryAfterError: seconds, an HTTP or ISO date,
 * or a time string. Returns the delay in milliseconds, or undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, now: Date): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  try {
    return Math.max(0, parseDuration(v));
  } catch {
    const at = Date.parse(v);
    return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
  }
}
