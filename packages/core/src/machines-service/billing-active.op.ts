import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { activeBilling } from "./billing-active.ts";

const ActiveMachine = z.object({
  machine_id: z.string(),
  display_name: z.string(),
  status: z.string().describe("running, stopped or suspended (each metered at its rate)"),
  os_type: z.string(),
  rate_credits_per_hour: z.number().int().describe("the rate of its current status (GET /v1/machines/pricing)"),
  accrued_credits: z.number().int().describe("credits charged for this machine so far"),
  unbilled_credits: z.number().int().describe("whole credits accrued since the last charge (charged at the next tick)"),
  metered_since: z.string().describe("created at, ISO 8601"),
});

export const activeBillingOp = defineOperation({
  id: "billing.active",
  method: "GET",
  path: "/billing/active",
  scope: "usage",
  input: z.void(),
  output: z.object({
    mode: z.enum(["live", "test"]).describe("the caller's mode (test keys meter nothing)"),
    machines: z.array(ActiveMachine).describe("metered machines now"),
    schedules: z
      .array(
        z.object({
          schedule_id: z.string(),
          name: z.string(),
          schedule_run_id: z.string().describe("the history entry (GET /v1/schedules/{id}/runs/{run_id})"),
          run_id: z.string().nullable().describe("the task run executing now"),
          rate_credits_per_hour: z.number().int().describe("10 credits per minute"),
          accrued_credits: z.number().int().describe("what the meter would charge now (20 minimum, 6-hour cap)"),
          metered_since: z.string().describe("when the fire started the run, ISO 8601"),
        }),
      )
      .describe("live managed schedule executions running now (charged when their run ends)"),
    total_rate_credits_per_hour: z.number().int(),
    total_accrued_credits: z.number().int(),
    time: z.string().describe("server time"),
  }),
  docs: {
    tags: ["Account"],
    summary: "What is metered now",
    description:
      "Live managed machines that accrue credits now (running 5/h Linux, 9/h Windows; stopped or suspended 1/h) with their rate, what they have cost and what has accrued since the last charge. Schedules: executions of live managed schedules whose run is still going (10 credits per minute, charged when the run ends). Test keys and external machines meter nothing. Free.",
  },
  console: "shared",
  handler: (ctx) => activeBilling(ctx.deps, ctx.caller),
});
