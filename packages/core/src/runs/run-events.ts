// A run's persisted event frames after a cursor, then live ones as they are written, ending after the
// terminal frame and the final `done` frame (SPEC.md "Events" 1; DECISIONS.md "Compatibility amendments";
// done-frame.ts). Every consumer reads this one stream: GET /v1/runs/{id}/events and the console's
// subscription. The run is loaded first, so an unknown run is 404 before any frame.
// A failed read (the database away for a moment) is logged and the stream stays open: the hub reads again at
// its next poll or notification.
import type { Principal } from "../keys/authenticate-key.ts";
import type { OperationDeps } from "../operations/define.ts";
import { doneFrame } from "./done-frame.ts";
import type { RunEventFrame } from "./event-hub.ts";
import { getRun } from "./get-run.ts";
import { isTerminal } from "./run-record.ts";

export async function* streamRunEvents(
  deps: Pick<OperationDeps, "db" | "runEvents" | "logger">,
  principal: Principal,
  runId: string,
  after: number,
  signal?: AbortSignal,
): AsyncGenerator<RunEventFrame> {
  const run = await getRun(deps, principal, runId); // 404 before streaming
  if (isTerminal(run.status)) {
    // connected after the end, with the terminal frame already seen: nothing more will come
    const terminal = await deps.db.runEvent.findFirst({ where: { runId, event: "terminal" }, select: { seq: true } });
    if (terminal && terminal.seq <= after) return;
  }
  const queue: RunEventFrame[] = [];
  let wake: (() => void) | null = null;
  const sub = deps.runEvents.subscribe(
    runId,
    after,
    (frames) => {
      queue.push(...frames);
      wake?.();
    },
    (e) => deps.logger.warn("run events read failed", { run_id: runId, err: String(e) }),
  );
  const aborted = () => wake?.();
  signal?.addEventListener("abort", aborted);
  try {
    for (;;) {
      while (queue.length > 0) {
        const f = queue.shift()!;
        yield f;
        if (f.event === "terminal") {
          yield doneFrame(runId, f);
          return;
        }
      }
      if (signal?.aborted) return;
      await new Promise<void>((r) => {
        wake = r;
      });
      wake = null;
    }
  } finally {
    signal?.removeEventListener("abort", aborted);
    sub.close();
  }
}
