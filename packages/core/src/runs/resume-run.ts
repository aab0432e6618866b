// POST /v1/runs/{id}/resume: awaiting_human -> running, with an optional note (recorded in the status
// frame). Any other state is 409 NOT_AWAITING_HUMAN; of racing resumes exactly one succeeds and the
// others get 409 RESUME_CONFLICT (DECISIONS "Precise answers"): the transition is conditional on the
// resume count the request read, so only the first writer matches.
import { CoreError } from "@cua/base/errors";
import { childLeftHumanWaitInTx } from "../workflows/child-runs.ts";
import { loadRun, type RunPrincipal, runRecord } from "./get-run.ts";
import type { RunsDeps } from "./ports.ts";
import type { RunRecord } from "./run-record.ts";
import { appendEvents, applyEffects, newEffects } from "./transitions.ts";

export async function resumeRun(
  deps: RunsDeps,
  principal: RunPrincipal,
  runId: string,
  note: string | null,
): Promise<RunRecord> {
  const seen = await loadRun(deps, principal, runId);
  if (seen.status !== "awaiting_human") {
    throw new CoreError(
      "NOT_AWAITING_HUMAN",
      `The run is ${seen.status}; only a run awaiting a human can be resumed.`,
      {
        current_state: seen.status,
        allowed_from: ["awaiting_human"],
      },
    );
  }
  const fx = newEffects(runId);
  const after = await deps.db.$transaction(async (tx) => {
    const upd = await tx.run.updateMany({
      where: { id: runId, status: "awaiting_human", resumeCount: seen.resumeCount },
      data: {
        status: "running",
        awaitingHumanReason: null,
        awaitingHumanSince: null,
        resumeCount: { increment: 1 },
        resumedAtStep: seen.stepCount,
      },
    });
    if (upd.count === 0) return null;
    await appendEvents(
      tx,
      runId,
      [
        { event: "status", data: { run_id: runId, status: "running", note } },
        // DECISIONS.md "Compatibility amendments": run events carry `resumed` (with the note) after a resume
        { event: "resumed", data: { run_id: runId, note } },
      ],
      fx,
    );
    // a task step's run: its workflow run stops waiting on it (workflows/child-runs.ts)
    await childLeftHumanWaitInTx(tx, seen, { note });
    return tx.run.findUniqueOrThrow({ where: { id: runId } });
  });
  if (!after) {
    const now = await loadRun(deps, principal, runId);
    if (now.resumeCount > seen.resumeCount) {
      throw new CoreError("RESUME_CONFLICT", "Another resume of this run won the race.", { current_state: now.status });
    }
    throw new CoreError("NOT_AWAITING_HUMAN", `The run is ${now.status}; only a run awaiting a human can be resumed.`, {
      current_state: now.status,
      allowed_from: ["awaiting_human"],
    });
  }
  await applyEffects(deps, fx);
  try {
    await deps.runJobs.resumed(runId, after.resumeCount, note);
  } catch (e) {
    // the function re-checks the run's state while it waits, so a lost event only delays it
    deps.logger.warn("run resume event not sent", { run_id: runId, err: String(e) });
  }
  return runRecord(deps, after);
}
