import { describe, expect, test } from "vitest";
import { canonicalJson, signBody } from "../src/protocol/signing.ts";
import { DurationError, isIsoDate, parseDuration, parseRetryAfter, resolveInstant } from "../src/scheduler/duration.ts";

describe("time strings (SDK_SPEC 1.3.2)", () => {
  test.each([
    ["", 0],
    ["1s", 1000],
    ["500ms", 500],
    ["1m30s", 90_000],
    ["2h45m", 9_900_000],
    ["1d", 86_400_000],
    ["1w", 604_800_000],
    ["1.5h", 5_400_000],
    ["1w2d3h4m5s", 604_800_000 + 2 * 86_400_000 + 3 * 3_600_000 + 4 * 60_000 + 5000],
    ["1000us", 1],
    ["1000µs", 1],
    ["1000000ns", 1],
  ])("%s = %d ms", (s, ms) => {
    expect(parseDuration(s)).toBe(ms);
  });

  test.each(["1", "s", "1x", "1s 2m", "-1s", "1s!", "P1D"])("%s is refused", (s) => {
    expect(() => parseDuration(s)).toThrow(DurationError);
  });

  test("sleepUntil dates and durations resolve to instants", () => {
    const now = new Date("2026-01-01T00:00:00.000Z");
    expect(isIsoDate("2026-01-02T03:04:05.000Z")).toBe(true);
    expect(isIsoDate("1s")).toBe(false);
    expect(resolveInstant("2026-01-02T03:04:05.000Z", now).toISOString()).toBe("2026-01-02T03:04:05.000Z");
    expect(resolveInstant("1m", now).toISOString()).toBe("2026-01-01T00:01:00.000Z");
  });

  test("Retry-After as the SDK writes it: seconds or an ISO date", () => {
    const now = new Date("2026-01-01T00:00:00.000Z");
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter("2026-01-01T00:00:05.000Z", now)).toBe(5000);
    expect(parseRetryAfter("10s", now)).toBe(10_000);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter("soon", now)).toBeUndefined();
  });
});

describe("RFC 8785 canonical JSON and signatures", () => {
  test.each([
    [{ b: 1, a: 2 }, '{"a":2,"b":1}'],
    [{ z: [3, { y: true, x: null }], a: "é\n" }, '{"a":"é\\n","z":[3,{"x":null,"y":true}]}'],
    [{ u: undefined, n: 1.5e21, s: 1e-7 }, '{"n":1.5e+21,"s":1e-7}'],
    [[undefined], "[null]"],
    [{ "\u00e9": 1, e: 2, E: 3 }, '{"E":3,"e":2,"é":1}'],
  ])("%j", (value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });

  test("the signature covers body and timestamp, keyed without the signkey prefix", () => {
    const a = signBody("{}", "signkey-prod-abc", 100);
    expect(a).toMatch(/^t=100&s=[0-9a-f]{64}$/);
    expect(signBody("{}", "abc", 100)).toBe(a);
    expect(signBody("{}", "signkey-prod-abc", 101)).not.toBe(a);
    expect(signBody('{"a":1}', "signkey-prod-abc", 100)).not.toBe(a);
  });
});
