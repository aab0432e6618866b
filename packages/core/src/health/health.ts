// GET /v1/health: the database answers a query within 3 s (else 503, DECISIONS.md), and the durable
// executor's state (an unavailable executor is reported as degraded, still 200).
import type { CoreDeps } from "../deps.ts";

export interface HealthReport {
  status: "ok" | "degraded";
  version: string;
  time: string;
  checks: { database: "ok" | "unavailable"; executor: "ok" | "unavailable" | "not_configured" };
}

export async function checkHealth(
  deps: CoreDeps & { version: string; durable?: { health(): Promise<{ ok: boolean }> } },
): Promise<HealthReport> {
  let database: "ok" | "unavailable" = "ok";
  try {
    await Promise.race([
      deps.db.$queryRaw`SELECT 1`,
      new Promise((_, rej) => setTimeout(() => rej(new Error("timeout")), 3000).unref()),
    ]);
  } catch {
    database = "unavailable";
  }
  let executor: "ok" | "unavailable" | "not_configured" = "not_configured";
  if (deps.durable) {
    try {
      executor = (await deps.durable.health()).ok ? "ok" : "unavailable";
    } catch {
      executor = "unavailable";
    }
  }
  return {
    status: database === "ok" && executor !== "unavailable" ? "ok" : "degraded",
    version: deps.version,
    time: new Date().toISOString(),
    checks: { database, executor },
  };
}
