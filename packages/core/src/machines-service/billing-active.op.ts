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
    schedules: z.array(z.never()).describe("metered schedules now (this service runs no schedules yet: empty)"),
    total_rate_credits_per_hour: z.number().int(),
    total_accrued_credits: z.number().int(),
    time: z.string().describe("server time"),
  }),
  docs: {
    tags: ["Account"],
    summary: "What is metered now",
    description:
      "Live managed machines that accrue credits now (running 5/h Linux, 9/h Windows; stopped or suspended 1/h) with their rate, what they have cost and what has accrued since the last charge. Test keys and external machines meter nothing. Free.",
  },
  console: "shared",
  handler: (ctx) => activeBilling(ctx.deps, ctx.caller),
});
