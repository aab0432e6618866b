// Where the durable functions run (docs/executor.md, docs/runs.md):
// - production on a real Inngest server (Inngest Cloud, or a self-hosted `inngest start`): the functions
//   are served at /api/inngest with the SDK's own Fastify adapter and events go to that server. Chosen
//   when INNGEST_BASE_URL or INNGEST_SIGNING_KEY is set (INNGEST_EVENT_KEY sends events).
// - otherwise, the default: the embedded executor runs the very same function objects in this process,
//   with its state in the service's database; several API processes share the work.

import type { RunJobs } from "@cua/core/runs/ports";
import { createInngestClient } from "@cua/inngest/client";
import { createExecutor, type Executor } from "@cua/inngest/executor/executor";
import { createPrismaStore } from "@cua/inngest/executor/prisma-store";
import { createRunFunctions } from "@cua/inngest/functions/runs";
import type { FastifyInstance } from "fastify";
import type { Inngest } from "inngest";
import { serve } from "inngest/fastify";
import type { AppDeps } from "../app-deps.ts";

export const INNGEST_PATH = "/api/inngest";

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

interface EventSender {
  send(e: { name: string; data: Record<string, unknown>; id: string }): Promise<unknown>;
}

/** RunJobs over whichever event sender is configured (bound once the runtime exists). */
export class InngestRunJobs implements RunJobs {
  sender: EventSender | null = null;
  private async send(name: string, data: Record<string, unknown>, id: string): Promise<void> {
    if (!this.sender) throw new Error("the durable executor is not started");
    await this.sender.send({ name, data, id });
  }
  started(runId: string) {
    return this.send("run/started", { run_id: runId }, `run-started-${runId}`);
  }
  resumed(runId: string, resumeCount: number, note: string | null) {
    return this.send("run/resumed", { run_id: runId, note }, `run-resumed-${runId}-${resumeCount}`);
  }
  cancelled(runId: string) {
    return this.send("run/cancelled", { run_id: runId }, `run-cancelled-${runId}`);
  }
  callback(deliveryId: string) {
    return this.send("run/callback", { delivery_id: deliveryId }, `run-callback-${deliveryId}`);
  }
}

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
  const functions = createRunFunctions(client, deps);
  const jobs = deps.runJobs as InngestRunJobs;
  if (external) {
    app.route({ method: ["GET", "POST", "PUT"], url: INNGEST_PATH, handler: serve({ client, functions }) });
    jobs.sender = { send: (e) => client.send(e) };
    return { mode: "inngest", client, executor: null, health: async () => ({ ok: true }), stop: async () => {} };
  }
  const log = deps.logger;
  const executor = createExecutor({
    client,
    functions,
    store: createPrismaStore(deps.db),
    concurrency: env.EXECUTOR_CONCURRENCY,
    pollIntervalMs: env.EXECUTOR_POLL_MS,
    leaseMs: env.EXECUTOR_LEASE_MS,
    logger: { debug: log.debug, info: log.info, warn: log.warn, error: log.error },
  });
  await executor.start();
  jobs.sender = { send: (e) => executor.send(e) };
  return {
    mode: "embedded",
    client,
    executor,
    health: async () => ({ ok: (await executor.health()).ok }),
    stop: () => executor.stop({ timeoutMs: 10_000 }),
  };
}
