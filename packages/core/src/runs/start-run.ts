// The first step of the run-task function: queued -> running (SPEC "scheduler starts it").
import type { RunsDeps } from "./ports.ts";
import { isTerminal, type RunStatus } from "./run-record.ts";
import { appendEvents, withRun } from "./transitions.ts";

export type StartOutcome = { kind: "running"; deadlineAt: string } | { kind: "terminal"; status: RunStatus };

export async function startRun(deps: RunsDeps, runId: string): Promise<StartOutcome> {
  return withRun(deps, runId, async (tx, run, fx) => {
    if (!run) return { kind: "terminal", status: "failed" };
    if (isTerminal(run.status)) return { kind: "terminal", status: run.status as RunStatus };
    if (run.status === "queued") {
      await tx.run.update({ where: { id: runId }, data: { status: "running", startedAt: deps.clock.now() } });
      await appendEvents(tx, runId, [{ event: "status", data: { run_id: runId, status: "running" } }], fx);
    }
    return { kind: "running", deadlineAt: run.deadlineAt.toISOString() };
  });
}

/** The deadline function's first step: when the run times out (null when it already ended). */
export async function runDeadline(deps: RunsDeps, runId: string): Promise<string | null> {
  const run = await deps.db.run.findUnique({ where: { id: runId }, select: { status: true, deadlineAt: true } });
  if (!run || isTerminal(run.status)) return null;
  return run.deadlineAt.toISOString();
}
