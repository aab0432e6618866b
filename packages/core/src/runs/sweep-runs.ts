// The safety net behind "commit, then send the event": a crash between a run's insert (or a callback's
// queueing) and the event that drives it leaves a queued run or a pending delivery without a function.
// The run-sweeper cron function re-sends those events; their ids make a re-send start nothing twice.
import type { RunsDeps } from "./ports.ts";

export const SWEEP_GRACE_MS = 30_000;

export async function sweepRuns(
  deps: RunsDeps,
  graceMs = SWEEP_GRACE_MS,
): Promise<{ runs: number; callbacks: number }> {
  const before = new Date(deps.clock.now().getTime() - graceMs);
  const queued = await deps.db.run.findMany({
    where: { status: "queued", createdAt: { lt: before } },
    select: { id: true },
    take: 500,
  });
  for (const r of queued) await deps.runJobs.started(r.id);
  const pending = await deps.db.runCallbackDelivery.findMany({
    where: { status: "pending", attemptCount: 0, createdAt: { lt: before } },
    select: { id: true },
    take: 500,
  });
  for (const d of pending) await deps.runJobs.callback(d.id);
  return { runs: queued.length, callbacks: pending.length };
}
