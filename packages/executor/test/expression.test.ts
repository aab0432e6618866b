import { describe, expect, test } from "vitest";
import { compileExpression, ExpressionError, expressionMatches } from "../src/events/expression.ts";

const event = {
  name: "order/created",
  data: { id: "o-1", amount: 120, tags: ["a", "b"], user: { tier: "pro" }, nil: null, flag: true },
};
const async = { name: "order/paid", data: { id: "o-1", amount: 120.0, other: "x", user: { tier: "pro" } } };
const vars = { event, async };

describe("matches", () => {
  test.each([
    ["event.data.id == async.data.id", true],
    ["event.data.id != async.data.id", false],
    ["event.data.amount == async.data.amount", true],
    ["event.data.amount > 100", true],
    ["event.data.amount >= 120 && event.data.amount <= 120", true],
    ["event.data.amount < 100 || async.data.other == 'x'", true],
    ['event.data.amount < 100 || async.data.other == "y"', false],
    ["!(event.data.amount < 100)", true],
    ["event.data.flag", true],
    ["!event.data.flag", false],
    ["event.data.nil == null", true],
    ["event.data.tags[1] == 'b'", true],
    ['event.data["id"] == "o-1"', true],
    ["event.data.user == async.data.user", true],
    ["event.name == 'order/created' && async.name == 'order/paid'", true],
    ["event.data.amount > -5", true],
    ["'a' < 'b'", true],
    ["(event.data.amount > 1000 || event.data.amount > 100) && true", true],
    ["event.data.id == 'o-1' && async.data.id == 'o-2'", false],
    ["1 == 1.0", true],
    ["'x\\'y' == \"x'y\"", true],
  ])("%s -> %s", (src, expected) => {
    expect(expressionMatches(src, vars)).toBe(expected);
  });

  test("absent or blank expressions match everything", () => {
    expect(expressionMatches(undefined, vars)).toBe(true);
    expect(expressionMatches(null, vars)).toBe(true);
    expect(expressionMatches("  ", vars)).toBe(true);
  });
});

describe("CEL error semantics: an error never matches", () => {
  test.each([
    // a missing field is an error, not undefined == undefined
    ["event.data.missing == async.data.missing", false],
    ["event.data.missing != 1", false],
    ["event.data.tags[5] == 'a'", false],
    ["unknownVar == 1", false],
    // ordering across types is an error
    ["event.data.id < 5", false],
    ["event.data.amount", false], // non-boolean result
    // error absorbed by && / || like CEL
    ["false && event.data.missing == 1", false],
    ["event.data.missing == 1 && false", false],
    ["true || event.data.missing == 1", true],
    ["event.data.missing == 1 || true", true],
    ["event.data.missing == 1 || false", false],
  ])("%s -> %s", (src, expected) => {
    expect(expressionMatches(src, vars)).toBe(expected);
  });
});

describe("unsupported syntax is refused at compile time", () => {
  test.each([
    "size(event.data.tags) > 1",
    "event.data.name.startsWith('a')",
    "'a' in event.data.tags",
    "event.data.amount + 1 > 2",
    "event.data.amount > 1 ? true : false",
    "event.data.",
    "event.data.id ==",
    "(event.data.id == 'x'",
    "1 < 2 < 3",
    "'unterminated",
    "event.data.id = 'x'",
  ])("%s", (src) => {
    expect(() => compileExpression(src)).toThrow(ExpressionError);
  });
});
