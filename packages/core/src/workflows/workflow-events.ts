// A workflow run's persisted event frames after a cursor, then new ones as they are written (polled), ending
// after the terminal frame and the final `done` frame: the task-run stream's framing (SPEC.md "Events" 6;
// DECISIONS.md "Workflows" Compatibility amendment). The run is loaded first, so an unknown run is 404
// before any frame.
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { doneFrame } from "../runs/done-frame.ts";
import { isTerminal } from "../runs/run-record.ts";
import { loadWorkflowRun } from "./workflow-runs.ts";

export interface WorkflowEventFrameOut {
  seq: number;
  event: string;
  data: unknown;
  created_at: string;
}

export const WORKFLOW_EVENTS_POLL_MS = 150;

/** Frames with seq > after, in order, at most `take`. */
export async function readWorkflowEvents(
  deps: Pick<CoreDeps, "db">,
  runId: string,
  after: number,
  take = 500,
): Promise<WorkflowEventFrameOut[]> {
  const rows = await deps.db.workflowRunEvent.findMany({
    where: { runId, seq: { gt: after } },
    orderBy: { seq: "asc" },
    take,
  });
  return rows.map((r) => ({ seq: r.seq, event: r.event, data: r.data, created_at: r.createdAt.toISOString() }));
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * The one stream of a workflow run's frames (GET /v1/workflows/runs/{id}/events and the console's
 * subscription): the frames after `after`, then new ones (polled), ending after the terminal frame and the
 * final `done` frame (done-frame.ts). A client that saw the terminal frame gets nothing. A failed read (the
 * database away for a moment) is logged and read again at the next poll.
 */
export async function* streamWorkflowEvents(
  deps: Pick<CoreDeps, "db"> & Partial<Pick<CoreDeps, "logger">>,
  principal: Principal,
  runId: string,
  after: number,
  signal?: AbortSignal,
  pollMs = WORKFLOW_EVENTS_POLL_MS,
): AsyncGenerator<WorkflowEventFrameOut> {
  const run = await loadWorkflowRun(deps, principal, runId); // 404 before streaming
  if (isTerminal(run.status)) {
    const terminal = await deps.db.workflowRunEvent.findFirst({
      where: { runId, event: "terminal" },
      select: { seq: true },
    });
    if (terminal && terminal.seq <= after) return; // the client saw the end: nothing more
  }
  let cursor = after;
  while (!signal?.aborted) {
    let frames: WorkflowEventFrameOut[] = [];
    try {
      frames = await readWorkflowEvents(deps, runId, cursor);
    } catch (e) {
      deps.logger?.warn("workflow run events read failed", { run_id: runId, err: String(e) });
    }
    for (const f of frames) {
      cursor = f.seq;
      yield f;
      if (f.event === "terminal") {
        yield doneFrame(runId, f);
        return;
      }
    }
    if (frames.length === 0) await sleep(pollMs, signal);
  }
}
