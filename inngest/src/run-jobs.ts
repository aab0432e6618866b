// RunJobs (packages/core/src/runs/ports.ts) as events: the run use cases ask for work through this port,
// and each request becomes one event of the catalogue (events.ts) that the run functions receive. Every
// event has an idempotency id, so sending twice (the sweeper re-sends lost events) starts nothing twice.
import type { RunJobs } from "@cua/core/runs/ports";
import {
  type AppEvent,
  type EventSink,
  runCallback,
  runCancelled,
  runResumed,
  runStarted,
  sendAppEvents,
} from "./events.ts";

/** RunJobs over whichever event sink is configured (bound once the executor or Inngest client exists). */
export class InngestRunJobs implements RunJobs {
  sink: EventSink | null = null;

  private async emit(event: AppEvent): Promise<void> {
    if (!this.sink) throw new Error("the durable executor is not started");
    await sendAppEvents(this.sink, event);
  }

  started(runId: string) {
    return this.emit(runStarted.create({ run_id: runId }, { id: `run-started-${runId}` }));
  }
  resumed(runId: string, resumeCount: number, note: string | null) {
    return this.emit(runResumed.create({ run_id: runId, note }, { id: `run-resumed-${runId}-${resumeCount}` }));
  }
  cancelled(runId: string) {
    return this.emit(runCancelled.create({ run_id: runId }, { id: `run-cancelled-${runId}` }));
  }
  callback(deliveryId: string) {
    return this.emit(runCallback.create({ delivery_id: deliveryId }, { id: `run-callback-${deliveryId}` }));
  }
}
