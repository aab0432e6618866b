// POST /v1/runs/{id}/cancel: any non-terminal state -> cancelled (terminal). A terminal run is 409
// INVALID_STATE with current_state (DECISIONS "Precise answers"). The cancellation event then stops the
// run's function between steps; a step in flight when the cancel commits is discarded, not billed.
import { CoreError } from "@cua/base/errors";
import { loadRun, type RunPrincipal, runRecord } from "./get-run.ts";
import type { RunsDeps } from "./ports.ts";
import { ACTIVE_STATUSES, type RunRecord } from "./run-record.ts";
import { finishInTx, withRun } from "./transitions.ts";

export async function cancelRun(deps: RunsDeps, principal: RunPrincipal, runId: string): Promise<RunRecord> {
  await loadRun(deps, principal, runId); // 400 / 404, scoped
  const after = await withRun(deps, runId, async (tx, run, fx) => {
    if (!run) throw new CoreError("RUN_NOT_FOUND");
    const done = await finishInTx(tx, run, "cancelled", { error: null }, fx, deps.clock.now());
    if (!done) {
      throw new CoreError("INVALID_STATE", `The run is ${run.status}; a terminal run cannot be cancelled.`, {
        current_state: run.status,
        allowed_from: [...ACTIVE_STATUSES],
      });
    }
    return done;
  });
  try {
    await deps.runJobs.cancelled(runId);
  } catch (e) {
    deps.logger.warn("run cancellation event not sent", { run_id: runId, err: String(e) });
  }
  return runRecord(deps, after);
}
