// Templating of the workflow DSL 2026-06-01 (DECISIONS.md "Workflows" and its Compatibility amendment):
// `{{inputs.x}}`, `{{vars.y}}` (save_as values) and `{{stepId.field}}` read the run's inputs, saved values
// and earlier steps' results. A string that is exactly one `{{ref}}` yields the referenced value itself
// (DECISIONS "Precise answers": workflows); otherwise each reference is interpolated as text. Nothing is ever
// evaluated as code: a reference is a dotted path looked up in plain data.

/** One reference: `{{ a.b.0 }}` -> ["a", "b", "0"]. Segments are [A-Za-z0-9_-]+. */
const REF = /\{\{\s*([^{}]*?)\s*\}\}/g;
const EXACT = /^\{\{\s*([^{}]*?)\s*\}\}$/;
const PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** What references resolve against: `inputs`, `vars`, and each step id / save_as name. */
export interface Scope {
  inputs: Record<string, unknown>;
  vars: Record<string, unknown>;
  steps: Record<string, unknown>;
}

/** The references of a string: their paths, and the malformed ones (`{{}}`, `{{a b}}`, an unclosed `{{`). */
export function referencesOf(text: string): { refs: string[][]; malformed: string[] } {
  const refs: string[][] = [];
  const malformed: string[] = [];
  for (const m of text.matchAll(REF)) {
    const p = m[1]!;
    if (PATH.test(p)) refs.push(p.split("."));
    else malformed.push(m[0]);
  }
  const rest = text.replace(REF, "");
  if (rest.includes("{{") || rest.includes("}}")) malformed.push(rest.includes("{{") ? "{{" : "}}");
  return { refs, malformed };
}

/** Every string inside a JSON value (object values and array items, recursively). */
export function stringsOf(value: unknown, at: string, out: Array<{ text: string; path: string }> = []) {
  if (typeof value === "string") out.push({ text: value, path: at });
  else if (Array.isArray(value))
    value.forEach((v, i) => {
      stringsOf(v, `${at}.${i}`, out);
    });
  else if (value !== null && typeof value === "object")
    for (const [k, v] of Object.entries(value)) stringsOf(v, `${at}.${k}`, out);
  return out;
}

function lookup(scope: Scope, path: string[]): unknown {
  const [head, ...rest] = path;
  let cur: unknown =
    head === "inputs"
      ? scope.inputs
      : head === "vars"
        ? scope.vars
        : Object.hasOwn(scope.steps, head!)
          ? scope.steps[head!]
          : undefined;
  for (const seg of rest) {
    if (cur === null || cur === undefined) return undefined;
    if (Array.isArray(cur)) cur = /^\d+$/.test(seg) ? cur[Number(seg)] : seg === "length" ? cur.length : undefined;
    else if (typeof cur === "object") cur = Object.hasOwn(cur, seg) ? (cur as Record<string, unknown>)[seg] : undefined;
    else return undefined;
  }
  return cur;
}

function asText(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

/** Resolves one string: exactly one reference -> its value; otherwise text with the references interpolated. */
export function renderString(text: string, scope: Scope): unknown {
  const exact = EXACT.exec(text);
  if (exact && PATH.test(exact[1]!)) return lookup(scope, exact[1]!.split("."));
  return text.replace(REF, (whole, p: string) => (PATH.test(p) ? asText(lookup(scope, p.split("."))) : whole));
}

/** Resolves every string inside a JSON value (a deep copy; non-strings are kept). */
export function render(value: unknown, scope: Scope): unknown {
  if (typeof value === "string") return renderString(value, scope);
  if (Array.isArray(value)) return value.map((v) => render(v, scope));
  if (value !== null && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v, scope)]));
  return value;
}
