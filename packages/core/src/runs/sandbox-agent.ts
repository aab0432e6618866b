// Test keys' runs are deterministic sandbox runs on mock machines (SPEC "Authentication" 4), driven by
// directives in the task text (DECISIONS "Engines"):
//   #steps=N   N steps (default 3), the last one answers `done` (the run succeeds)
//   #fail      the last step answers `fail` (the run fails with TASK_FAILED)
//   #human     the run asks for a human before the last step (once; a resume continues it)
//   #slow=MS   every step's engine call takes MS milliseconds (the sandbox engine's own directive)
//   #timeout   the run behaves as if its deadline had passed (timed_out)
// This implementation adds two, documented in docs/runs.md:
//   #stall     every step but the last repeats one click at (5, 5): the stall guard trips
//   #error     every engine call fails (PREDICTION_FAILED): the step is retried, then the run fails
// Step i < N sends the task's i-th command (split at newlines, ";" and "then") to the sandbox engine,
// or, once the commands are used up, "continue step i" (a deterministic click that differs per step).

export interface RunDirectives {
  steps: number;
  fail: boolean;
  human: boolean;
  slowMs: number;
  timeout: boolean;
  stall: boolean;
  error: boolean;
}

const DEFAULT_STEPS = 3;
const DIRECTIVE_RE = /(^|\s)#([A-Za-z_]+)(?:=(\S*))?/g;

export function parseRunDirectives(task: string): RunDirectives {
  const d: RunDirectives = {
    steps: DEFAULT_STEPS,
    fail: false,
    human: false,
    slowMs: 0,
    timeout: false,
    stall: false,
    error: false,
  };
  for (const m of task.matchAll(DIRECTIVE_RE)) {
    const name = m[2]!.toLowerCase();
    const value = m[3];
    if (name === "steps") {
      const n = Number.parseInt(value ?? "", 10);
      if (Number.isFinite(n)) d.steps = Math.min(1000, Math.max(1, n));
    } else if (name === "fail") d.fail = true;
    else if (name === "human") d.human = true;
    else if (name === "slow") d.slowMs = Math.min(30_000, Math.max(0, Number.parseInt(value ?? "0", 10) || 0));
    else if (name === "timeout") d.timeout = true;
    else if (name === "stall") d.stall = true;
    else if (name === "error") d.error = true;
  }
  return d;
}

export function stripDirectives(task: string): string {
  return task.replace(DIRECTIVE_RE, "$1").replace(/\s+/g, " ").trim();
}

/** The task's commands, split at newlines, ";" and "then", never inside quotes. */
export function taskCommands(task: string): string[] {
  const text = task.replace(DIRECTIVE_RE, "$1");
  const quoted: string[] = [];
  const masked = text.replace(/"[^"]*"|'[^']*'/g, (q) => {
    quoted.push(q);
    return `\uE000${quoted.length - 1}\uE000`;
  });
  return masked
    .split(/\n|;|,\s*(?:and\s+)?then\s+|\s+(?:and\s+)?then\s+/i)
    .map((s) => s.replace(/\uE000(\d+)\uE000/g, (_m, i: string) => quoted[Number(i)] ?? "").trim())
    .filter((s) => s.length > 0);
}

/** The instruction the sandbox engine gets for step `step` (1-based) of a test run. */
export function sandboxInstruction(task: string, d: RunDirectives, step: number): string {
  let text: string;
  if (step >= d.steps) text = d.fail ? "fail" : "done";
  else if (d.stall) text = "click 5,5";
  else text = taskCommands(task)[step - 1] ?? `continue step ${step}`;
  if (d.slowMs > 0) text += ` #slow=${d.slowMs}`;
  if (d.error) text += " #error";
  return text;
}
