// A workflow run's persisted event frames after a cursor, then new ones as they are written (polled), ending
// after the terminal frame: the task-run stream's framing (SPEC.md "Events" 6; DECISIONS.md "Workflows"
// Compatibility amendment). The run is loaded first, so an unknown run is 404 before any frame.
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
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

export async function* streamWorkflowEvents(
  deps: Pick<CoreDeps, "db">,
  principal: Principal,
  runId: string,
  after: number,
  signal?: AbortSignal,
  pollMs = WORKFLOW_EVENTS_POLL_MS,
): AsyncGenerator<WorkflowEventFrameOut> {
  await loadWorkflowRun(deps, principal, runId); // 404 before streaming
  let cursor = after;
  while (!signal?.aborted) {
    const frames = await readWorkflowEvents(deps, runId, cursor);
    for (const f of frames) {
      cursor = f.seq;
      yield f;
      if (f.event === "terminal") return;
    }
    if (frames.length === 0) await new Promise((r) => setTimeout(r, pollMs));
  }
}
