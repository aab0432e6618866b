// biome-ignore-all lint/suspicious/noThenProperty: `then` is the DSL's field of an if step
// The workflow DSL 2026-06-01 as pure logic: the validator (SPEC.md "Workflows"; DECISIONS.md "Workflows",
// "Tiers and numeric limits": workflow limits, "Precise answers": workflows), the condition interpreter and
// templating. Table-driven: each row is a definition and the paths its problems must carry.
import { describe, expect, it } from "vitest";
import { type Condition, evaluate } from "./conditions.ts";
import { validateDefinition } from "./definition.ts";
import { render, type Scope } from "./templates.ts";

const task = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: "task", task: "do it", ...extra });
const ok = { op: "truthy", value: true };
const nest = (depth: number): Record<string, unknown> =>
  depth === 1 ? task("leaf") : { id: `l${depth}`, type: "retry", max_attempts: 1, body: [nest(depth - 1)] };

const paths = (def: unknown) => validateDefinition(def, "body.definition").map((p) => p.path);

describe("validateDefinition: valid definitions", () => {
  it.each([
    [
      "every step type",
      {
        steps: [
          task("t1", { save_as: "first", machine_id: "{{inputs.machine}}", cua_version: "v4", max_steps: 3 }),
          { id: "a1", type: "assert", condition: { op: "eq", left: "{{t1.passed}}", right: true }, message: "x" },
          {
            id: "i1",
            type: "if",
            condition: { op: "gt", left: "{{vars.first.result.total}}", right: 10 },
            then: [{ id: "h1", type: "human_approval", message: "ok? {{first.result}}", timeout_seconds: 60 }],
            else: [{ id: "f1", type: "fail", message: "no" }],
          },
          { id: "lp", type: "loop", count: 3, body: [task("t2")] },
          {
            id: "lw",
            type: "loop",
            while: { op: "lt", left: "{{t2.steps}}", right: 5 },
            max_iterations: 4,
            body: [task("t3")],
          },
          {
            id: "p1",
            type: "parallel",
            branches: [[task("b1")], [{ id: "r1", type: "retry", max_attempts: 3, body: [task("b2")] }]],
          },
          {
            id: "a2",
            type: "assert",
            condition: {
              op: "and",
              conditions: [
                { op: "exists", value: "{{b1.run_id}}" },
                { op: "not", condition: { op: "falsy", value: "{{b2.passed}}" } },
              ],
            },
          },
          { id: "s1", type: "succeed", output: { total: "{{t1.result}}", text: "done {{inputs.x}}" } },
        ],
        output: { last: "{{b2.result}}" },
      },
    ],
    ["a loop count from a template", { steps: [{ id: "l", type: "loop", count: "{{inputs.n}}", body: [task("t")] }] }],
    ["exactly 200 steps", { steps: Array.from({ length: 200 }, (_, i) => task(`s${i}`)) }],
    ["exactly 8 levels", { steps: [nest(8)] }],
    [
      "exactly 16 branches",
      { steps: [{ id: "p", type: "parallel", branches: Array.from({ length: 16 }, (_, i) => [task(`b${i}`)]) }] },
    ],
  ])("%s", (_name, def) => {
    expect(validateDefinition(def, "body.definition")).toEqual([]);
  });
});

describe("validateDefinition: every rule reports its path", () => {
  it.each([
    ["not an object", [], ["body.definition"]],
    ["no steps", {}, ["body.definition.steps"]],
    ["empty steps", { steps: [] }, ["body.definition.steps"]],
    ["unknown definition field", { steps: [task("a")], extra: 1 }, ["body.definition.extra"]],
    [
      "201 steps (containers count)",
      {
        steps: [
          { id: "r", type: "retry", max_attempts: 1, body: Array.from({ length: 200 }, (_, i) => task(`s${i}`)) },
        ],
      },
      ["body.definition.steps.0.body.199"],
    ],
    ["9 levels", { steps: [nest(9)] }, [`body.definition.steps.0${".body.0".repeat(8)}`]],
    [
      "17 branches",
      { steps: [{ id: "p", type: "parallel", branches: Array.from({ length: 17 }, (_, i) => [task(`b${i}`)]) }] },
      ["body.definition.steps.0.branches"],
    ],
    ["empty branches", { steps: [{ id: "p", type: "parallel", branches: [] }] }, ["body.definition.steps.0.branches"]],
    [
      "human_approval in a branch",
      { steps: [{ id: "p", type: "parallel", branches: [[{ id: "h", type: "human_approval" }]] }] },
      ["body.definition.steps.0.branches.0.0.type"],
    ],
    [
      "succeed deep in a branch",
      {
        steps: [
          {
            id: "p",
            type: "parallel",
            branches: [
              [
                {
                  id: "i",
                  type: "if",
                  condition: ok,
                  then: [{ id: "l", type: "loop", count: 1, body: [{ id: "s", type: "succeed" }] }],
                },
              ],
            ],
          },
        ],
      },
      ["body.definition.steps.0.branches.0.0.then.0.body.0.type"],
    ],
    [
      "fail in a nested parallel",
      {
        steps: [
          {
            id: "p",
            type: "parallel",
            branches: [[{ id: "q", type: "parallel", branches: [[{ id: "f", type: "fail" }]] }]],
          },
        ],
      },
      ["body.definition.steps.0.branches.0.0.branches.0.0.type"],
    ],
    [
      "duplicate id",
      { steps: [task("a"), { id: "i", type: "if", condition: ok, then: [task("a")] }] },
      ["body.definition.steps.1.then.0.id"],
    ],
    ["malformed id", { steps: [task("a b")] }, ["body.definition.steps.0.id"]],
    ["id too long", { steps: [task("x".repeat(65))] }, ["body.definition.steps.0.id"]],
    ["missing id", { steps: [{ type: "task", task: "x" }] }, ["body.definition.steps.0.id"]],
    ["unknown type", { steps: [{ id: "a", type: "shell" }] }, ["body.definition.steps.0.type"]],
    ["unknown step field", { steps: [task("a", { script: "x" })] }, ["body.definition.steps.0.script"]],
    ["task without task", { steps: [{ id: "a", type: "task" }] }, ["body.definition.steps.0.task"]],
    ["task bad cua_version", { steps: [task("a", { cua_version: "v9" })] }, ["body.definition.steps.0.cua_version"]],
    ["task bad max_steps", { steps: [task("a", { max_steps: 0 })] }, ["body.definition.steps.0.max_steps"]],
    [
      "task bad on_awaiting_human",
      { steps: [task("a", { on_awaiting_human: "wait" })] },
      ["body.definition.steps.0.on_awaiting_human"],
    ],
    ["save_as inputs", { steps: [task("a", { save_as: "inputs" })] }, ["body.definition.steps.0.save_as"]],
    ["save_as vars", { steps: [task("a", { save_as: "vars" })] }, ["body.definition.steps.0.save_as"]],
    [
      "save_as clashes with a step id",
      { steps: [task("a"), task("b", { save_as: "a" })] },
      ["body.definition.steps.1.save_as"],
    ],
    [
      "unknown op",
      { steps: [{ id: "a", type: "assert", condition: { op: "matches", left: 1, right: 1 } }] },
      ["body.definition.steps.0.condition.op"],
    ],
    [
      "comparison without right",
      { steps: [{ id: "a", type: "assert", condition: { op: "eq", left: 1 } }] },
      ["body.definition.steps.0.condition.right"],
    ],
    [
      "truthy with left",
      { steps: [{ id: "a", type: "assert", condition: { op: "truthy", value: 1, left: 1 } }] },
      ["body.definition.steps.0.condition.left"],
    ],
    [
      "and with no conditions",
      { steps: [{ id: "a", type: "assert", condition: { op: "and", conditions: [] } }] },
      ["body.definition.steps.0.condition.conditions"],
    ],
    [
      "unknown op nested in or/not",
      {
        steps: [
          {
            id: "a",
            type: "assert",
            condition: { op: "or", conditions: [ok, { op: "not", condition: { op: "eval", value: "1" } }] },
          },
        ],
      },
      ["body.definition.steps.0.condition.conditions.1.condition.op"],
    ],
    [
      "condition as a string",
      { steps: [{ id: "a", type: "assert", condition: "{{x}} > 1" }] },
      ["body.definition.steps.0.condition"],
    ],
    ["if without then", { steps: [{ id: "i", type: "if", condition: ok }] }, ["body.definition.steps.0.then"]],
    [
      "loop with count and while",
      { steps: [{ id: "l", type: "loop", count: 1, while: ok, body: [] }] },
      ["body.definition.steps.0"],
    ],
    ["loop with neither", { steps: [{ id: "l", type: "loop", body: [] }] }, ["body.definition.steps.0"]],
    [
      "loop bad max_iterations",
      { steps: [{ id: "l", type: "loop", count: 1, max_iterations: 0, body: [] }] },
      ["body.definition.steps.0.max_iterations"],
    ],
    [
      "retry max_attempts 21",
      { steps: [{ id: "r", type: "retry", max_attempts: 21, body: [] }] },
      ["body.definition.steps.0.max_attempts"],
    ],
    [
      "retry without max_attempts",
      { steps: [{ id: "r", type: "retry", body: [] }] },
      ["body.definition.steps.0.max_attempts"],
    ],
    [
      "approval timeout 0",
      { steps: [{ id: "h", type: "human_approval", timeout_seconds: 0 }] },
      ["body.definition.steps.0.timeout_seconds"],
    ],
    [
      "reference to a later step",
      { steps: [task("a", { task: "use {{b.result}}" }), task("b")] },
      ["body.definition.steps.0.task"],
    ],
    [
      "reference to its own container",
      { steps: [{ id: "l", type: "loop", count: 2, body: [task("a", { task: "{{l.iterations}}" })] }] },
      ["body.definition.steps.0.body.0.task"],
    ],
    [
      "reference to a sibling branch",
      { steps: [{ id: "p", type: "parallel", branches: [[task("a")], [task("b", { task: "{{a.result}}" })]] }] },
      ["body.definition.steps.0.branches.1.0.task"],
    ],
    [
      "while reading its own body",
      { steps: [{ id: "l", type: "loop", while: { op: "falsy", value: "{{t.passed}}" }, body: [task("t")] }] },
      ["body.definition.steps.0.while.value"],
    ],
    [
      "reference to an unknown step",
      { steps: [task("a", { task: "{{nope.result}}" })] },
      ["body.definition.steps.0.task"],
    ],
    [
      "save_as read before its task",
      { steps: [task("a", { task: "{{vars.x}} {{saved.result}}" }), task("b", { save_as: "saved" })] },
      ["body.definition.steps.0.task"],
    ],
    ["malformed template", { steps: [task("a", { task: "{{ a b }}" })] }, ["body.definition.steps.0.task"]],
    ["unclosed template", { steps: [task("a", { task: "{{inputs.x" })] }, ["body.definition.steps.0.task"]],
    ["bare inputs", { steps: [task("a", { task: "{{inputs}}" })] }, ["body.definition.steps.0.task"]],
    [
      "output reads an unknown step",
      { steps: [task("a")], output: { x: ["{{zz.result}}"] } },
      ["body.definition.output.x.0"],
    ],
    [
      "reference inside a condition operand",
      {
        steps: [
          { id: "a", type: "assert", condition: { op: "eq", left: { deep: ["{{later.x}}"] }, right: 1 } },
          task("later"),
        ],
      },
      ["body.definition.steps.0.condition.left.deep.0"],
    ],
  ])("%s", (_name, def, expected) => {
    expect(paths(def)).toEqual(expected);
  });
});

const scope: Scope = {
  inputs: { n: 3, name: "Ada", list: [1, 2, { a: "x" }], total: 12000, empty: "" },
  vars: { report: { rows: 4 } },
  steps: { t1: { status: "succeeded", passed: true, result: { total: 12000, summary: "ok" }, steps: 2, error: null } },
};

describe("templating", () => {
  it.each([
    ["{{inputs.n}}", 3],
    ["{{ inputs.n }}", 3],
    ["{{inputs.list}}", [1, 2, { a: "x" }]],
    ["{{inputs.list.2.a}}", "x"],
    ["{{inputs.list.length}}", 3],
    ["{{t1.result.total}}", 12000],
    ["{{vars.report.rows}}", 4],
    ["{{inputs.missing}}", undefined],
    ["{{t1.result.total.deeper}}", undefined],
    ["n={{inputs.n}}", "n=3"],
    ["{{inputs.name}} has {{vars.report}}", 'Ada has {"rows":4}'],
    ["x{{inputs.missing}}y", "xy"],
    ["no refs", "no refs"],
  ])("%s", (text, expected) => {
    expect(render(text, scope)).toEqual(expected);
  });
  it("renders nested values without touching non-strings", () => {
    expect(render({ a: ["{{inputs.n}}", 1, null, true], b: { c: "{{t1.passed}}" } }, scope)).toEqual({
      a: [3, 1, null, true],
      b: { c: true },
    });
  });
  it("never evaluates code: an expression is a path that resolves to nothing", () => {
    expect(render("{{inputs.n}}+1", scope)).toBe("3+1");
    expect(render("{{constructor.constructor}}", scope)).toBe(undefined);
    expect(render("{{inputs.__proto__}}", scope)).toBe(undefined);
  });
});

describe("conditions: the thirteen ops", () => {
  const t = (c: Condition) => evaluate(c, scope);
  it.each<[string, Condition, boolean]>([
    ["eq numbers", { op: "eq", left: "{{inputs.n}}", right: 3 }, true],
    ["eq is typed", { op: "eq", left: "{{inputs.n}}", right: "3" }, false],
    ["eq interpolated text", { op: "eq", left: "n={{inputs.n}}", right: "n=3" }, true],
    ["eq deep", { op: "eq", left: "{{inputs.list}}", right: [1, 2, { a: "x" }] }, true],
    ["ne", { op: "ne", left: "{{inputs.name}}", right: "Bob" }, true],
    ["ne equal", { op: "ne", left: 1, right: 1 }, false],
    ["lt", { op: "lt", left: 2, right: "{{inputs.n}}" }, true],
    ["lt strings", { op: "lt", left: "a", right: "b" }, true],
    ["lt mixed types is false", { op: "lt", left: "1", right: 2 }, false],
    ["gt", { op: "gt", left: "{{t1.result.total}}", right: 10000 }, true],
    ["gt equal", { op: "gt", left: 3, right: 3 }, false],
    ["lte", { op: "lte", left: 3, right: 3 }, true],
    ["gte", { op: "gte", left: 2, right: 3 }, false],
    ["gt missing is false", { op: "gt", left: "{{inputs.none}}", right: 0 }, false],
    ["contains substring", { op: "contains", left: "{{t1.result.summary}}", right: "o" }, true],
    ["contains element", { op: "contains", left: "{{inputs.list}}", right: { a: "x" } }, true],
    ["contains key", { op: "contains", left: "{{t1.result}}", right: "total" }, true],
    ["contains on a number", { op: "contains", left: 5, right: 5 }, false],
    ["truthy", { op: "truthy", value: "{{t1.passed}}" }, true],
    ["truthy empty string", { op: "truthy", value: "{{inputs.empty}}" }, false],
    ["truthy empty list", { op: "truthy", value: [] }, false],
    ["falsy missing", { op: "falsy", value: "{{inputs.none}}" }, true],
    ["falsy zero", { op: "falsy", value: 0 }, true],
    ["exists", { op: "exists", value: "{{t1.error}}" }, false],
    ["exists false value", { op: "exists", value: false }, true],
    ["exists missing", { op: "exists", value: "{{nope.x}}" }, false],
    [
      "and",
      {
        op: "and",
        conditions: [
          { op: "truthy", value: 1 },
          { op: "eq", left: 1, right: 1 },
        ],
      },
      true,
    ],
    [
      "and one false",
      {
        op: "and",
        conditions: [
          { op: "truthy", value: 1 },
          { op: "falsy", value: 1 },
        ],
      },
      false,
    ],
    [
      "or",
      {
        op: "or",
        conditions: [
          { op: "falsy", value: 1 },
          { op: "truthy", value: 1 },
        ],
      },
      true,
    ],
    ["or all false", { op: "or", conditions: [{ op: "falsy", value: 1 }] }, false],
    ["not", { op: "not", condition: { op: "exists", value: null } }, true],
  ])("%s", (_n, c, expected) => {
    expect(t(c)).toBe(expected);
  });
});
