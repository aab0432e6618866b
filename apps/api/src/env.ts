// The API's configuration: every environment variable it reads, validated at start with clear errors.
import { z } from "zod";

const bool = z
  .enum(["0", "1", "true", "false"])
  .optional()
  .transform((v) => v === "1" || v === "true");

export const EnvSchema = z
  .object({
    PORT: z.coerce.number().int().min(0).max(65535).default(8080).describe("API port"),
    HOST: z.string().default("127.0.0.1").describe("API bind address"),
    WEB_PORT: z.coerce.number().int().min(0).max(65535).default(3000).describe("console port"),
    DATA_DIR: z.string().default(".data").describe("embedded data directory (PGlite, secrets key, machines)"),
    DATABASE_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, "must be a postgresql:// URL")
      .optional()
      .describe("PostgreSQL; without it the embedded PGlite under DATA_DIR is used"),
    DATABASE_POOL_SIZE: z.coerce
      .number()
      .int()
      .min(2)
      .max(500)
      .default(10)
      .describe("connections in the API's Prisma pool (beyond them, requests answer 503 DB_UNAVAILABLE)"),
    WALLET_HOLD_TTL_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .default(900)
      .describe("age at which the wallet sweeper settles a hold still reserved (must exceed the longest billed call)"),
    WALLET_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(60_000).describe("wallet sweeper period"),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, "must be a redis:// URL")
      .optional(),
    RATE_LIMIT_STORE: z.enum(["memory", "redis", "postgres"]).optional(),
    RATE_LIMIT_SCALE: z.coerce.number().positive().max(1000).default(1),
    LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
    SECRETS_KEY: z
      .string()
      .regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex characters (32 bytes)")
      .optional()
      .describe("key-encryption key for stored secrets; default: generated once into DATA_DIR/secrets.key"),
    PUBLIC_BASE_URL: z.string().url().optional().describe("base URL used in docs_url, webhook_url and connection URLs"),
    IDEMPOTENCY_PENDING_WINDOW_SECONDS: z.coerce.number().int().min(1).max(21_600).default(600),
    ALLOW_INSECURE_CALLBACKS: bool,
    FIRST_RUN_CREDITS: z.coerce.number().int().min(0).default(1000),
    MANAGED_ENGINE: z.enum(["local", "anthropic", "openai", "openai-compatible"]).optional(),
    MANAGED_ENGINE_API_KEY: z.string().optional(),
    MANAGED_ENGINE_BASE_URL: z.string().url().optional(),
    MANAGED_ENGINE_MODEL: z.string().optional(),
    ANTHROPIC_BASE_URL: z
      .string()
      .url()
      .optional()
      .describe("BYOK Anthropic endpoint (default https://api.anthropic.com)"),
    OPENAI_BASE_URL: z.string().url().optional().describe("BYOK OpenAI endpoint (default https://api.openai.com/v1)"),
    PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(120_000),
    PROVIDER_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
    // machines (docs/machines.md)
    MACHINE_PROVIDER: z
      .enum(["local-desktop", "none"])
      .default("local-desktop")
      .describe("managed machine provider for live keys: local-desktop (Xvfb desktops on this host) or none"),
    MACHINES_ROOT: z
      .string()
      .optional()
      .describe(
        "absolute directory holding machine homes (default DATA_DIR/machines); its parents must be traversable",
      ),
    MACHINE_PUBLIC_HOST: z.string().default("127.0.0.1").describe("host name put into connection answers"),
    MACHINE_BIN_PATH: z
      .string()
      .regex(/^\/[^\0]*$/, "must be a colon-separated list of absolute directories")
      .optional()
      .describe("where the desktop programs (Xvfb, openbox, chromium, xdotool...) are looked up (default root's PATH)"),
    MACHINE_CHROMIUM_SANDBOX: z
      .enum(["0", "1", "true", "false"])
      .default("1")
      .transform((v) => v === "1" || v === "true")
      .describe("1: the desktops' Chromium keeps its sandbox (needs unprivileged user namespaces); 0: --no-sandbox"),
    MACHINE_STOP_ON_SHUTDOWN: z
      .enum(["0", "1", "true", "false"])
      .default("1")
      .transform((v) => v === "1" || v === "true")
      .describe(
        "1: the service's shutdown stops its running desktops (files kept) and its next start resumes them; 0: desktops outlive the process (several API processes on one host)",
      ),
    MACHINE_WEBSOCKET_LISTEN_HOST: z
      .string()
      .default("127.0.0.1")
      .describe("address websockify (noVNC) listens on; 0.0.0.0 to serve browsers on other hosts"),
    MACHINE_DISPLAY_RANGE: z
      .string()
      .regex(/^\d{1,4}-\d{1,4}$/, "must be FIRST-LAST, e.g. 100-899")
      .default("100-899")
      .describe("X display numbers the local desktop provider may use"),
    MACHINE_ISOLATION: z
      .enum(["namespaces", "none"])
      .default("namespaces")
      .describe(
        "namespaces: each machine in its own network and mount namespace, and a host that cannot build them fails the machine's start (docs/security.md); none: machines share the host's network and files (explicit opt-out)",
      ),
    MACHINE_ISOLATION_POOL: z
      .string()
      .regex(/^\d{1,3}(\.\d{1,3}){3}\/\d{1,2}$/, "must be an IPv4 CIDR, e.g. 10.231.0.0/16")
      .default("10.231.0.0/16")
      .describe("IPv4 pool of the machines' links (a /30 each); must not overlap the host's networks"),
    MACHINE_HIDDEN_PATHS: z
      .string()
      .regex(/^\/[^\0]*$/, "must be a colon-separated list of absolute paths")
      .optional()
      .describe(
        "more paths machines must not see, besides DATA_DIR, the repository, MACHINES_ROOT and /root, /home...",
      ),
    MACHINE_LIMITS: z
      .enum(["cgroup", "none"])
      .default("cgroup")
      .describe(
        "cgroup: each isolated machine runs in a cgroup with the MACHINE_PIDS_MAX/MEMORY_MAX/SWAP_MAX/CPU_* limits, and a host that cannot create it fails the machine's start (docs/security.md); none: no limits (explicit opt-out)",
      ),
    MACHINE_PIDS_MAX: z
      .string()
      .regex(/^(max|[1-9]\d{0,6})$/, "must be a number of tasks or max")
      .default("2048")
      .describe("tasks (processes and threads) per machine; a desktop with Chromium uses a few hundred"),
    MACHINE_MEMORY_MAX: z
      .string()
      .regex(/^(max|\d+(\.\d+)?[kmgt]?)$/i, "must be bytes with an optional k/m/g/t suffix, or max")
      .default("4g")
      .describe(
        "memory per machine (page cache and its /tmp, /var/tmp, /dev/shm included); beyond it the kernel kills inside the machine",
      ),
    MACHINE_SWAP_MAX: z
      .string()
      .regex(/^(max|\d+(\.\d+)?[kmgt]?)$/i, "must be bytes with an optional k/m/g/t suffix, or max")
      .default("0")
      .describe("swap per machine on top of MACHINE_MEMORY_MAX, where the memory controller accounts swap"),
    MACHINE_CPU_WEIGHT: z.coerce
      .number()
      .int()
      .min(1)
      .max(10_000)
      .default(100)
      .describe("relative CPU weight of each machine (cgroup v2 cpu.weight; v1 cpu.shares = weight x 10.24)"),
    MACHINE_CPU_MAX: z
      .string()
      .regex(/^(max|\d+(\.\d+)?)$/, "must be a number of CPUs or max")
      .default("2")
      .describe("at most this many CPUs' worth of time per machine (a quota per 100 ms period)"),
    MACHINE_CGROUP_PARENT: z
      .string()
      .regex(/^\/[A-Za-z0-9._/-]*$/, "must be an absolute path inside the cgroup hierarchy")
      .optional()
      .describe(
        "where machines' cgroups go inside the hierarchy (default /cua-machines under cgroup v2, the service's own cgroup + /cua-machines under v1)",
      ),
    MACHINE_TMP_SIZE: z
      .string()
      .regex(/^\d+[kmg]?$/i, "must be a tmpfs size: bytes with an optional k/m/g suffix")
      .default("1g")
      .describe("size of each machine's private /tmp and /var/tmp (tmpfs)"),
    MACHINE_SHM_SIZE: z
      .string()
      .regex(/^\d+[kmg]?$/i, "must be a tmpfs size: bytes with an optional k/m/g suffix")
      .default("1g")
      .describe("size of each machine's private /dev/shm (tmpfs; Chromium's shared memory)"),
    MACHINE_METER_INTERVAL_MS: z.coerce
      .number()
      .int()
      .min(10)
      .max(3_600_000)
      .default(15_000)
      .describe("how often metering, TTL expiry and frame purge run"),
    MACHINE_MINUTE_MS: z.coerce
      .number()
      .int()
      .min(10)
      .max(60_000)
      .default(60_000)
      .describe("length of a billing/TTL minute in ms; only tests and demos shorten it"),
    // task runs and the durable executor (docs/runs.md, docs/executor.md)
    INNGEST_BASE_URL: z
      .string()
      .url()
      .optional()
      .describe(
        "a self-hosted Inngest server; with it (or INNGEST_SIGNING_KEY) the functions are served at /api/inngest instead of the embedded executor",
      ),
    INNGEST_SIGNING_KEY: z.string().optional().describe("verifies requests from the Inngest server (production)"),
    INNGEST_SIGNING_KEY_FALLBACK: z.string().optional().describe("previous signing key during rotation"),
    INNGEST_EVENT_KEY: z.string().optional().describe("sends events to the Inngest server"),
    INNGEST_DEV: bool.describe("talk to a local Inngest dev server (no signatures)"),
    EXECUTOR_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(16)
      .describe("embedded executor: work items processed at once per process"),
    EXECUTOR_TIMER_CONCURRENCY: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(4)
      .describe(
        "embedded executor: timers (schedule fires, sleeps, wait timeouts, cron ticks) processed at once per process, in a lane of their own",
      ),
    EXECUTOR_POLL_MS: z.coerce
      .number()
      .int()
      .min(5)
      .max(10_000)
      .default(100)
      .describe("embedded executor: longest idle wait between polls"),
    EXECUTOR_LEASE_MS: z.coerce
      .number()
      .int()
      .min(500)
      .max(600_000)
      .default(30_000)
      .describe("embedded executor: lease of a work item (a dead process's work is taken over after it)"),
    RUN_DEADLINE_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(86_400)
      .describe("run deadline (SPEC: 86400 s); only tests and demos shorten it"),
    RUN_CALLBACK_BACKOFF_SECONDS: z
      .string()
      .regex(/^\d{1,5},\d{1,5}$/, "two delays in seconds, e.g. 10,60")
      .default("10,60")
      .describe("delays before the second and third callback attempts"),
    RUN_CALLBACK_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .min(100)
      .max(60_000)
      .default(10_000)
      .describe("one callback attempt's timeout"),
    RUN_SSE_HEARTBEAT_MS: z.coerce
      .number()
      .int()
      .min(50)
      .max(60_000)
      .default(15_000)
      .describe("`: ping` interval of run event streams"),
    RUN_EVENTS_POLL_MS: z.coerce
      .number()
      .int()
      .min(50)
      .max(60_000)
      .default(1000)
      .describe("how often event streams look for frames written by other processes"),
  })
  .superRefine((env, ctx) => {
    // isolated machines have a /tmp, /var/tmp and /dev/shm of their own (docs/security.md): programs the
    // desktops run cannot come from there
    if (env.MACHINE_ISOLATION === "none" || !env.MACHINE_BIN_PATH) return;
    for (const dir of env.MACHINE_BIN_PATH.split(":")) {
      if (/^\/(tmp|var\/tmp|dev\/shm)(\/|$)/.test(dir))
        ctx.addIssue({
          code: "custom",
          path: ["MACHINE_BIN_PATH"],
          message: `${dir}: isolated machines have a private /tmp, /var/tmp and /dev/shm, so their programs cannot be there (use another directory, or MACHINE_ISOLATION=none)`,
        });
    }
  });

export type Env = z.infer<typeof EnvSchema>;

export function loadEnv(source: Record<string, string | undefined> = process.env): Env {
  const r = EnvSchema.safeParse(source);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return r.data;
}

// The service process's environment as a plain object (issue 16, docs/runs.md "Configuration").
//
// Node's process.env is an exotic object: every read and every enumeration goes through the C++
// environment. The Inngest SDK (4.24.0) enumerates all of it several times per call it handles
// (inngest/helpers/env.js getProcessEnv: Object.entries(process.env), once per request and once per
// response header set), which the embedded executor pays at every run step: about 1 ms of CPU per step in
// the runs benchmark's profile, the SDK's largest cost. A plain copy answers the same values at the cost of
// an ordinary object.
//
// What changes: only writes. A value assigned afterwards is kept as given (the real object turns it into a
// string) and reaches child processes (child_process reads process.env when no env is passed) but not the
// C environment of this process (getenv in native code). The service never assigns environment variables
// after it starts; its configuration is read once by loadEnv().
export function useEnvSnapshot(): void {
  const copy: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (typeof v === "string") copy[k] = v;
  process.env = copy as NodeJS.ProcessEnv;
}
