import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { checkHealth } from "./health.ts";

export const getHealthOp = defineOperation({
  id: "health.get",
  method: "GET",
  path: "/health",
  auth: "public",
  input: z.void(),
  output: z.object({
    status: z.enum(["ok", "degraded"]).describe("ok when every check passes"),
    service: z.literal("api").describe("which service answers (DECISIONS.md Compatibility amendments)"),
    api_version: z.literal("v1").describe("the API's major version (its path prefix)"),
    version: z.string().describe("service version"),
    time: z.string().describe("server time, ISO 8601"),
    checks: z
      .object({
        database: z.enum(["ok", "unavailable"]).describe("the database answered a query"),
        executor: z.enum(["ok", "unavailable", "not_configured"]).describe("durable executor state"),
      })
      .describe("individual checks"),
  }),
  docs: {
    tags: ["Account"],
    summary: "Health check",
    description: "Public. 200 when the database answers, 503 with status degraded when it does not.",
  },
  handler: async (ctx) => {
    const r = await checkHealth(ctx.deps);
    if (r.checks.database !== "ok") {
      ctx.res.status = 503;
      ctx.res.headers["Retry-After"] = "5";
    }
    return { ...r, service: "api" as const, api_version: "v1" as const };
  },
});
