// What the workflow use cases ask of the durable executor (core never imports Inngest: inngest/ implements
// this with typed events of its catalogue). Each call carries an idempotency id, so sending twice starts
// nothing twice.
import type { RunsDeps } from "../runs/ports.ts";

export interface WorkflowJobs {
  /** a workflow run was created (queued): drive it */
  started(runId: string): Promise<void>;
  /** a pending human_approval was answered (resumeCount after the answer) */
  resumed(runId: string, resumeCount: number): Promise<void>;
  /** a workflow run was cancelled: stop its function */
  cancelled(runId: string): Promise<void>;
  /** a callback delivery was queued (workflow_callback_deliveries): deliver it */
  callback(deliveryId: string): Promise<void>;
}

export interface WorkflowsPort {
  jobs: WorkflowJobs;
}

export interface WorkflowsDeps extends RunsDeps {
  workflows: WorkflowsPort;
}

/** The deps of an operation handler as WorkflowsDeps (the API process always binds `workflows`). */
export function workflowsDeps<D extends RunsDeps & { workflows?: WorkflowsPort }>(deps: D): D & WorkflowsDeps {
  if (!deps.workflows) throw new Error("workflows: the durable executor port is not configured");
  return deps as D & WorkflowsDeps;
}
