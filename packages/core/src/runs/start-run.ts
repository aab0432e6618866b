// The first step of the run-task function: queued -> running (SPEC "scheduler starts it").
import type { RunsDeps } from "./ports.ts";
import { isTerminal, type RunStatus } from "./run-record.ts";
import { appendEvents, withRun } from "./transitions.ts";

/**
 * `scheduled`: a schedule started the run (its metadata names the schedule, packages/core/src/schedules/fire.ts);
 * run/finished carries it so that only those runs start the schedule-settle function.
 */
export type StartOutcome =
  | { kind: "running"; deadlineAt: string; scheduled: boolean }
  | { kind: "terminal"; status: RunStatus; scheduled: boolean };

const scheduledBy = (metadata: unknown): boolean =>
  typeof metadata === "object" && metadata !== null && "schedule_id" in metadata;

export async function startRun(deps: RunsDeps, runId: string): Promise<StartOutcome> {
  // the common case in one statement (issue 16: it was a seven-statement transaction): queued -> running
  // with its `status` frame, numbered under the row lock the update takes
  const started = await deps.db.$queryRaw<{ deadline_at: Date; metadata: unknown }[]>`
    WITH s AS (
      UPDATE runs SET status = 'running', started_at = ${deps.clock.now()}::timestamptz, updated_at = now(),
        event_seq = event_seq + 1
      WHERE id = ${runId} AND status = 'queued'
      RETURNING event_seq, deadline_at, metadata
    ), e AS (
      INSERT INTO run_events (run_id, seq, event, data, created_at)
      SELECT ${runId}::text, s.event_seq, 'status', ${JSON.stringify({ run_id: runId, status: "running" })}::jsonb, now()
      FROM s
    )
    SELECT deadline_at, metadata FROM s`;
  const row = started[0];
  if (row) {
    deps.runEvents?.notify(runId);
    return {
      kind: "running",
      deadlineAt: new Date(row.deadline_at).toISOString(),
      scheduled: scheduledBy(row.metadata),
    };
  }
  // not queued: started already (a retried step), ended, or gone
  return withRun(deps, runId, async (tx, run, fx) => {
    if (!run) return { kind: "terminal", status: "failed", scheduled: false };
    const scheduled = scheduledBy(run.metadata);
    if (isTerminal(run.status)) return { kind: "terminal", status: run.status as RunStatus, scheduled };
    if (run.status === "queued") {
      await tx.run.update({ where: { id: runId }, data: { status: "running", startedAt: deps.clock.now() } });
      await appendEvents(tx, runId, [{ event: "status", data: { run_id: runId, status: "running" } }], fx);
    }
    return { kind: "running", deadlineAt: run.deadlineAt.toISOString(), scheduled };
  });
}

/** The deadline function's first step: when the run times out (null when it already ended). */
export async function runDeadline(deps: RunsDeps, runId: string): Promise<string | null> {
  const run = await deps.db.run.findUnique({ where: { id: runId }, select: { status: true, deadlineAt: true } });
  if (!run || isTerminal(run.status)) return null;
  return run.deadlineAt.toISOString();
}
