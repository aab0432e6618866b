// Read-only views of a run for callers and tests: the run, its memoized steps, and what it waits on.
import { type ExecutorStore, isActiveStatus } from "./store/store.ts";
import type { RunPendingView, RunView } from "./types.ts";

export async function getRunView(store: ExecutorStore, runId: string): Promise<RunView | null> {
  const run = await store.getRun(runId);
  if (!run) return null;
  const [steps, waits, items] = await Promise.all([
    store.listSteps(runId),
    store.listWaits(runId),
    store.listItems(runId),
  ]);
  const pending: RunPendingView[] = [];
  for (const i of items) {
    if (i.kind === "wait_timeout" || i.kind === "cron") continue;
    pending.push({
      kind: i.kind,
      stepId: i.stepId,
      name: typeof i.payload?.name === "string" ? i.payload.name : null,
      at: i.runAt,
      attempt: i.attempt,
    });
  }
  for (const w of waits) {
    pending.push({
      kind: w.kind,
      stepId: w.stepId,
      name: null,
      at: w.expiresAt,
      eventName: w.eventName,
      expression: w.expression,
      childRunId: w.childRunId,
    });
  }
  return {
    ...run,
    steps: steps.map((s) => ({
      id: s.stepId,
      name: s.name,
      op: s.op,
      seq: s.seq,
      data: s.error ? null : s.data,
      error: s.error,
      at: s.createdAt,
    })),
    pending,
  };
}

/** Resolve once the run is completed, failed or cancelled (polling the store). */
export async function waitForRunView(
  store: ExecutorStore,
  runId: string,
  opts: { timeoutMs?: number; pollMs?: number } = {},
): Promise<RunView> {
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    const view = await getRunView(store, runId);
    if (!view) throw new Error(`executor: run ${runId} not found`);
    if (!isActiveStatus(view.status)) return view;
    if (Date.now() > deadline)
      throw new Error(`executor: run ${runId} still ${view.status} after ${opts.timeoutMs ?? 30_000} ms`);
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 25));
  }
}
