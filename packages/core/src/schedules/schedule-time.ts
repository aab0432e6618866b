// When a schedule fires (SPEC.md "Schedules and triggers"; DECISIONS.md "Schedules and triggers" and its
// Compatibility amendment: 5- or 6-field cron). Everything is evaluated in the schedule's IANA `timezone`
// (default UTC) by croner, a maintained cron library with time-zone support:
// - frequency presets map to SPEC's cron equivalents; `time` (HH:MM) overrides daily/weekly/monthly,
//   `day_of_week` weekly, `day_of_month` monthly; `custom` requires `cron` (5 fields, or 6 with seconds first).
// - DST: a local time that does not exist on the spring-forward day (02:30 in Europe/Berlin) fires once, at
//   the first valid instant after the gap (03:00 local); a local time repeated on the autumn day fires once,
//   at its first occurrence (docs/schedules.md "Time zones and DST").
// - day 31 fires only in months that have one; a cron naming both day-of-month and day-of-week fires when
//   either matches (cron's OR rule, croner's legacy mode).
// - a one-shot `run_at` fires once at that instant.

import { validationError } from "@cua/base/errors";
import { Cron } from "croner";

export const FREQUENCIES = [
  "every_15_minutes",
  "every_30_minutes",
  "hourly",
  "every_6_hours",
  "every_12_hours",
  "daily",
  "weekly",
  "monthly",
  "custom",
] as const;
export type Frequency = (typeof FREQUENCIES)[number];

/** SPEC's cron equivalents of the presets (before `time`, `day_of_week`, `day_of_month` overrides). */
export const PRESET_CRON: Record<Exclude<Frequency, "custom">, string> = {
  every_15_minutes: "*/15 * * * *",
  every_30_minutes: "*/30 * * * *",
  hourly: "0 * * * *",
  every_6_hours: "0 */6 * * *",
  every_12_hours: "0 */12 * * *",
  daily: "0 9 * * *",
  weekly: "0 9 * * 1",
  monthly: "0 9 1 * *",
};

const DAY_NAMES = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

export interface TimingInput {
  frequency?: Frequency | null;
  cron?: string | null;
  time?: string | null;
  /** 0 (Sunday) to 6, or a day name */
  day_of_week?: number | string | null;
  day_of_month?: number | null;
}

/** An IANA zone name Intl knows ("UTC", "Europe/Berlin"); else 422 on `body.timezone`. */
export function checkTimezone(tz: string, path = "body.timezone"): string {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return tz;
  } catch {
    return zoneError(tz, path);
  }
}

function zoneError(tz: string, path: string): never {
  throw validationError(path, `"${tz.slice(0, 60)}" is not an IANA time zone name (e.g. "Europe/Berlin", "UTC").`);
}

/** A day of week as cron's number 0-6 (0 = Sunday), from 0-6, 7 (Sunday) or a day name. */
export function dayOfWeekNumber(v: number | string, path = "body.day_of_week"): number {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 7) return v % 7;
  if (typeof v === "string") {
    const i = DAY_NAMES.findIndex((d) => d === v.toLowerCase() || d.slice(0, 3) === v.toLowerCase());
    if (i >= 0) return i;
  }
  throw validationError(path, "must be 0 (Sunday) to 6 (Saturday) or a day name such as monday.");
}

function parseTime(t: string, path = "body.time"): { h: number; m: number } {
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(t);
  if (!m) throw validationError(path, "must be HH:MM (00:00 to 23:59).");
  return { h: Number(m[1]), m: Number(m[2]) };
}

/** Checks a cron expression: 5 fields, or 6 with seconds first, as croner (cron's rules) reads them. */
export function checkCron(expr: string, path = "body.cron"): string {
  const trimmed = expr.trim().replace(/\s+/g, " ");
  const fields = trimmed.split(" ").length;
  if (trimmed === "" || (fields !== 5 && fields !== 6))
    throw validationError(path, "a cron expression has 5 fields (minute hour day month weekday) or 6 (seconds first).");
  try {
    new Cron(trimmed, { paused: true, timezone: "UTC" });
  } catch (e) {
    throw validationError(path, `not a valid cron expression: ${(e as Error).message}`);
  }
  return trimmed;
}

/**
 * The effective cron expression of a recurring schedule. Presets take SPEC's equivalents; `time`,
 * `day_of_week`, `day_of_month` override the fields SPEC names and are refused (422) with presets that
 * have no such field; `custom` requires `cron`, and `cron` requires `custom` (or no frequency).
 */
export function effectiveCron(t: TimingInput): string {
  const f = t.frequency ?? (t.cron ? "custom" : null);
  if (f === null) throw validationError("body.frequency", "either frequency or run_at is required.");
  const misplaced = (field: string, allowed: string) =>
    validationError(`body.${field}`, `applies only to frequency ${allowed}.`);
  if (f === "custom") {
    if (!t.cron) throw validationError("body.cron", "frequency custom requires cron.");
    for (const k of ["time", "day_of_week", "day_of_month"] as const)
      if (t[k] !== undefined && t[k] !== null) throw misplaced(k, "daily, weekly or monthly");
    return checkCron(t.cron);
  }
  if (t.cron) throw validationError("body.cron", "cron applies only to frequency custom.");
  const timed = f === "daily" || f === "weekly" || f === "monthly";
  if (!timed && t.time != null) throw misplaced("time", "daily, weekly or monthly");
  if (f !== "weekly" && t.day_of_week != null) throw misplaced("day_of_week", "weekly");
  if (f !== "monthly" && t.day_of_month != null) throw misplaced("day_of_month", "monthly");
  if (!timed) return PRESET_CRON[f];
  const { h, m } = t.time != null ? parseTime(t.time) : { h: 9, m: 0 };
  if (f === "daily") return `${m} ${h} * * *`;
  if (f === "weekly") return `${m} ${h} * * ${t.day_of_week != null ? dayOfWeekNumber(t.day_of_week) : 1}`;
  const dom = t.day_of_month ?? 1;
  if (!Number.isInteger(dom) || dom < 1 || dom > 31) throw validationError("body.day_of_month", "must be 1 to 31.");
  return `${m} ${h} ${dom} * *`;
}

/** The first fire strictly after `after` of `cron` evaluated in `timezone`; null when it never fires again. */
export function nextCronFire(cron: string, timezone: string, after: Date): Date | null {
  const job = new Cron(cron, { paused: true, timezone, legacyMode: true });
  return job.nextRun(after);
}

/** The next `n` fires after `after` (the console's preview). */
export function nextCronFires(cron: string, timezone: string, after: Date, n: number): Date[] {
  return new Cron(cron, { paused: true, timezone, legacyMode: true }).nextRuns(n, after);
}

/** A schedule's next fire: its cron's next instant, or the one-shot run_at until it has fired. */
export function nextFire(
  s: { cron: string | null; timezone: string; runAt: Date | null; oneShotFired?: boolean },
  after: Date,
): Date | null {
  if (s.runAt) return s.oneShotFired ? null : s.runAt;
  return s.cron ? nextCronFire(s.cron, s.timezone, after) : null;
}

/** run_at: an ISO 8601 time in the future (up to 60 s in the past tolerated, SPEC "Schedules and triggers"). */
export function checkRunAt(raw: string, now: Date, path = "body.run_at"): Date {
  const ms = Date.parse(raw);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(ms))
    throw validationError(path, "must be an ISO 8601 time such as 2026-12-01T07:30:00Z.");
  if (ms < now.getTime() - 60_000) throw validationError(path, "must be in the future (60 seconds of slack).");
  return new Date(ms);
}
