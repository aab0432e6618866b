import type { CoreDeps } from "@cua/core/deps";
import type { KeyCache } from "@cua/core/keys/key-cache";
import type { MachineBackground } from "@cua/core/machines-service/background";
import type { MachinesRuntime } from "@cua/core/machines-service/runtime";
import type { EnginePort } from "@cua/core/predict/engine-port";
import type { SessionKeyStore } from "@cua/core/predict/sessions";
import type { RunEventHub } from "@cua/core/runs/event-hub";
import type { RunJobs, RunsConfig } from "@cua/core/runs/ports";
import type { SchedulesPort } from "@cua/core/schedules/ports";
import type { UsageRecorder } from "@cua/core/usage/usage";
import type { WorkflowsPort } from "@cua/core/workflows/ports";
import type { Env } from "./env.ts";
import type { DurableRuntime } from "./http/inngest-serve.ts";
import type { RateLimiter } from "./http/rate-limit.ts";

/** Everything a request handler may use: core's ports plus the transport's own resources. */
export interface AppDeps extends CoreDeps {
  env: Env;
  usage: UsageRecorder;
  limiter: RateLimiter;
  keyCache: KeyCache;
  engines: EnginePort;
  sessionKeys: SessionKeyStore;
  dbKind: "postgres" | "pglite";
  version: string;
  /** machine providers (managed, mock) and driver wake-ups */
  machines: MachinesRuntime;
  /** metering, TTL expiry, frame purge (started by createApp) */
  machineBackground?: MachineBackground;
  /** task runs: events to the durable executor, run settings, SSE fan-out (docs/runs.md) */
  runJobs: RunJobs;
  runsConfig: RunsConfig;
  runEvents: RunEventHub;
  /** schedule timers as events to the durable executor; webhook_url's base (docs/schedules.md) */
  schedules: SchedulesPort;
  /** workflow runs as events to the durable executor (docs/workflows.md) */
  workflows: WorkflowsPort;
  /** the embedded executor or the /api/inngest serve route (started by createApp) */
  durable?: DurableRuntime;
}

export const SERVICE_VERSION = "1.0.0";
