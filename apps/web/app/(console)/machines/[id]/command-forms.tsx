"use client";
import { Button } from "@cua/ui/button";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { Select } from "@cua/ui/select";
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useId, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { useTRPC } from "../../../../lib/trpc.ts";

/** The allowlisted commands (DECISIONS.md "Machines") with example parameters. */
const PRESETS: Record<string, unknown> = {
  click: { x: 640, y: 360 },
  double_click: { x: 640, y: 360 },
  right_click: { x: 640, y: 360 },
  move: { x: 640, y: 360 },
  type: { text: "hello" },
  key_press: { keys: ["enter"] },
  key_combo: { keys: ["ctrl", "l"] },
  scroll: { clicks: -3 },
  drag: { x1: 100, y1: 100, x2: 300, y2: 300 },
  wait: { seconds: 1 },
  screenshot: {},
  browser_navigate: { url: "https://example.com" },
  browser_click: { selector: "a" },
  browser_type: { selector: "input", text: "hello" },
  browser_execute: { script: "document.title" },
  terminal_execute: { command: "uname -a" },
  file_read: { path: "notes.txt" },
  file_write: { path: "notes.txt", content: "hello" },
};

export function ActionForm({ id, onActed }: { id: string; onActed?: () => void }) {
  const trpc = useTRPC();
  const [command, setCommand] = useState("browser_navigate");
  const [params, setParams] = useState(JSON.stringify(PRESETS.browser_navigate, null, 2));
  const [parseError, setParseError] = useState<string | null>(null);
  const action = useMutation(trpc.console.machines.action.mutationOptions({ onSuccess: () => onActed?.() }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    let parameters: Record<string, unknown>;
    try {
      parameters = JSON.parse(params || "{}");
      if (!parameters || typeof parameters !== "object" || Array.isArray(parameters)) throw new Error("not an object");
    } catch {
      setParseError("Parameters must be a JSON object.");
      return;
    }
    setParseError(null);
    action.mutate({ id, command, parameters });
  };
  const err = action.error ? errorInfo(action.error) : null;
  return (
    <form onSubmit={submit} className="space-y-3" aria-label="Send an action">
      <Field label="Command">
        <Select
          value={command}
          onChange={(e) => {
            setCommand(e.target.value);
            setParams(JSON.stringify(PRESETS[e.target.value] ?? {}, null, 2));
          }}
        >
          {Object.keys(PRESETS).map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </Select>
      </Field>
      <Field label="Parameters (JSON)" error={parseError ?? undefined}>
        <textarea
          value={params}
          onChange={(e) => setParams(e.target.value)}
          rows={4}
          spellCheck={false}
          className="block w-full rounded-md border border-slate-300 bg-white px-3 py-2 font-mono text-xs focus-visible:outline-2 focus-visible:outline-indigo-600 dark:border-slate-600 dark:bg-slate-900"
        />
      </Field>
      <Button type="submit" loading={action.isPending}>
        Send action
      </Button>
      {err && <ErrorBox title="The action failed" message={friendlyMessage(action.error)} code={err.code} />}
      {action.data && (
        <div role="status">
          <p className="text-sm">
            {action.data.success ? "Succeeded" : "Failed"} in {Math.round(action.data.duration_ms)} ms
            {action.data.error ? `: ${action.data.error.message}` : ""}
          </p>
          <pre
            className="mt-1 max-h-48 overflow-auto rounded bg-slate-100 p-2 text-xs dark:bg-slate-800"
            data-testid="action-result"
          >
            {JSON.stringify(action.data.result, null, 2)}
          </pre>
        </div>
      )}
    </form>
  );
}

export function TerminalForm({ id }: { id: string }) {
  const trpc = useTRPC();
  // one persistent shell per page: cwd and environment carry over between commands
  const sessionId = `console-${useId().replace(/[^A-Za-z0-9]/g, "")}`;
  const [command, setCommand] = useState("");
  const [history, setHistory] = useState<{ command: string; output: string; ok: boolean }[]>([]);
  const run = useMutation(
    trpc.console.machines.terminal.mutationOptions({
      onSuccess: (r, vars) => {
        const output = String((r.result as { output?: unknown }).output ?? r.error?.message ?? "");
        setHistory((h) => [...h.slice(-19), { command: vars.command, output, ok: r.success }]);
        setCommand("");
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (command.trim()) run.mutate({ id, command, session_id: sessionId });
  };
  return (
    <div className="space-y-3">
      <div
        className="max-h-72 overflow-auto rounded bg-slate-950 p-3 font-mono text-xs text-slate-100"
        data-testid="terminal-output"
        aria-live="polite"
      >
        {history.length === 0 ? (
          <span className="text-slate-400">Output appears here.</span>
        ) : (
          history.map((h, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: an append-only log
            <div key={i} className="mb-2">
              <div className="text-emerald-400">$ {h.command}</div>
              <pre className={h.ok ? "whitespace-pre-wrap" : "whitespace-pre-wrap text-red-300"}>{h.output}</pre>
            </div>
          ))
        )}
      </div>
      <form onSubmit={submit} className="flex flex-wrap items-end gap-2" aria-label="Run a terminal command">
        <Field label="Command" className="min-w-0 flex-1">
          <Input
            value={command}
            onChange={(e) => setCommand(e.target.value)}
            className="font-mono"
            placeholder="ls -la"
            autoComplete="off"
          />
        </Field>
        <Button type="submit" loading={run.isPending}>
          Run
        </Button>
      </form>
      {run.error && (
        <ErrorBox title="The command failed" message={friendlyMessage(run.error)} code={errorInfo(run.error).code} />
      )}
    </div>
  );
}
