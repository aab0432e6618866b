// The schedule execution meter (SPEC.md "Schedules and triggers": 10 credits per minute, 20-credit start
// minimum, 6-hour cap; the values GET /v1/models serves under pricing.schedules).
import { describe, expect, it } from "vitest";
import { SCHEDULE_PRICING } from "../pricing/pricing.ts";
import { meterCredits } from "./fire.ts";

describe("meterCredits", () => {
  const table: [number, number][] = [
    [0, 20], // the start minimum
    [59, 20],
    [120, 20], // 2 started minutes = 20
    [121, 30],
    [600, 100],
    [6 * 3600, 3600],
    [9 * 3600, 3600], // the 6-hour cap
  ];
  for (const [seconds, credits] of table)
    it(`${seconds} s -> ${credits} credits`, () => expect(meterCredits(seconds)).toBe(credits));
  it("reads the published pricing", () => {
    expect(SCHEDULE_PRICING).toMatchObject({ credits_per_minute: 10, start_minimum_credits: 20, cap_hours: 6 });
  });
});
