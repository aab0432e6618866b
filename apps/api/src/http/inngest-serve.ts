// Where the durable functions run (docs/executor.md, docs/runs.md):
// - production on a real Inngest server (Inngest Cloud, or a self-hosted `inngest start`): the functions
//   are served at /api/inngest with the SDK's own Fastify adapter and events go to that server. Chosen
//   when INNGEST_BASE_URL or INNGEST_SIGNING_KEY is set (INNGEST_EVENT_KEY sends events).
// - otherwise, the default: the embedded executor runs the very same function objects in this process,
//   with its state in the service's database; several API processes share the work.

import { durableServeOp } from "@cua/core/runs/durable-serve.op";
import { createExecutor, type Executor } from "@cua/executor";
import { createPrismaStore } from "@cua/executor/prisma-store";
import { createInngestClient } from "@cua/inngest/client";
import { createRunFunctions } from "@cua/inngest/functions/runs";
import { createScheduleFunctions } from "@cua/inngest/functions/schedules";
import { createWorkflowFunctions } from "@cua/inngest/functions/workflows";
import { InngestRunJobs } from "@cua/inngest/run-jobs";
import type { InngestScheduleJobs } from "@cua/inngest/schedule-jobs";
import type { FastifyInstance } from "fastify";
import type { Inngest } from "inngest";
import { serve } from "inngest/fastify";
import type { AppDeps } from "../app-deps.ts";

// declared in the operation registry (packages/core/src/runs/durable-serve.op.ts)
export const INNGEST_PATH = durableServeOp.route!;

/** The SDK's log lines (function and step errors) go to the service's logger (LOG_LEVEL applies). */
function sdkLogger(deps: AppDeps) {
  const text = (a: unknown[]) =>
    a
      .map((x) => (x instanceof Error ? `${x.name}: ${x.message}` : typeof x === "string" ? x : JSON.stringify(x)))
      .join(" ");
  return {
    debug: (...a: unknown[]) => deps.logger.debug(`inngest: ${text(a)}`),
    info: (...a: unknown[]) => deps.logger.info(`inngest: ${text(a)}`),
    warn: (...a: unknown[]) => deps.logger.warn(`inngest: ${text(a)}`),
    error: (...a: unknown[]) => deps.logger.error(`inngest: ${text(a)}`),
  };
}

/** RunJobs as typed events (inngest/src/events.ts), sent to whichever sink startDurableRuntime binds. */
export { InngestRunJobs };

export interface DurableRuntime {
  mode: "embedded" | "inngest";
  client: Inngest.Any;
  executor: Executor | null;
  health(): Promise<{ ok: boolean }>;
  stop(): Promise<void>;
}

/** Registers /api/inngest (production) or starts the embedded executor, and binds deps.runJobs. */
export async function startDurableRuntime(app: FastifyInstance, deps: AppDeps): Promise<DurableRuntime> {
  const env = deps.env;
  const external = Boolean(env.INNGEST_BASE_URL || env.INNGEST_SIGNING_KEY);
  const client = createInngestClient({
    ...(env.INNGEST_EVENT_KEY ? { eventKey: env.INNGEST_EVENT_KEY } : {}),
    ...(env.INNGEST_SIGNING_KEY ? { signingKey: env.INNGEST_SIGNING_KEY } : {}),
    ...(env.INNGEST_SIGNING_KEY_FALLBACK ? { signingKeyFallback: env.INNGEST_SIGNING_KEY_FALLBACK } : {}),
    ...(env.INNGEST_BASE_URL ? { baseUrl: env.INNGEST_BASE_URL } : {}),
    ...(env.INNGEST_DEV ? { isDev: true } : {}),
    logger: sdkLogger(deps),
  });
  const functions = [
    ...createRunFunctions(client, deps),
    ...createScheduleFunctions(client, deps),
    ...createWorkflowFunctions(client, deps),
  ];
  const jobs = deps.runJobs as InngestRunJobs;
  const scheduleJobs = deps.schedules.jobs as InngestScheduleJobs;
  if (external) {
    app.route({ method: ["GET", "POST", "PUT"], url: INNGEST_PATH, handler: serve({ client, functions }) });
    jobs.sink = { send: (events) => client.send(events) };
    scheduleJobs.sink = jobs.sink;
    return { mode: "inngest", client, executor: null, health: async () => ({ ok: true }), stop: async () => {} };
  }
  const log = deps.logger;
  const executor = createExecutor({
    client,
    functions,
    store: createPrismaStore(deps.db),
    concurrency: env.EXECUTOR_CONCURRENCY,
    timerConcurrency: env.EXECUTOR_TIMER_CONCURRENCY,
    pollIntervalMs: env.EXECUTOR_POLL_MS,
    leaseMs: env.EXECUTOR_LEASE_MS,
    // the service's clock: durable sleeps (schedule timers, run deadlines) wake by the same time core reads
    now: () => deps.clock.now(),
    logger: { debug: log.debug, info: log.info, warn: log.warn, error: log.error },
  });
  await executor.start();
  jobs.sink = { send: (events) => executor.send(events) };
  scheduleJobs.sink = jobs.sink;
  return {
    mode: "embedded",
    client,
    executor,
    health: async () => ({ ok: (await executor.health()).ok }),
    stop: () => executor.stop({ timeoutMs: 10_000 }),
  };
}
