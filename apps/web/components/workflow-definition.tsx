"use client";
// Workflow definitions in the console (docs/workflows.md): the JSON editor with the validator's problems
// shown at their step, and the step tree of a run with each step's live status.
import { Badge, type BadgeTone } from "@cua/ui/badge";
import Link from "next/link";
import { errorInfo } from "../lib/errors.ts";

export const EXAMPLE_DEFINITION = {
  steps: [
    { id: "export", type: "task", task: "Export the {{inputs.month}} report #steps=2" },
    { id: "has_rows", type: "assert", condition: { op: "truthy", value: "{{export.passed}}" } },
    { id: "approve", type: "human_approval", message: "File the {{inputs.month}} report?" },
    { id: "done", type: "succeed", output: { run: "{{export.run_id}}" } },
  ],
};

type Json = Record<string, unknown>;

/** The step a validation path points into ("body.definition.steps.2.then.0.id" -> that step's id). */
export function stepAtPath(definition: unknown, path: string): string | null {
  const segs = path.replace(/^body\./, "").split(".");
  if (segs[0] !== "definition") return null;
  let cur: unknown = definition;
  let found: string | null = null;
  for (const seg of segs.slice(1)) {
    if (cur === null || typeof cur !== "object") break;
    cur = (cur as Json)[seg];
    if (cur && typeof cur === "object" && !Array.isArray(cur) && "type" in (cur as Json)) {
      const id = (cur as Json).id;
      found = typeof id === "string" && id ? id : found;
    }
  }
  return found;
}

/** The JSON textarea; a parse error or the server's 422 details listed with the step each one is about. */
export function DefinitionEditor({
  value,
  onChange,
  error,
  label = "Definition (JSON)",
}: {
  value: string;
  onChange: (v: string) => void;
  error: unknown;
  label?: string;
}) {
  let parsed: unknown = null;
  let parseError: string | null = null;
  try {
    parsed = JSON.parse(value);
  } catch (e) {
    parseError = (e as Error).message;
  }
  const info = error ? errorInfo(error) : null;
  const details = info?.details ?? [];
  return (
    <div className="space-y-2">
      <label className="block text-sm font-medium">
        {label}
        <textarea
          aria-label={label}
          value={value}
          onChange={(e) => onChange(e.target.value)}
          rows={14}
          spellCheck={false}
          className="mt-1 block w-full rounded-md border border-slate-300 bg-white px-3 py-2 font-mono text-xs focus-visible:outline-2 focus-visible:outline-indigo-600 dark:border-slate-600 dark:bg-slate-900"
        />
      </label>
      {parseError && <p className="text-sm text-red-700 dark:text-red-300">Not valid JSON: {parseError}</p>}
      {details.length > 0 && (
        <ul
          className="space-y-1 rounded-md bg-red-50 p-3 text-sm text-red-900 dark:bg-red-950 dark:text-red-100"
          data-testid="definition-errors"
        >
          {details.map((d) => {
            const step = stepAtPath(parsed, d.path);
            return (
              <li key={`${d.path}:${d.message}`}>
                {step ? <strong>step {step}: </strong> : null}
                <code className="text-xs">{d.path.replace(/^body\./, "")}</code> {d.message}
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

const TONE: Record<string, BadgeTone> = {
  pending: "neutral",
  running: "blue",
  awaiting_human: "amber",
  succeeded: "green",
  failed: "red",
  skipped: "neutral",
  cancelled: "neutral",
};

export interface StepState {
  id: string;
  type: string;
  status: string;
  output?: unknown;
  error?: unknown;
  run_id: string | null;
}

function children(step: Json): Array<{ label: string; steps: Json[] }> {
  const lists: Array<{ label: string; steps: Json[] }> = [];
  if (Array.isArray(step.then)) lists.push({ label: "then", steps: step.then as Json[] });
  if (Array.isArray(step.else)) lists.push({ label: "else", steps: step.else as Json[] });
  if (Array.isArray(step.body)) lists.push({ label: "body", steps: step.body as Json[] });
  if (Array.isArray(step.branches))
    (step.branches as Json[][]).forEach((b, i) => {
      lists.push({ label: `branch ${i + 1}`, steps: b });
    });
  return lists;
}

/** The pinned definition as a tree, each step with its status and, for task steps, its task run. */
export function StepTree({ steps, states }: { steps: Json[]; states: StepState[] }) {
  const byId = new Map(states.map((s) => [s.id, s]));
  return (
    <ol className="space-y-1 text-sm" data-testid="step-tree">
      {steps.map((s) => {
        const st = byId.get(String(s.id));
        const status = st?.status ?? "pending";
        return (
          <li key={String(s.id)} data-testid={`step-${String(s.id)}`} data-status={status}>
            <div className="flex flex-wrap items-center gap-2">
              <Badge tone={TONE[status] ?? "neutral"}>{status.replace("_", " ")}</Badge>
              <code className="font-semibold">{String(s.id)}</code>
              <span className="text-slate-500">{String(s.type)}</span>
              {st?.run_id && (
                <Link className="text-indigo-700 underline dark:text-indigo-300" href={`/runs/${st.run_id}`}>
                  task run
                </Link>
              )}
              {st?.error != null && (
                <span className="text-red-700 dark:text-red-300">
                  {String((st.error as Json).code ?? "")} {String((st.error as Json).message ?? "")}
                </span>
              )}
            </div>
            {children(s).map((c) => (
              <div key={c.label} className="mt-1 ml-6 border-l border-slate-200 pl-3 dark:border-slate-700">
                <div className="text-xs text-slate-500">{c.label}</div>
                <StepTree steps={c.steps} states={states} />
              </div>
            ))}
          </li>
        );
      })}
    </ol>
  );
}
