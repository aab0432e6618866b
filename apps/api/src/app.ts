// Assembles the service from its configuration: database, secrets, limiter store, usage recorder, server.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import type { CoreDeps } from "@cua/core/deps";
import { purgeExpiredIdempotency } from "@cua/core/idempotency/idempotency";
import { KeyCache } from "@cua/core/keys/key-cache";
import { startMachineBackground } from "@cua/core/machines-service/background";
import { purgeExpiredSessions, SessionKeyStore } from "@cua/core/predict/sessions";
import { RunEventHub } from "@cua/core/runs/event-hub";
import { UsageRecorder } from "@cua/core/usage/usage";
import { startHoldSweeper } from "@cua/core/wallet/holds";
import { type DbHandle, openDb } from "@cua/db/client";
import { closeLocalOcr } from "@cua/engines/local/ocr";
import { InngestScheduleJobs } from "@cua/inngest/schedule-jobs";
import { InngestWorkflowJobs } from "@cua/inngest/workflow-jobs";
import type { FastifyInstance } from "fastify";
import pg from "pg";
import { type AppDeps, SERVICE_VERSION } from "./app-deps.ts";
import { createEnginePort } from "./engines.ts";
import type { Env } from "./env.ts";
import { registerAdminRoutes } from "./http/admin-routes.ts";
import { InngestRunJobs, startDurableRuntime } from "./http/inngest-serve.ts";
import { listenKeyEvents } from "./http/key-events.ts";
import { machinesRuntimeFromEnv, registerMachinePlainRoutes } from "./http/machines-plain-routes.ts";
import { MemoryStore, PostgresStore, RateLimiter, type RateLimitStore, RedisStore } from "./http/rate-limit.ts";
import { registerRunEvents } from "./http/runs-events.ts";
import { registerWebhookRoute } from "./http/webhook-route.ts";
import { registerWorkflowEvents } from "./http/workflow-events.ts";
import { registerMcp } from "./mcp/http.ts";
import { buildServer } from "./server.ts";

/** The key-encryption key: SECRETS_KEY, else DATA_DIR/secrets.key (created once, mode 0600). */
export function loadKek(env: Env): Buffer {
  if (env.SECRETS_KEY) return Buffer.from(env.SECRETS_KEY, "hex");
  const file = path.join(path.resolve(env.DATA_DIR), "secrets.key");
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    try {
      fs.writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
  }
  const hex = fs.readFileSync(file, "utf8").trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`${file} does not hold 64 hex characters`);
  return Buffer.from(hex, "hex");
}

async function limiterStore(env: Env, h: DbHandle): Promise<RateLimitStore> {
  const kind = env.RATE_LIMIT_STORE ?? (env.REDIS_URL ? "redis" : h.kind === "postgres" ? "postgres" : "memory");
  if (kind === "redis") {
    if (!env.REDIS_URL) throw new Error("RATE_LIMIT_STORE=redis needs REDIS_URL");
    const { Redis } = await import("ioredis");
    const redis = new Redis(env.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    await redis.connect();
    return new RedisStore(redis);
  }
  if (kind === "postgres") {
    if (h.kind !== "postgres" || !env.DATABASE_URL) throw new Error("RATE_LIMIT_STORE=postgres needs DATABASE_URL");
    return PostgresStore.fromUrl(env.DATABASE_URL);
  }
  return new MemoryStore();
}

export interface App {
  server: FastifyInstance;
  deps: AppDeps;
  close(): Promise<void>;
}

export async function createApp(env: Env): Promise<App> {
  const kek = loadKek(env);
  const h = await openDb({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR, poolSize: env.DATABASE_POOL_SIZE });
  const engines = createEnginePort(env);
  if (env.MANAGED_ENGINE && env.MANAGED_ENGINE !== "local") engines.managed(); // configuration errors stop the start
  const store = await limiterStore(env, h);
  const core: CoreDeps = { db: h.db, clock: { now: () => new Date() }, kek, logger: consoleLogger(env) };
  // usage batches on a connection of their own, as a prepared statement: through Prisma's raw query their JSON
  // parameter was serialised again and parsed back (issue 16, docs/benchmarks.md); one batch at a time
  const usagePool =
    h.kind === "postgres" && env.DATABASE_URL
      ? new pg.Pool({
          connectionString: env.DATABASE_URL,
          max: 1,
          connectionTimeoutMillis: 3000,
          idleTimeoutMillis: 30_000,
          query_timeout: 10_000,
        })
      : null;
  usagePool?.on("error", () => {}); // an idle client that loses its server is replaced at the next batch
  const runJobs = new InngestRunJobs();
  const deps: AppDeps = {
    ...core,
    env,
    usage: new UsageRecorder(
      core,
      undefined,
      undefined,
      undefined,
      undefined,
      usagePool ? (q) => usagePool.query(q) : undefined,
    ),
    limiter: new RateLimiter(store, env.RATE_LIMIT_SCALE),
    keyCache: new KeyCache(),
    engines,
    sessionKeys: new SessionKeyStore(),
    dbKind: h.kind,
    version: SERVICE_VERSION,
    machines: machinesRuntimeFromEnv(env),
    runJobs,
    runsConfig: {
      allowInsecureCallbacks: env.ALLOW_INSECURE_CALLBACKS,
      deadlineSeconds: env.RUN_DEADLINE_SECONDS,
      callbackBackoffSeconds: env.RUN_CALLBACK_BACKOFF_SECONDS.split(",").map(Number),
      callbackTimeoutMs: env.RUN_CALLBACK_TIMEOUT_MS,
    },
    runEvents: new RunEventHub(h.db, { pollMs: env.RUN_EVENTS_POLL_MS }),
    schedules: {
      jobs: new InngestScheduleJobs(),
      ...(env.PUBLIC_BASE_URL ? { publicBaseUrl: env.PUBLIC_BASE_URL.replace(/\/$/, "") } : {}),
    },
    // workflow events go to the same sink as the task runs' (bound by startDurableRuntime)
    workflows: { jobs: new InngestWorkflowJobs(() => runJobs.sink) },
  };
  // revocations made by other API processes reach this one's key cache (docs/api.md "API keys")
  const keyEvents =
    h.kind === "postgres" && env.DATABASE_URL
      ? listenKeyEvents(env.DATABASE_URL, deps.keyCache, {
          onError: (e) => deps.logger.warn("key revocation listener", { err: String(e) }),
        })
      : null;
  const server = await buildServer(deps);
  registerAdminRoutes(server, deps);
  registerMachinePlainRoutes(server, deps);
  registerRunEvents(server, deps);
  registerWorkflowEvents(server, deps); // GET /v1/workflows/runs/{id}/events (SSE)
  registerWebhookRoute(server, deps); // POST /v1/triggers/webhook/{webhook_id} (raw body, signed)
  registerMcp(server, deps); // /mcp, /.well-known/mcp/server-card.json, /llms.txt (docs/mcp.md)
  deps.durable = await startDurableRuntime(server, deps); // the embedded executor starts with the API
  deps.machineBackground = startMachineBackground(deps, {
    intervalMs: env.MACHINE_METER_INTERVAL_MS,
    stopDesktopsOnStop: env.MACHINE_STOP_ON_SHUTDOWN, // resumed by the next start's reconcile
  });
  const purge = setInterval(() => {
    void purgeExpiredIdempotency(deps).catch(() => {});
    void purgeExpiredSessions(deps).catch(() => {});
  }, 10 * 60_000);
  purge.unref();
  // settles holds left by a crash or an unconfirmed capture: once now, then periodically
  const holdSweeper = startHoldSweeper(deps, {
    intervalMs: env.WALLET_SWEEP_INTERVAL_MS,
    holdTtlSeconds: env.WALLET_HOLD_TTL_SECONDS,
  });
  return {
    server,
    deps,
    close: async () => {
      clearInterval(purge);
      await holdSweeper.stop();
      await deps.durable?.stop();
      deps.runEvents.close();
      await deps.machineBackground?.stop();
      await deps.machines.close(); // first: ends driver long polls
      await server.close();
      await keyEvents?.stop();
      await deps.usage.flush();
      await usagePool?.end();
      await closeLocalOcr(); // its worker thread must be gone before the process exits
      await store.close?.();
      await h.close();
    },
  };
}

function consoleLogger(env: Env) {
  const levels = ["trace", "debug", "info", "warn", "error", "fatal"];
  const min = env.LOG_LEVEL === "silent" ? 99 : levels.indexOf(env.LOG_LEVEL);
  const log = (lvl: string) => (msg: string, fields?: Record<string, unknown>) => {
    if (levels.indexOf(lvl) >= min)
      process.stderr.write(`${JSON.stringify({ level: lvl, time: Date.now(), msg, ...fields })}\n`);
  };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}
