// Machine routes served as plain Fastify handlers:
//   GET  /v1/machines/{id}/screenshot     JSON, or the raw PNG with `Accept: image/png` (the console's
//                                         live view); runs the operation's compiled chain (auth, scope, limits)
//   the external-machine driver protocol  device-token routes with their own rate limits (SPEC "Limits"):
//     (their OpenAPI entries come from the registry: packages/core/src/machines-service/driver-protocol.op.ts)
//     GET  /v1/machines/{id}/commands     long poll
//     POST /v1/machines/{id}/observations
//     POST /v1/machines/{id}/commands/{command_id}/results
//     POST /v1/machines/{id}/heartbeat
// Also builds the machine runtime (providers) from the environment.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { constants as zlibConstants } from "node:zlib";
import { CoreError } from "@cua/base/errors";
import { readDeviceToken } from "@cua/core/machines-service/device-token";
import {
  authenticateDevice,
  heartbeat,
  pollCommands,
  postObservation,
  postResult,
} from "@cua/core/machines-service/driver-protocol";
import { MachinesRuntime } from "@cua/core/machines-service/runtime";
import { zodToCoreError } from "@cua/machines/commands";
import { HeartbeatBody, ObservationBody, ResultBody } from "@cua/machines/driver-wire";
import { limitsFromSettings } from "@cua/machines/isolation/cgroup";
import { LocalDesktopProvider } from "@cua/machines/local-desktop-provider";
import { MockMachineProvider } from "@cua/machines/mock-provider";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { AppDeps } from "../app-deps.ts";
import type { Env } from "../env.ts";
import { baseUrlOf, createContextFactory } from "../trpc/context.ts";
import { RateLimiter } from "./rate-limit.ts";
import { ReplayedResponse, renderError, toCoreError } from "./render-error.ts";
import { callOperation } from "./v1-routes.ts";

/** The repository this service runs from (its .env, sources, local data): hidden from machines. */
const REPOSITORY_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

/**
 * DATA_DIR holds the key file, PGlite and by default the machines' homes: other users may at most
 * traverse it (0711 when the homes are inside, else 0700), whatever the umask made it.
 */
function tightenDataDir(dataDir: string, rootDir: string): void {
  try {
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dataDir, rootDir.startsWith(`${dataDir}/`) ? 0o711 : 0o700);
  } catch {}
}

export function machinesRuntimeFromEnv(env: Env): MachinesRuntime {
  const [lo, hi] = env.MACHINE_DISPLAY_RANGE.split("-").map(Number) as [number, number];
  const rootDir = path.resolve(env.MACHINES_ROOT ?? path.join(env.DATA_DIR, "machines"));
  if (env.MACHINE_PROVIDER !== "none") tightenDataDir(path.resolve(env.DATA_DIR), rootDir);
  const managed =
    env.MACHINE_PROVIDER === "none"
      ? null
      : new LocalDesktopProvider({
          rootDir,
          displayRange: [lo, hi],
          publicHost: env.MACHINE_PUBLIC_HOST,
          websocketListenHost: env.MACHINE_WEBSOCKET_LISTEN_HOST,
          ...(env.MACHINE_BIN_PATH ? { searchPath: env.MACHINE_BIN_PATH } : {}),
          chromiumSandbox: env.MACHINE_CHROMIUM_SANDBOX,
          // docs/security.md: machines never see the service's data or its repository (.env)
          isolation: env.MACHINE_ISOLATION,
          isolationPool: env.MACHINE_ISOLATION_POOL,
          isolationLimits: {
            limits:
              env.MACHINE_LIMITS === "none"
                ? null
                : limitsFromSettings({
                    pids: env.MACHINE_PIDS_MAX,
                    memory: env.MACHINE_MEMORY_MAX,
                    swap: env.MACHINE_SWAP_MAX,
                    cpuWeight: env.MACHINE_CPU_WEIGHT,
                    cpus: env.MACHINE_CPU_MAX,
                  }),
            cgroupParent: env.MACHINE_CGROUP_PARENT ?? null,
            tmpSize: env.MACHINE_TMP_SIZE,
            shmSize: env.MACHINE_SHM_SIZE,
          },
          hiddenPaths: [
            path.resolve(env.DATA_DIR),
            REPOSITORY_ROOT,
            ...(env.MACHINE_HIDDEN_PATHS?.split(":").filter(Boolean) ?? []),
          ],
        });
  return new MachinesRuntime({
    managed,
    mock: new MockMachineProvider(),
    minuteMs: env.MACHINE_MINUTE_MS,
    ...(env.PUBLIC_BASE_URL ? { publicBaseUrl: env.PUBLIC_BASE_URL } : {}),
  });
}

// ------------------------------------------------------------------------------------------------
// driver rate limits (SPEC.md "Limits"), fixed windows in the API's limiter store

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DRIVER_LIMITS = {
  peer: [1000, 40_000],
  token: [300, 12_000],
  observations: [60, 3600],
  account: [1200, 48_000],
} as const;

/**
 * The minute and hour windows of the driver buckets, leased like the API keys' limits (rate-limit.ts: with a
 * shared store a process takes a hundredth of a limit per store round trip and refills in the background,
 * so a request rarely waits for the store; limits under 200 per window stay one store hit per request, exact).
 * One pair per limiter store.
 */
const driverWindows = new WeakMap<object, { minute: RateLimiter; hour: RateLimiter }>();

function windowsOf(deps: AppDeps) {
  let w = driverWindows.get(deps.limiter);
  if (!w) {
    w = {
      minute: new RateLimiter(deps.limiter.store, 1, MINUTE),
      hour: new RateLimiter(deps.limiter.store, 1, HOUR),
    };
    driverWindows.set(deps.limiter, w);
  }
  return w;
}

/** Counts one request in each bucket (minute and hour windows), all at once; 429 if any is over. */
async function limit(deps: AppDeps, buckets: [string, readonly [number, number]][]): Promise<void> {
  const scale = deps.env.RATE_LIMIT_SCALE;
  const windows = windowsOf(deps);
  const checks = buckets.flatMap(([bucket, [perMinute, perHour]]) =>
    (
      [
        [windows.minute, MINUTE, perMinute],
        [windows.hour, HOUR, perHour],
      ] as const
    ).map(async ([limiter, windowMs, max]) => {
      const cap = Math.max(1, Math.floor(max * scale));
      const r = await limiter.take(`drv:${bucket}:${windowMs}`, cap);
      return { over: !r.allowed, windowMs, cap, reset: r.reset };
    }),
  );
  const over = (await Promise.all(checks)).filter((c) => c.over).sort((a, b) => b.windowMs - a.windowMs)[0];
  if (over) {
    throw new CoreError(
      "RATE_LIMIT_EXCEEDED",
      `At most ${over.cap} requests per ${over.windowMs === MINUTE ? "minute" : "hour"} here.`,
      { retry_after: over.reset },
    );
  }
}

function sendError(
  deps: AppDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  e: unknown,
  extra: Record<string, string> = {},
) {
  if (e instanceof ReplayedResponse || (e as { cause?: unknown })?.cause instanceof ReplayedResponse) {
    const r = (e instanceof ReplayedResponse ? e : (e as { cause: ReplayedResponse }).cause) as ReplayedResponse;
    return reply
      .code(r.status)
      .headers({ ...extra, ...r.headers })
      .type("application/json")
      .send(r.body);
  }
  const ce = toCoreError(e, req.method === "GET" ? "query" : "body");
  if (ce.code === "INTERNAL_ERROR")
    req.log.error({ err: (ce as { original?: unknown }).original ?? e }, "internal error");
  const r = renderError(ce, String(req.id), baseUrlOf({ deps, req }));
  return reply
    .code(r.status)
    .headers({ ...extra, ...r.headers })
    .type("application/json")
    .send(r.body);
}

function parse<T extends z.ZodType>(schema: T, value: unknown, prefix: string): z.output<T> {
  const r = schema.safeParse(value);
  if (!r.success) throw zodToCoreError(r.error, prefix);
  return r.data;
}

type DriverHandler = (
  deps: AppDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  machine: Awaited<ReturnType<typeof authenticateDevice>>,
) => Promise<unknown>;

function driverRoute(deps: AppDeps, handler: DriverHandler, opts: { observations?: boolean; status?: number } = {}) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      // the per-peer limit counts every request before authentication (and its 429 wins over a 401);
      // the token lookup runs alongside it
      const { id } = req.params as { id: string };
      const [peer, auth] = await Promise.allSettled([
        limit(deps, [[`peer:${req.ip}`, DRIVER_LIMITS.peer]]),
        (async () => {
          const token = readDeviceToken(
            typeof req.headers.authorization === "string" ? req.headers.authorization : undefined,
          );
          return authenticateDevice(deps, token, id);
        })(),
      ]);
      if (peer.status === "rejected") throw peer.reason;
      if (auth.status === "rejected") throw auth.reason;
      const machine = auth.value;
      await limit(deps, [
        [`token:${machine.id}`, DRIVER_LIMITS.token],
        [`acct:${machine.accountId}`, DRIVER_LIMITS.account],
        ...(opts.observations
          ? [[`obs:${machine.id}`, DRIVER_LIMITS.observations] as [string, readonly [number, number]]]
          : []),
      ]);
      const body = await handler(deps, req, reply, machine);
      return reply
        .code(opts.status ?? 200)
        .header("Cache-Control", "no-store")
        .send(body);
    } catch (e) {
      return sendError(deps, req, reply, e);
    }
  };
}

// A screenshot's JSON is mostly a base64 PNG: compression only takes back base64's third (the PNG inside is
// already deflated), and does that as well at the fastest levels (gzip 1, brotli 1) as at the defaults
// (gzip 6, brotli 4), in a quarter to a half of the time; and in one synchronous call up to 256 KiB (the
// plugin streams anything over 8 KiB on two cores, a pipeline of thread-pool hops that cost a loaded host
// more than the compression itself). Issue 16; docs/machines.md "Screenshots".
const SCREENSHOT_COMPRESSION = {
  encodings: ["br", "gzip"] as ("br" | "gzip")[],
  zlibOptions: { level: 1 },
  brotliOptions: { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 1 } },
  syncThreshold: 256 * 1024,
};

export function registerMachinePlainRoutes(app: FastifyInstance, deps: AppDeps): void {
  app.get("/v1/machines/:id/screenshot", { compress: SCREENSHOT_COMPRESSION }, async (req, reply) => {
    const ctx = createContextFactory(deps, "rest")({ req });
    try {
      const { id } = req.params as { id: string };
      const body = (await callOperation(ctx, "machines.screenshot", { id })) as {
        mime_type: string;
        image_b64: string;
      };
      reply.headers(ctx.res.headers);
      if ((req.headers.accept ?? "").includes("image/png") && body.mime_type === "image/png") {
        return reply
          .code(200)
          .type("image/png")
          .header("Cache-Control", "no-store")
          .send(Buffer.from(body.image_b64, "base64"));
      }
      return reply.code(200).send(body);
    } catch (e) {
      return sendError(deps, req, reply, e, ctx.res.headers);
    }
  });

  app.get(
    "/v1/machines/:id/commands",
    driverRoute(deps, async (d, req, reply, machine) => {
      const abort = new AbortController();
      const onClose = () => abort.abort();
      req.raw.once("close", onClose);
      reply.raw.once("close", onClose);
      try {
        return await pollCommands(d, machine, req.query as Record<string, string>, abort.signal);
      } finally {
        req.raw.off("close", onClose);
        reply.raw.off("close", onClose);
      }
    }),
  );
  app.post(
    "/v1/machines/:id/observations",
    driverRoute(
      deps,
      async (d, req, _reply, machine) => postObservation(d, machine, parse(ObservationBody, req.body, "body")),
      {
        observations: true,
        status: 201,
      },
    ),
  );
  app.post(
    "/v1/machines/:id/commands/:command_id/results",
    driverRoute(deps, async (d, req, _reply, machine) => {
      const { command_id } = req.params as { command_id: string };
      return postResult(d, machine, command_id, parse(ResultBody, req.body, "body"));
    }),
  );
  app.post(
    "/v1/machines/:id/heartbeat",
    driverRoute(deps, async (d, req, _reply, machine) =>
      heartbeat(d, machine, parse(HeartbeatBody, req.body ?? undefined, "body")),
    ),
  );
}
