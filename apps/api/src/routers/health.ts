import { z } from "zod";
import { router } from "../trpc/init.ts";
import { publicProcedure } from "../trpc/procedures.ts";

const HealthOutput = z.object({
  status: z.enum(["ok", "degraded"]).describe("ok when every check passes"),
  version: z.string().describe("service version"),
  time: z.string().describe("server time, ISO 8601"),
  checks: z
    .object({
      database: z.enum(["ok", "unavailable"]).describe("the database answered a query"),
      executor: z.enum(["ok", "unavailable", "not_configured"]).describe("durable executor state"),
    })
    .describe("individual checks"),
});

export const healthRouter = router({
  get: publicProcedure
    .meta({
      public: true,
      openapi: {
        method: "GET",
        path: "/health",
        tags: ["Account"],
        summary: "Health check",
        description: "Public. 200 when the database answers, 503 with status degraded when it does not.",
      },
    })
    .input(z.void())
    .output(HealthOutput)
    .query(async ({ ctx }) => {
      let database: "ok" | "unavailable" = "ok";
      try {
        await Promise.race([
          ctx.deps.db.$queryRaw`SELECT 1`,
          new Promise((_, rej) => setTimeout(() => rej(new Error("timeout")), 3000).unref()),
        ]);
      } catch {
        database = "unavailable";
      }
      let executor: "ok" | "unavailable" | "not_configured" = "not_configured";
      if (ctx.deps.durable) {
        try {
          executor = (await ctx.deps.durable.health()).ok ? "ok" : "unavailable";
        } catch {
          executor = "unavailable";
        }
      }
      const ok = database === "ok";
      if (!ok) {
        ctx.res.status = 503;
        ctx.res.headers["Retry-After"] = "5";
      }
      return {
        // 503 follows the database (DECISIONS.md); an unavailable executor is reported as degraded
        status: ok && executor !== "unavailable" ? ("ok" as const) : ("degraded" as const),
        version: ctx.deps.version,
        time: new Date().toISOString(),
        checks: { database, executor },
      };
    }),
});
