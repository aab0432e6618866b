// Cron triggers as Inngest accepts them: five fields (minute hour day-of-month month day-of-week)
// with *, ?, lists, ranges, steps and JAN-DEC / SUN-SAT names, the @yearly/@monthly/@weekly/@daily/
// @hourly macros, and an optional "TZ=<IANA zone> " (or CRON_TZ=) prefix; UTC by default.
// Day-of-month and day-of-week follow classic cron: when both are restricted, either may match.

export class CronError extends Error {
  override name = "CronError";
}

export interface CronSpec {
  source: string;
  timeZone: string;
  minutes: Set<number>;
  hours: Set<number>;
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  daysRestricted: boolean;
  weekdaysRestricted: boolean;
}

const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};
const MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

function parseField(
  text: string,
  min: number,
  max: number,
  names: string[] | null,
  nameBase: number,
  what: string,
): Set<number> {
  const out = new Set<number>();
  const value = (v: string): number => {
    const upper = v.toUpperCase();
    if (names) {
      const i = names.indexOf(upper);
      if (i >= 0) return i + nameBase;
    }
    if (!/^\d+$/.test(v)) throw new CronError(`invalid ${what} "${v}"`);
    const n = Number(v);
    if (n < min || n > max) throw new CronError(`${what} ${n} is out of range ${min}-${max}`);
    return n;
  };
  for (const part of text.split(",")) {
    const [rangeText, stepText, extra] = part.split("/");
    if (extra !== undefined || rangeText === undefined || rangeText === "")
      throw new CronError(`invalid ${what} "${part}"`);
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new CronError(`invalid step in ${what} "${part}"`);
    let lo: number;
    let hi: number;
    if (rangeText === "*" || rangeText === "?") {
      lo = min;
      hi = max;
    } else if (rangeText.includes("-")) {
      const [a, b, more] = rangeText.split("-");
      if (more !== undefined || !a || !b) throw new CronError(`invalid range in ${what} "${part}"`);
      lo = value(a);
      hi = value(b);
      if (lo > hi) throw new CronError(`empty range in ${what} "${part}"`);
    } else {
      lo = value(rangeText);
      hi = stepText === undefined ? lo : max;
    }
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

export function parseCron(source: string): CronSpec {
  let text = source.trim();
  let timeZone = "UTC";
  const tz = /^(?:CRON_TZ|TZ)=(\S+)\s+(.*)$/.exec(text);
  if (tz) {
    timeZone = tz[1] as string;
    text = (tz[2] as string).trim();
    try {
      new Intl.DateTimeFormat("en-US", { timeZone });
    } catch {
      throw new CronError(`unknown time zone "${timeZone}" in cron "${source}"`);
    }
  }
  const macro = MACROS[text.toLowerCase()];
  if (macro) text = macro;
  if (text.startsWith("@")) throw new CronError(`unsupported cron macro "${text}"`);
  const fields = text.split(/\s+/);
  if (fields.length !== 5) throw new CronError(`cron "${source}" needs 5 fields (minute hour day month weekday)`);
  const [mi, h, d, mo, dw] = fields as [string, string, string, string, string];
  const weekdays = parseField(dw, 0, 7, DAYS, 0, "weekday");
  if (weekdays.has(7)) {
    weekdays.delete(7);
    weekdays.add(0);
  }
  const spec: CronSpec = {
    source,
    timeZone,
    minutes: parseField(mi, 0, 59, null, 0, "minute"),
    hours: parseField(h, 0, 23, null, 0, "hour"),
    days: parseField(d, 1, 31, null, 0, "day of month"),
    months: parseField(mo, 1, 12, MONTHS, 1, "month"),
    weekdays,
    daysRestricted: d !== "*" && d !== "?",
    weekdaysRestricted: dw !== "*" && dw !== "?",
  };
  // a spec that can never fire (e.g. February 30th) is an error, not a silent no-op
  nextCronTime(spec, new Date(Date.UTC(2000, 0, 1)));
  return spec;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock time in `timeZone` at `instant`, as a UTC-based millisecond count (minute precision). */
function wallClock(instant: number, timeZone: string): number {
  if (timeZone === "UTC") return Math.floor(instant / 60_000) * 60_000;
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
    });
    formatters.set(timeZone, f);
  }
  const p: Record<string, number> = {};
  for (const part of f.formatToParts(new Date(instant))) if (part.type !== "literal") p[part.type] = Number(part.value);
  return Date.UTC(p.year as number, (p.month as number) - 1, p.day as number, p.hour as number, p.minute as number);
}

/** The instant whose wall clock in `timeZone` reads `wall`; null when DST skips that time. */
function instantOf(wall: number, timeZone: string): number | null {
  if (timeZone === "UTC") return wall;
  let guess = wall;
  for (let i = 0; i < 3; i++) guess = wall - (wallClock(guess, timeZone) - guess);
  // prefer the earlier of two instants with the same wall time (DST fall-back)
  const earlier = guess - 3_600_000;
  if (wallClock(earlier, timeZone) === wall) return earlier;
  return wallClock(guess, timeZone) === wall ? guess : null;
}

function dayMatches(spec: CronSpec, t: Date): boolean {
  const dom = spec.days.has(t.getUTCDate());
  const dow = spec.weekdays.has(t.getUTCDay());
  if (spec.daysRestricted && spec.weekdaysRestricted) return dom || dow;
  if (spec.daysRestricted) return dom;
  if (spec.weekdaysRestricted) return dow;
  return true;
}

/** The next wall-clock minute strictly after `wall` that matches (both as UTC-based ms). */
function nextWall(spec: CronSpec, wall: number): number {
  const t = new Date(Math.floor(wall / 60_000) * 60_000 + 60_000);
  const limit = wall + 8 * 366 * 86_400_000;
  while (t.getTime() <= limit) {
    if (!spec.months.has(t.getUTCMonth() + 1)) {
      t.setUTCMonth(t.getUTCMonth() + 1, 1);
      t.setUTCHours(0, 0, 0, 0);
      continue;
    }
    if (!dayMatches(spec, t)) {
      t.setUTCDate(t.getUTCDate() + 1);
      t.setUTCHours(0, 0, 0, 0);
      continue;
    }
    if (!spec.hours.has(t.getUTCHours())) {
      t.setUTCHours(t.getUTCHours() + 1, 0, 0, 0);
      continue;
    }
    if (!spec.minutes.has(t.getUTCMinutes())) {
      t.setUTCMinutes(t.getUTCMinutes() + 1, 0, 0);
      continue;
    }
    return t.getTime();
  }
  throw new CronError(`cron "${spec.source}" never fires`);
}

/** The first time strictly after `after` at which the cron fires. */
export function nextCronTime(spec: CronSpec, after: Date): Date {
  let wall = wallClock(after.getTime(), spec.timeZone);
  for (let i = 0; i < 1000; i++) {
    wall = nextWall(spec, wall);
    const at = instantOf(wall, spec.timeZone);
    if (at !== null && at > after.getTime()) return new Date(at);
  }
  throw new CronError(`cron "${spec.source}" never fires`);
}
