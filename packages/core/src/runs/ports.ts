// What the runs use cases take as arguments (no container): core's ports, the machines runtime (every
// machine interaction goes through getRunnableMachine), the engines, and the job port through which a
// use case asks the durable executor (Inngest) to do something. Core never imports Inngest: the API
// implements RunJobs with the Inngest client (or the embedded executor) it was configured with.
import type { MachinesDeps } from "../machines-service/runtime.ts";
import type { EnginePort } from "../predict/engine-port.ts";

/** Events the run use cases emit; each carries an idempotency id, so sending twice starts nothing twice. */
export interface RunJobs {
  /** a run was created (queued): drive it */
  started(runId: string): Promise<void>;
  /** a run awaiting a human was resumed (resumeCount after the resume) */
  resumed(runId: string, resumeCount: number, note: string | null): Promise<void>;
  /** a run was cancelled: stop its function */
  cancelled(runId: string): Promise<void>;
  /** a callback delivery row was queued: deliver it */
  callback(deliveryId: string): Promise<void>;
}

export interface RunsConfig {
  /** ALLOW_INSECURE_CALLBACKS: http and private/loopback callback targets (development only) */
  allowInsecureCallbacks: boolean;
  /** the run deadline (SPEC: 86400 s) */
  deadlineSeconds: number;
  /** delays before the second and third callback attempts */
  callbackBackoffSeconds: number[];
  /** one callback attempt's timeout */
  callbackTimeoutMs: number;
}

export const DEFAULT_RUNS_CONFIG: RunsConfig = {
  allowInsecureCallbacks: false,
  deadlineSeconds: 86_400,
  callbackBackoffSeconds: [10, 60],
  callbackTimeoutMs: 10_000,
};

/** In-process wake-ups for event streams (the hub also polls, for events written by other processes). */
export interface RunEventNotifier {
  notify(runId: string): void;
}

export interface RunsDeps extends MachinesDeps {
  engines: EnginePort;
  runJobs: RunJobs;
  runsConfig: RunsConfig;
  runEvents?: RunEventNotifier;
}
