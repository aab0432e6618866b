// Conditions of the workflow DSL (SPEC.md "Workflows": structured, no free-text evaluation): an object
// with `op`, evaluated by this small interpreter over plain data. Operands are JSON values whose strings
// are templates (templates.ts); nothing is ever evaluated as code.
//   eq, ne, lt, gt, lte, gte, contains: {left, right}
//   truthy, falsy, exists:              {value}
//   and, or:                            {conditions: [Condition, ...]} (at least one)
//   not:                                {condition}
import { render, type Scope } from "./templates.ts";

export const COMPARISON_OPS = ["eq", "ne", "lt", "gt", "lte", "gte", "contains"] as const;
export const VALUE_OPS = ["truthy", "falsy", "exists"] as const;
export const LIST_OPS = ["and", "or"] as const;
export const CONDITION_OPS = [...COMPARISON_OPS, ...VALUE_OPS, ...LIST_OPS, "not"] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];

export type Condition =
  | { op: (typeof COMPARISON_OPS)[number]; left: unknown; right: unknown }
  | { op: (typeof VALUE_OPS)[number]; value: unknown }
  | { op: (typeof LIST_OPS)[number]; conditions: Condition[] }
  | { op: "not"; condition: Condition };

/** Structural equality of JSON values (object key order does not matter). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]));
  }
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return (
    ka.length === kb.length &&
    ka.every((k) => Object.hasOwn(b as object, k) && deepEqual((a as never)[k], (b as never)[k]))
  );
}

/** Truthiness: false, 0, "", null, undefined, NaN, [] and {} are falsy; everything else is truthy. */
export function isTruthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v !== null && typeof v === "object") return Object.keys(v).length > 0;
  return Boolean(v);
}

/** Ordering: numbers with numbers, strings with strings (code-unit order); anything else compares false. */
function order(a: unknown, b: unknown): number | null {
  if (typeof a === "number" && typeof b === "number" && !Number.isNaN(a) && !Number.isNaN(b)) return a - b;
  if (typeof a === "string" && typeof b === "string") return a < b ? -1 : a > b ? 1 : 0;
  return null;
}

/** contains: substring of a string, element of an array (structural equality), key of an object. */
function contains(hay: unknown, needle: unknown): boolean {
  if (typeof hay === "string") return typeof needle === "string" && hay.includes(needle);
  if (Array.isArray(hay)) return hay.some((x) => deepEqual(x, needle));
  if (hay !== null && typeof hay === "object") return typeof needle === "string" && Object.hasOwn(hay, needle);
  return false;
}

/** Evaluates a (validated) condition against the run's scope. */
export function evaluate(c: Condition, scope: Scope): boolean {
  switch (c.op) {
    case "and":
      return c.conditions.every((x) => evaluate(x, scope));
    case "or":
      return c.conditions.some((x) => evaluate(x, scope));
    case "not":
      return !evaluate(c.condition, scope);
    case "truthy":
      return isTruthy(render(c.value, scope));
    case "falsy":
      return !isTruthy(render(c.value, scope));
    case "exists": {
      const v = render(c.value, scope);
      return v !== undefined && v !== null;
    }
    default: {
      const l = render(c.left, scope);
      const r = render(c.right, scope);
      switch (c.op) {
        case "eq":
          return deepEqual(l, r);
        case "ne":
          return !deepEqual(l, r);
        case "contains":
          return contains(l, r);
        default: {
          const o = order(l, r);
          if (o === null) return false;
          return c.op === "lt" ? o < 0 : c.op === "gt" ? o > 0 : c.op === "lte" ? o <= 0 : o >= 0;
        }
      }
    }
  }
}
