// WorkflowJobs (packages/core/src/workflows/ports.ts) as events of the catalogue (events.ts), received by
// the workflow-run function (functions/workflows.ts). Event ids make re-sends idempotent.
import type { WorkflowJobs } from "@cua/core/workflows/ports";
import {
  type AppEvent,
  type EventSink,
  sendAppEvents,
  workflowCallback,
  workflowCancelled,
  workflowResumed,
  workflowStarted,
} from "./events.ts";

/** WorkflowJobs over the sink of the task runs' jobs (bound once the executor or Inngest client exists). */
export class InngestWorkflowJobs implements WorkflowJobs {
  constructor(private readonly sinkOf: () => EventSink | null) {}

  private async emit(event: AppEvent): Promise<void> {
    const sink = this.sinkOf();
    if (!sink) throw new Error("the durable executor is not started");
    await sendAppEvents(sink, event);
  }

  started(runId: string) {
    return this.emit(workflowStarted.create({ workflow_run_id: runId }, { id: `workflow-started-${runId}` }));
  }
  resumed(runId: string, resumeCount: number) {
    return this.emit(
      workflowResumed.create(
        { workflow_run_id: runId, resume_count: resumeCount },
        { id: `workflow-resumed-${runId}-${resumeCount}` },
      ),
    );
  }
  cancelled(runId: string) {
    return this.emit(workflowCancelled.create({ workflow_run_id: runId }, { id: `workflow-cancelled-${runId}` }));
  }
  callback(deliveryId: string) {
    return this.emit(workflowCallback.create({ delivery_id: deliveryId }, { id: `workflow-callback-${deliveryId}` }));
  }
}
