// inputs_schema (DECISIONS.md "Workflows" Compatibility amendment): a JSON Schema the run's inputs must
// satisfy at run start (else 422 VALIDATION_ERROR with `body.inputs...` paths). Ajv (8.20.0, pinned) compiles
// it; a schema Ajv cannot compile is refused when the workflow (or the ad-hoc run) is submitted. Schemas
// are data: Ajv's code generation builds a validator from the schema's keywords, never from caller code,
// and `$ref` to anything outside the schema itself is refused (no loading).

import type { Detail } from "@cua/base/validation";
import { Ajv, type ValidateFunction } from "ajv";

const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: true, addUsedSchema: false });
const cache = new Map<string, ValidateFunction>();

function compile(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let fn = cache.get(key);
  if (!fn) {
    fn = ajv.compile(schema);
    if (cache.size > 500) cache.clear();
    cache.set(key, fn);
  }
  return fn;
}

/** Why a schema is not usable, or null. */
export function schemaProblem(schema: Record<string, unknown>): string | null {
  if (JSON.stringify(schema).length > 100_000) return "larger than 100,000 characters";
  try {
    compile(schema);
    return null;
  } catch (e) {
    return (e as Error).message.slice(0, 300);
  }
}

/** The inputs' problems against the schema, as details under `at` (e.g. "body.inputs"). */
export function inputsProblems(schema: unknown, inputs: Record<string, unknown>, at: string): Detail[] {
  if (schema === null || schema === undefined) return [];
  const fn = compile(schema as Record<string, unknown>);
  if (fn(inputs)) return [];
  return (fn.errors ?? []).map((e) => {
    const segs = e.instancePath
      .split("/")
      .slice(1)
      .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
    const missing = e.keyword === "required" ? [(e.params as { missingProperty: string }).missingProperty] : [];
    return { path: [at, ...segs, ...missing].join("."), message: e.message ?? "invalid" };
  });
}
