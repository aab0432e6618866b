// The workflow definition (DSL version 2026-06-01; SPEC.md "Workflows", DECISIONS.md "Workflows", its
// Compatibility amendment and "Precise answers": workflows) and its validator, as pure logic. Every
// problem is reported with its path (`<prefix>.steps.0.then.1.condition.op`) so the API can answer 422
// VALIDATION_ERROR with `details: [{path, message}]`.
//
// Rules: nine step types with their own fields (unknown fields refused); step ids ^[A-Za-z0-9_-]{1,64}$,
// unique in the definition (save_as names share that namespace); at most 200 steps, containers counted;
// at most 8 nesting levels (the top level is 1); at most 16 branches per parallel step; no human_approval,
// succeed or fail inside a parallel branch at any depth; save_as may not be `inputs` or `vars`; conditions
// use the thirteen ops with their operands; templates are well formed and read only `inputs`, `vars` or
// a step that can have run before the reference is evaluated (an earlier step in document order that is
// neither an ancestor nor in a sibling branch of a parallel step).
import { COMPARISON_OPS, CONDITION_OPS, type Condition, LIST_OPS, VALUE_OPS } from "./conditions.ts";
import { referencesOf, stringsOf } from "./templates.ts";

export const DSL_VERSION = "2026-06-01";
export const MAX_STEPS = 200;
export const MAX_DEPTH = 8;
export const MAX_BRANCHES = 16;
export const MAX_ATTEMPTS = 20;
export const LOOP_MAX_ITERATIONS = 1000;
export const DEFAULT_LOOP_MAX_ITERATIONS = 100;
export const STEP_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const STEP_TYPES = [
  "task",
  "assert",
  "if",
  "loop",
  "parallel",
  "human_approval",
  "retry",
  "succeed",
  "fail",
] as const;
export type StepType = (typeof STEP_TYPES)[number];

interface Common {
  id: string;
  name?: string;
  description?: string;
}
export interface TaskStep extends Common {
  type: "task";
  task: string;
  machine_id?: string;
  cua_version?: "v5" | "v4" | "v3" | "v1";
  instructions?: string;
  system_prompt?: string;
  max_steps?: number;
  save_as?: string;
  on_awaiting_human?: "pause" | "fail" | "cancel";
}
export interface AssertStep extends Common {
  type: "assert";
  condition: Condition;
  message?: string;
}
export interface IfStep extends Common {
  type: "if";
  condition: Condition;
  then: Step[];
  else?: Step[];
}
export interface LoopStep extends Common {
  type: "loop";
  count?: number | string;
  while?: Condition;
  body: Step[];
  max_iterations?: number;
}
export interface ParallelStep extends Common {
  type: "parallel";
  branches: Step[][];
}
export interface HumanApprovalStep extends Common {
  type: "human_approval";
  message?: string;
  timeout_seconds?: number;
}
export interface RetryStep extends Common {
  type: "retry";
  body: Step[];
  max_attempts: number;
}
export interface SucceedStep extends Common {
  type: "succeed";
  output?: unknown;
}
export interface FailStep extends Common {
  type: "fail";
  message?: string;
}
export type Step =
  | TaskStep
  | AssertStep
  | IfStep
  | LoopStep
  | ParallelStep
  | HumanApprovalStep
  | RetryStep
  | SucceedStep
  | FailStep;

export interface Definition {
  steps: Step[];
  output?: unknown;
}

export interface Problem {
  path: string;
  message: string;
}

const COMMON = ["id", "type", "name", "description"];
const FIELDS: Record<StepType, string[]> = {
  task: [
    "task",
    "machine_id",
    "cua_version",
    "instructions",
    "system_prompt",
    "max_steps",
    "save_as",
    "on_awaiting_human",
  ],
  assert: ["condition", "message"],
  if: ["condition", "then", "else"],
  loop: ["count", "while", "body", "max_iterations"],
  parallel: ["branches"],
  human_approval: ["message", "timeout_seconds"],
  retry: ["body", "max_attempts"],
  succeed: ["output"],
  fail: ["message"],
};
/** Fields whose strings are templates (task fields, messages, outputs, conditions' operands, loop count). */
const TEMPLATED: Record<StepType, string[]> = {
  task: ["task", "machine_id", "instructions", "system_prompt"],
  assert: ["message"],
  if: [],
  loop: ["count"],
  parallel: [],
  human_approval: ["message"],
  retry: [],
  succeed: ["output"],
  fail: ["message"],
};
/** Step lists inside a container: the field and, for parallel, one list per branch. */
export function childLists(s: Step): Array<{ field: string; steps: Step[] }> {
  switch (s.type) {
    case "if":
      return [{ field: "then", steps: s.then ?? [] }, ...(s.else ? [{ field: "else", steps: s.else }] : [])];
    case "loop":
    case "retry":
      return [{ field: "body", steps: s.body ?? [] }];
    case "parallel":
      return (s.branches ?? []).map((b, i) => ({ field: `branches.${i}`, steps: b }));
    default:
      return [];
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const isInt = (v: unknown, min: number, max: number) =>
  typeof v === "number" && Number.isInteger(v) && v >= min && v <= max;

/**
 * Validates a definition. `at` is the path of the definition itself (e.g. "body.definition"). Returns every
 * problem found (an empty list: valid).
 */
export function validateDefinition(def: unknown, at: string): Problem[] {
  const problems: Problem[] = [];
  const err = (path: string, message: string) => problems.push({ path, message });
  if (!isObj(def)) {
    err(at, "must be an object {steps, output?}");
    return problems;
  }
  for (const k of Object.keys(def)) if (k !== "steps" && k !== "output") err(`${at}.${k}`, "unknown field");
  if (!Array.isArray(def.steps)) {
    err(`${at}.steps`, "must be an array of steps");
    return problems;
  }
  if (def.steps.length === 0) err(`${at}.steps`, "must hold at least one step");

  // pass 1: shapes, ids, counts, depth, placement
  const ids = new Map<string, string>(); // id or save_as -> path of its step
  let count = 0;
  let overCount = false;
  const shape = (list: unknown, path: string, depth: number, inBranch: boolean) => {
    if (!Array.isArray(list)) {
      err(path, "must be an array of steps");
      return;
    }
    list.forEach((raw, i) => {
      const p = `${path}.${i}`;
      count++;
      if (count > MAX_STEPS && !overCount) {
        overCount = true;
        err(p, `a definition holds at most ${MAX_STEPS} steps (containers and nested steps count)`);
      }
      if (depth > MAX_DEPTH) {
        err(p, `steps nest at most ${MAX_DEPTH} levels deep (the top level is 1)`);
        return;
      }
      if (!isObj(raw)) {
        err(p, "must be a step object {id, type, ...}");
        return;
      }
      const id = raw.id;
      if (typeof id !== "string" || !STEP_ID.test(id)) err(`${p}.id`, "must match ^[A-Za-z0-9_-]{1,64}$");
      else if (id === "inputs" || id === "vars") err(`${p}.id`, `"${id}" is reserved for templates`);
      else if (ids.has(id)) err(`${p}.id`, `duplicate step id "${id}" (first at ${ids.get(id)})`);
      else ids.set(id, p);
      const type = raw.type as StepType;
      if (!STEP_TYPES.includes(type)) {
        err(`${p}.type`, `must be one of ${STEP_TYPES.join(", ")}`);
        return;
      }
      for (const k of Object.keys(raw))
        if (!COMMON.includes(k) && !FIELDS[type].includes(k)) err(`${p}.${k}`, `unknown field for a ${type} step`);
      for (const k of ["name", "description"])
        if (raw[k] !== undefined && typeof raw[k] !== "string") err(`${p}.${k}`, "must be a string");
      if (inBranch && (type === "human_approval" || type === "succeed" || type === "fail"))
        err(`${p}.type`, `a ${type} step is not allowed inside a parallel branch`);
      const s = raw as unknown as Step;
      switch (s.type) {
        case "task": {
          if (typeof s.task !== "string" || s.task.trim() === "") err(`${p}.task`, "must be a non-empty string");
          for (const k of ["machine_id", "instructions", "system_prompt"] as const)
            if (s[k] !== undefined && typeof s[k] !== "string") err(`${p}.${k}`, "must be a string");
          if (s.cua_version !== undefined && !["v5", "v4", "v3", "v1"].includes(s.cua_version))
            err(`${p}.cua_version`, "must be one of v5, v4, v3, v1");
          if (s.max_steps !== undefined && !isInt(s.max_steps, 1, 1000))
            err(`${p}.max_steps`, "must be an integer from 1 to 1000");
          if (s.on_awaiting_human !== undefined && !["pause", "fail", "cancel"].includes(s.on_awaiting_human))
            err(`${p}.on_awaiting_human`, "must be one of pause, fail, cancel");
          if (s.save_as !== undefined) {
            if (typeof s.save_as !== "string" || !STEP_ID.test(s.save_as))
              err(`${p}.save_as`, "must match ^[A-Za-z0-9_-]{1,64}$");
            else if (s.save_as === "inputs" || s.save_as === "vars")
              err(`${p}.save_as`, `save_as may not be "${s.save_as}"`);
            else if (ids.has(s.save_as) && ids.get(s.save_as) !== p)
              err(`${p}.save_as`, `"${s.save_as}" is already a step id or save_as name (at ${ids.get(s.save_as)})`);
            else ids.set(s.save_as, p);
          }
          break;
        }
        case "assert":
          condition(s.condition, `${p}.condition`);
          if (s.message !== undefined && typeof s.message !== "string") err(`${p}.message`, "must be a string");
          break;
        case "if":
          condition(s.condition, `${p}.condition`);
          if (s.then === undefined) err(`${p}.then`, "required: a list of steps");
          break;
        case "loop": {
          const hasCount = s.count !== undefined;
          const hasWhile = s.while !== undefined;
          if (hasCount === hasWhile) err(p, "a loop takes exactly one of count or while");
          if (hasCount && !isInt(s.count, 0, LOOP_MAX_ITERATIONS) && !(typeof s.count === "string"))
            err(`${p}.count`, `must be an integer from 0 to ${LOOP_MAX_ITERATIONS} or a template`);
          if (typeof s.count === "string" && referencesOf(s.count).refs.length === 0)
            err(`${p}.count`, "a string count must be a template such as {{inputs.n}}");
          if (hasWhile) condition(s.while, `${p}.while`);
          if (s.max_iterations !== undefined && !isInt(s.max_iterations, 1, LOOP_MAX_ITERATIONS))
            err(`${p}.max_iterations`, `must be an integer from 1 to ${LOOP_MAX_ITERATIONS}`);
          if (s.body === undefined) err(`${p}.body`, "required: a list of steps");
          break;
        }
        case "parallel":
          if (!Array.isArray(s.branches) || s.branches.length === 0) {
            err(`${p}.branches`, "must be a non-empty array of step lists");
            return;
          }
          if (s.branches.length > MAX_BRANCHES)
            err(`${p}.branches`, `a parallel step has at most ${MAX_BRANCHES} branches`);
          break;
        case "human_approval":
          if (s.message !== undefined && typeof s.message !== "string") err(`${p}.message`, "must be a string");
          if (s.timeout_seconds !== undefined && !isInt(s.timeout_seconds, 1, 604_800))
            err(`${p}.timeout_seconds`, "must be an integer from 1 to 604800");
          break;
        case "retry":
          if (!isInt(s.max_attempts, 1, MAX_ATTEMPTS))
            err(`${p}.max_attempts`, `required: an integer from 1 to ${MAX_ATTEMPTS}`);
          if (s.body === undefined) err(`${p}.body`, "required: a list of steps");
          break;
        case "fail":
          if (s.message !== undefined && typeof s.message !== "string") err(`${p}.message`, "must be a string");
          break;
        case "succeed":
          break;
      }
      for (const c of childLists(s)) shape(c.steps, `${p}.${c.field}`, depth + 1, inBranch || s.type === "parallel");
    });
  };

  const condition = (c: unknown, p: string, level = 0): void => {
    if (!isObj(c)) {
      err(p, "must be a condition object {op, ...}");
      return;
    }
    const op = c.op as string;
    if (!(CONDITION_OPS as readonly string[]).includes(op)) {
      err(`${p}.op`, `unknown op; one of ${CONDITION_OPS.join(", ")}`);
      return;
    }
    const allowed = (COMPARISON_OPS as readonly string[]).includes(op)
      ? ["left", "right"]
      : (VALUE_OPS as readonly string[]).includes(op)
        ? ["value"]
        : (LIST_OPS as readonly string[]).includes(op)
          ? ["conditions"]
          : ["condition"];
    for (const k of Object.keys(c))
      if (k !== "op" && !allowed.includes(k)) err(`${p}.${k}`, `unknown field for op ${op}`);
    for (const k of allowed) if (!Object.hasOwn(c, k)) err(`${p}.${k}`, `required for op ${op}`);
    if (level > 32) {
      err(p, "conditions nest at most 32 levels");
      return;
    }
    if (op === "and" || op === "or") {
      if (!Array.isArray(c.conditions) || c.conditions.length === 0)
        err(`${p}.conditions`, "must be a non-empty array of conditions");
      else
        c.conditions.forEach((x, i) => {
          condition(x, `${p}.conditions.${i}`, level + 1);
        });
    } else if (op === "not" && Object.hasOwn(c, "condition")) condition(c.condition, `${p}.condition`, level + 1);
  };

  shape(def.steps, `${at}.steps`, 1, false);
  if (problems.length > 0) return problems;

  // pass 2: references (the shapes are sound now)
  const checkRefs = (value: unknown, path: string, visible: Set<string>) => {
    for (const { text, path: sp } of stringsOf(value, path)) {
      const { refs, malformed } = referencesOf(text);
      for (const m of malformed) err(sp, `malformed template ${m}: use {{inputs.x}}, {{vars.y}} or {{stepId.field}}`);
      for (const r of refs) {
        const head = r[0]!;
        if (head === "inputs" || head === "vars") {
          if (r.length < 2) err(sp, `{{${head}}} needs a field: {{${head}.name}}`);
          continue;
        }
        if (!ids.has(head)) err(sp, `{{${r.join(".")}}} names no step or save_as "${head}"`);
        else if (!visible.has(head))
          err(sp, `{{${r.join(".")}}} reads step "${head}", which cannot have run before this point`);
      }
    }
  };
  const condRefs = (c: Condition, p: string, visible: Set<string>) => {
    if (c.op === "and" || c.op === "or")
      c.conditions.forEach((x, i) => {
        condRefs(x, `${p}.conditions.${i}`, visible);
      });
    else if (c.op === "not") condRefs(c.condition, `${p}.condition`, visible);
    else if (c.op === "truthy" || c.op === "falsy" || c.op === "exists") checkRefs(c.value, `${p}.value`, visible);
    else {
      const cmp = c as Extract<Condition, { left: unknown }>;
      checkRefs(cmp.left, `${p}.left`, visible);
      checkRefs(cmp.right, `${p}.right`, visible);
    }
  };
  /** walks a list; returns the names visible after it (its steps, their descendants and save_as names) */
  const walk = (list: Step[], path: string, visible: Set<string>): Set<string> => {
    let seen = new Set(visible);
    list.forEach((s, i) => {
      const p = `${path}.${i}`;
      for (const f of TEMPLATED[s.type]) if (f in s) checkRefs((s as never)[f], `${p}.${f}`, seen);
      if (s.type === "assert" || s.type === "if") condRefs(s.condition, `${p}.condition`, seen);
      if (s.type === "loop" && s.while) condRefs(s.while, `${p}.while`, seen);
      const after = new Set(seen);
      if (s.type === "parallel") {
        // each branch sees what preceded the parallel step, never a sibling branch
        s.branches.forEach((b, bi) => {
          for (const n of walk(b, `${p}.branches.${bi}`, seen)) after.add(n);
        });
      } else {
        for (const c of childLists(s)) for (const n of walk(c.steps, `${p}.${c.field}`, seen)) after.add(n);
      }
      after.add(s.id);
      if (s.type === "task" && s.save_as) after.add(s.save_as);
      seen = after;
    });
    return seen;
  };
  const all = walk(def.steps as Step[], `${at}.steps`, new Set());
  if ("output" in def) checkRefs(def.output, `${at}.output`, all);
  return problems;
}

/** Every step of a definition, depth first, with its parent chain (for the run's step list). */
export function flattenSteps(steps: Step[]): Step[] {
  const out: Step[] = [];
  const go = (list: Step[]) => {
    for (const s of list) {
      out.push(s);
      for (const c of childLists(s)) go(c.steps);
    }
  };
  go(steps);
  return out;
}
