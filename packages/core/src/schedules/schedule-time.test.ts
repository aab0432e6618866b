// Schedule times (SPEC.md "Schedules and triggers": presets, time, timezone; DECISIONS.md Compatibility
// amendments: 5- or 6-field cron; issue 14 "Time done right"). The expected instants are computed here
// independently of croner: an oracle scans the minutes of a local day with Intl.DateTimeFormat and picks the
// first instant whose wall clock in the zone is the wanted time (or, inside a spring-forward gap, the first
// instant after it).

import { CoreError } from "@cua/base/errors";
import { describe, expect, it } from "vitest";
import { checkCron, checkTimezone, effectiveCron, nextCronFire, nextCronFires, nextFire } from "./schedule-time.ts";

/** the wall clock of `at` in `zone`: [year, month, day, hour, minute, weekday 0-6] */
function wall(zone: string, at: Date): [number, number, number, number, number, number] {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    weekday: "short",
  }).formatToParts(at);
  const get = (t: string) => parts.find((p) => p.type === t)!.value;
  const wd = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].indexOf(get("weekday"));
  return [
    Number(get("year")),
    Number(get("month")),
    Number(get("day")),
    Number(get("hour")),
    Number(get("minute")),
    wd,
  ];
}

/** Oracle: the instant a daily local time HH:MM happens on local date y-m-d in `zone` (first occurrence;
 * inside a gap, the first instant after it), found by scanning minutes from 14 h before UTC midnight. */
function oracleLocal(zone: string, y: number, m: number, d: number, hh: number, mm: number): Date {
  const start = Date.UTC(y, m - 1, d) - 14 * 3600_000;
  const want = hh * 60 + mm;
  for (let t = start; t < start + 40 * 3600_000; t += 60_000) {
    const [wy, wm, wdd, wh, wmi] = wall(zone, new Date(t));
    if (wy === y && wm === m && wdd === d && wh * 60 + wmi >= want) return new Date(t);
  }
  throw new Error("oracle: no instant");
}

const cases: {
  name: string;
  zone: string;
  cron: string;
  after: string;
  expect: [number, number, number, number, number];
}[] = [
  // Europe/Berlin: spring forward 2026-03-29 02:00 -> 03:00; autumn 2026-10-25 03:00 -> 02:00
  {
    name: "Berlin 02:30 on the spring-forward day fires at 03:00 (first valid instant)",
    zone: "Europe/Berlin",
    cron: "30 2 * * *",
    after: "2026-03-28T12:00:00Z",
    expect: [2026, 3, 29, 2, 30],
  },
  {
    name: "Berlin 02:30 on the autumn day fires at its first occurrence",
    zone: "Europe/Berlin",
    cron: "30 2 * * *",
    after: "2026-10-24T12:00:00Z",
    expect: [2026, 10, 25, 2, 30],
  },
  {
    name: "Berlin 07:30 the day after spring forward (CEST)",
    zone: "Europe/Berlin",
    cron: "30 7 * * *",
    after: "2026-03-29T06:00:00Z",
    expect: [2026, 3, 30, 7, 30],
  },
  {
    name: "Berlin 07:30 on the autumn day (CET again)",
    zone: "Europe/Berlin",
    cron: "30 7 * * *",
    after: "2026-10-24T12:00:00Z",
    expect: [2026, 10, 25, 7, 30],
  },
  // America/New_York: spring forward 2026-03-08 02:00 -> 03:00; autumn 2026-11-01 02:00 -> 01:00
  {
    name: "New York 02:15 on the spring-forward day fires once, after the gap",
    zone: "America/New_York",
    cron: "15 2 * * *",
    after: "2026-03-07T12:00:00Z",
    expect: [2026, 3, 8, 2, 15],
  },
  {
    name: "New York 01:30 on the autumn day fires at its first occurrence (EDT)",
    zone: "America/New_York",
    cron: "30 1 * * *",
    after: "2026-10-31T12:00:00Z",
    expect: [2026, 11, 1, 1, 30],
  },
  {
    name: "New York 09:00 weekdays across the autumn change",
    zone: "America/New_York",
    cron: "0 9 * * 1-5",
    after: "2026-10-30T14:00:00Z",
    expect: [2026, 11, 2, 9, 0],
  },
  // Asia/Kolkata +05:30, no DST
  {
    name: "Kolkata 07:30",
    zone: "Asia/Kolkata",
    cron: "30 7 * * *",
    after: "2026-06-01T03:00:00Z",
    expect: [2026, 6, 2, 7, 30],
  },
  {
    name: "Kolkata monthly day 1 09:00",
    zone: "Asia/Kolkata",
    cron: "0 9 1 * *",
    after: "2026-06-01T04:00:00Z",
    expect: [2026, 7, 1, 9, 0],
  },
  // month ends: day 31 skips months without one
  {
    name: "day 31 skips April and June",
    zone: "UTC",
    cron: "0 9 31 * *",
    after: "2026-03-31T10:00:00Z",
    expect: [2026, 5, 31, 9, 0],
  },
  {
    name: "day 31 in Berlin skips September",
    zone: "Europe/Berlin",
    cron: "0 9 31 * *",
    after: "2026-08-31T08:00:00Z",
    expect: [2026, 10, 31, 9, 0],
  },
  {
    name: "day 29 of February in a leap year",
    zone: "UTC",
    cron: "0 0 29 2 *",
    after: "2026-03-01T00:00:00Z",
    expect: [2028, 2, 29, 0, 0],
  },
  // cron's OR rule: day-of-month and day-of-week both restricted -> either matches
  {
    name: "dom 13 OR Friday: the next Friday comes first",
    zone: "UTC",
    cron: "0 12 13 * 5",
    after: "2026-02-01T00:00:00Z",
    expect: [2026, 2, 6, 12, 0],
  },
  {
    name: "dom 13 OR Friday: the 13th (a Friday) fires once",
    zone: "UTC",
    cron: "0 12 13 * 5",
    after: "2026-02-12T13:00:00Z",
    expect: [2026, 2, 13, 12, 0],
  },
  {
    name: "dom 1 OR Monday: the 1st on a Sunday fires",
    zone: "UTC",
    cron: "0 9 1 * 1",
    after: "2026-01-26T10:00:00Z",
    expect: [2026, 2, 1, 9, 0],
  },
];

describe("next fire in the schedule's zone (issue 14: DST, month ends, cron OR rule)", () => {
  for (const c of cases) {
    it(c.name, () => {
      const got = nextCronFire(c.cron, c.zone, new Date(c.after));
      expect(got?.toISOString()).toBe(oracleLocal(c.zone, ...c.expect).toISOString());
    });
  }

  it("a nonexistent 02:30 fires exactly once that day, at 03:00 local (Berlin)", () => {
    const fires = nextCronFires("30 2 * * *", "Europe/Berlin", new Date("2026-03-28T12:00:00Z"), 3);
    expect(fires.map((d) => wall("Europe/Berlin", d).slice(1, 5))).toEqual([
      [3, 29, 3, 0],
      [3, 30, 2, 30],
      [3, 31, 2, 30],
    ]);
  });

  it("the repeated autumn hour fires once (New York 01:30 on 2026-11-01)", () => {
    const fires = nextCronFires("30 1 * * *", "America/New_York", new Date("2026-10-31T12:00:00Z"), 2);
    expect(fires[0]!.toISOString()).toBe("2026-11-01T05:30:00.000Z"); // 01:30 EDT (-4)
    expect(fires[1]!.toISOString()).toBe("2026-11-02T06:30:00.000Z"); // 01:30 EST (-5), next day
  });

  it("every_15_minutes across the Berlin spring gap keeps a 15-minute UTC spacing", () => {
    const fires = nextCronFires("*/15 * * * *", "Europe/Berlin", new Date("2026-03-29T00:50:00Z"), 3);
    expect(fires.map((d) => d.toISOString())).toEqual([
      "2026-03-29T01:00:00.000Z",
      "2026-03-29T01:15:00.000Z",
      "2026-03-29T01:30:00.000Z",
    ]);
  });

  it("a 6-field cron has seconds first", () => {
    expect(nextCronFire("30 0 9 * * *", "UTC", new Date("2026-06-01T10:00:00Z"))?.toISOString()).toBe(
      "2026-06-02T09:00:30.000Z",
    );
  });

  it("a one-shot fires at run_at once, then never", () => {
    const runAt = new Date("2026-06-01T10:00:00Z");
    expect(nextFire({ cron: null, timezone: "UTC", runAt }, new Date("2026-05-01T00:00:00Z"))).toEqual(runAt);
    expect(nextFire({ cron: null, timezone: "UTC", runAt, oneShotFired: true }, new Date())).toBeNull();
  });
});

describe("presets to cron (SPEC.md Schedules and triggers)", () => {
  const table: [Parameters<typeof effectiveCron>[0], string][] = [
    [{ frequency: "every_15_minutes" }, "*/15 * * * *"],
    [{ frequency: "every_30_minutes" }, "*/30 * * * *"],
    [{ frequency: "hourly" }, "0 * * * *"],
    [{ frequency: "every_6_hours" }, "0 */6 * * *"],
    [{ frequency: "every_12_hours" }, "0 */12 * * *"],
    [{ frequency: "daily" }, "0 9 * * *"],
    [{ frequency: "daily", time: "07:30" }, "30 7 * * *"],
    [{ frequency: "weekly" }, "0 9 * * 1"],
    [{ frequency: "weekly", time: "18:05", day_of_week: 5 }, "5 18 * * 5"],
    [{ frequency: "weekly", day_of_week: "sunday" }, "0 9 * * 0"],
    [{ frequency: "monthly" }, "0 9 1 * *"],
    [{ frequency: "monthly", time: "23:59", day_of_month: 31 }, "59 23 31 * *"],
    [{ frequency: "custom", cron: "0  8 * * 1-5" }, "0 8 * * 1-5"],
  ];
  for (const [input, cron] of table)
    it(`${JSON.stringify(input)} -> ${cron}`, () => expect(effectiveCron(input)).toBe(cron));

  const refused: [Parameters<typeof effectiveCron>[0], string][] = [
    [{ frequency: "custom" }, "body.cron"],
    [{ frequency: "hourly", time: "07:00" }, "body.time"],
    [{ frequency: "daily", time: "7:00" }, "body.time"],
    [{ frequency: "daily", time: "24:00" }, "body.time"],
    [{ frequency: "daily", day_of_week: 1 }, "body.day_of_week"],
    [{ frequency: "weekly", day_of_week: 9 }, "body.day_of_week"],
    [{ frequency: "monthly", day_of_month: 32 }, "body.day_of_month"],
    [{ frequency: "daily", cron: "* * * * *" }, "body.cron"],
    [{ frequency: "custom", cron: "* * * *" }, "body.cron"],
    [{ frequency: "custom", cron: "* * * * * * *" }, "body.cron"],
    [{ frequency: "custom", cron: "61 * * * *" }, "body.cron"],
  ];
  for (const [input, path] of refused)
    it(`refuses ${JSON.stringify(input)} on ${path}`, () => {
      try {
        effectiveCron(input);
        expect.unreachable();
      } catch (e) {
        expect((e as CoreError).code).toBe("VALIDATION_ERROR");
        expect((e as CoreError).extras.details).toEqual([expect.objectContaining({ path })]);
      }
    });

  it("time zones: IANA names pass, others are 422", () => {
    expect(checkTimezone("Asia/Kolkata")).toBe("Asia/Kolkata");
    expect(() => checkTimezone("Mars/Olympus")).toThrow(CoreError);
    expect(checkCron(" 0 9 * * 1 ")).toBe("0 9 * * 1");
  });
});
