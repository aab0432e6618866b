import { describe, expect, test } from "vitest";
import { CronError, nextCronTime, parseCron } from "../src/scheduler/cron.ts";

const next = (cron: string, after: string) => nextCronTime(parseCron(cron), new Date(after)).toISOString();

describe("next fire time (UTC)", () => {
  test.each([
    ["* * * * *", "2026-03-01T10:00:30Z", "2026-03-01T10:01:00.000Z"],
    ["* * * * *", "2026-03-01T10:00:00Z", "2026-03-01T10:01:00.000Z"],
    ["*/15 * * * *", "2026-03-01T10:07:00Z", "2026-03-01T10:15:00.000Z"],
    ["0 * * * *", "2026-03-01T10:00:00Z", "2026-03-01T11:00:00.000Z"],
    ["30 9 * * *", "2026-03-01T09:30:00Z", "2026-03-02T09:30:00.000Z"],
    ["0 0 1 * *", "2026-01-31T12:00:00Z", "2026-02-01T00:00:00.000Z"],
    ["0 0 31 * *", "2026-04-01T00:00:00Z", "2026-05-31T00:00:00.000Z"],
    ["0 0 29 2 *", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00.000Z"],
    ["0 12 * * MON-FRI", "2026-03-06T13:00:00Z", "2026-03-09T12:00:00.000Z"], // Fri afternoon -> Mon
    ["0 12 * * 7", "2026-03-02T00:00:00Z", "2026-03-08T12:00:00.000Z"], // 7 is Sunday
    ["0 0 1 * 1", "2026-03-02T12:00:00Z", "2026-03-09T00:00:00.000Z"], // day-of-month OR weekday
    ["0 0 * JUN *", "2026-03-01T00:00:00Z", "2026-06-01T00:00:00.000Z"],
    ["5,10-12/2 0 * * *", "2026-03-01T00:06:00Z", "2026-03-01T00:10:00.000Z"],
    ["@hourly", "2026-03-01T10:59:59Z", "2026-03-01T11:00:00.000Z"],
    ["@yearly", "2026-03-01T00:00:00Z", "2027-01-01T00:00:00.000Z"],
    ["TZ=UTC 0 6 * * *", "2026-03-01T07:00:00Z", "2026-03-02T06:00:00.000Z"],
  ])("%s after %s -> %s", (cron, after, expected) => {
    expect(next(cron, after)).toBe(expected);
  });
});

describe("time zones", () => {
  test("a zone's wall clock, across daylight saving changes", () => {
    // Paris: UTC+1 in winter, UTC+2 from 2026-03-29
    expect(next("TZ=Europe/Paris 0 9 * * *", "2026-03-27T12:00:00Z")).toBe("2026-03-28T08:00:00.000Z");
    expect(next("TZ=Europe/Paris 0 9 * * *", "2026-03-28T12:00:00Z")).toBe("2026-03-29T07:00:00.000Z");
    expect(next("CRON_TZ=America/New_York 30 8 * * *", "2026-07-01T00:00:00Z")).toBe("2026-07-01T12:30:00.000Z");
  });

  test("a wall time skipped by DST is skipped; a repeated one fires once", () => {
    // 02:30 does not exist in Paris on 2026-03-29
    expect(next("TZ=Europe/Paris 30 2 * * *", "2026-03-28T12:00:00Z")).toBe("2026-03-30T00:30:00.000Z");
    // 02:30 happens twice on 2026-10-25: the first one (UTC+2) fires, then the next day
    const first = next("TZ=Europe/Paris 30 2 * * *", "2026-10-24T12:00:00Z");
    expect(first).toBe("2026-10-25T00:30:00.000Z");
    expect(next("TZ=Europe/Paris 30 2 * * *", first)).toBe("2026-10-26T01:30:00.000Z");
  });
});

describe("refused", () => {
  test.each([
    "* * * *",
    "* * * * * *",
    "60 * * * *",
    "* 24 * * *",
    "* * 0 * *",
    "* * * 13 *",
    "* * * * 8",
    "*/0 * * * *",
    "5-1 * * * *",
    "a * * * *",
    "0 0 30 2 *",
    "@reboot",
    "TZ=Mars/Olympus 0 0 * * *",
  ])("%s", (cron) => {
    expect(() => parseCron(cron)).toThrow(CronError);
  });
});
