// The create form's preview of a schedule's next fires, computed in the browser by the server's own rules:
// core's pure schedule-time functions (croner, the presets, `time`/`day_of_*` overrides, DST, cron's
// day-of-month OR day-of-week rule; docs/schedules.md "When a schedule fires"). No request is made.
import { checkTimezone, effectiveCron, type Frequency, nextCronFires } from "@cua/core/schedules/schedule-time";

export interface PreviewInput {
  frequency: Frequency | "one_shot";
  cron: string;
  time: string;
  timezone: string;
  day_of_week: string;
  day_of_month: string;
  run_at: string;
}

export type Preview = { ok: true; cron: string | null; fires: Date[] } | { ok: false; problem: string };

/** A core validation error's own words ("body.time: must be HH:MM ..." -> "time: must be HH:MM ..."). */
function problemOf(e: unknown): string {
  const details = (e as { extras?: { details?: { path: string; message: string }[] } }).extras?.details;
  const d = details?.[0];
  if (d) return `${d.path.replace(/^body\./, "")}: ${d.message}`;
  return e instanceof Error ? e.message : String(e);
}

export function previewFires(p: PreviewInput, now = new Date(), n = 5): Preview {
  try {
    checkTimezone(p.timezone || "UTC");
    if (p.frequency === "one_shot") {
      const at = runAtInstant(p.run_at, p.timezone || "UTC");
      if (!at) return { ok: false, problem: "run_at: pick a date and time." };
      if (at.getTime() < now.getTime() - 60_000) return { ok: false, problem: "run_at: must be in the future." };
      return { ok: true, cron: null, fires: [at] };
    }
    const cron = effectiveCron(timingOf(p));
    return { ok: true, cron, fires: nextCronFires(cron, p.timezone || "UTC", now, n) };
  } catch (e) {
    return { ok: false, problem: problemOf(e) };
  }
}

/** The timing fields the frequency takes (others would be 422), as the create request sends them. */
export function timingOf(p: PreviewInput): {
  frequency?: Frequency;
  cron?: string;
  time?: string;
  day_of_week?: number;
  day_of_month?: number;
  run_at?: string;
} {
  const f = p.frequency;
  if (f === "one_shot") return { run_at: runAtInstant(p.run_at, p.timezone || "UTC")?.toISOString() ?? p.run_at };
  return {
    frequency: f,
    ...(f === "custom" ? { cron: p.cron } : {}),
    ...(f === "daily" || f === "weekly" || f === "monthly" ? { time: p.time } : {}),
    ...(f === "weekly" ? { day_of_week: Number(p.day_of_week) } : {}),
    ...(f === "monthly" ? { day_of_month: Number(p.day_of_month) } : {}),
  };
}

/**
 * A `datetime-local` value ("2026-12-01T07:30") read as a wall-clock time in `timezone`, as an instant.
 * The offset is found by formatting a guess in the zone and correcting by the difference (twice, for DST).
 */
export function runAtInstant(local: string, timezone: string): Date | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(local);
  if (!m) return null;
  const wall = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!);
  let t = wall;
  for (let i = 0; i < 2; i++) t = wall - (zoneWall(new Date(t), timezone) - t);
  return new Date(t);
}

/** The wall-clock reading of `d` in `timezone`, as if it were UTC (ms). */
function zoneWall(d: Date, timezone: string): number {
  const parts: Record<string, string> = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    })
      .formatToParts(d)
      .map((x) => [x.type, x.value]),
  );
  const n = (k: string) => Number(parts[k] ?? 0);
  return Date.UTC(n("year"), n("month") - 1, n("day"), n("hour"), n("minute"), n("second"));
}

/** An instant as the wall clock of `timezone` reads it, with the zone's abbreviation. */
export function inZone(d: Date | string, timezone: string): string {
  return new Date(d).toLocaleString("en-US", {
    timeZone: timezone,
    weekday: "short",
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  });
}

/** The viewer's own IANA zone (the browser's). */
export const viewerZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

/** An instant as a `datetime-local` value ("2026-12-01T07:30") on the wall clock of `timezone`. */
export function localInZone(d: Date | string, timezone: string): string {
  return new Date(zoneWall(new Date(d), timezone)).toISOString().slice(0, 16);
}

/** A stored schedule's timing as the form's fields (the edit form starts from it). */
export function previewInputOf(s: {
  frequency: string | null;
  cron: string | null;
  time: string | null;
  timezone: string;
  day_of_week: number | null;
  day_of_month: number | null;
  run_at: string | null;
}): PreviewInput {
  return {
    frequency: s.run_at ? "one_shot" : ((s.frequency ?? "custom") as Frequency),
    cron: s.frequency === "custom" || (!s.frequency && !s.run_at) ? (s.cron ?? "") : "",
    time: s.time ?? "09:00",
    timezone: s.timezone,
    day_of_week: String((s.day_of_week ?? 1) % 7),
    day_of_month: String(s.day_of_month ?? 1),
    run_at: s.run_at ? localInZone(s.run_at, s.timezone) : "",
  };
}
