// GET /v1/machines/pricing and GET /v1/machines/health (static paths: listed before /machines/{id}).
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { machinesHealth } from "./machines-health.ts";
import { MACHINE_PRICING } from "./pricing.ts";
import { MachinesHealth, PricingResponse } from "./schemas.ts";

export const machinePricingOp = defineOperation({
  id: "machines.pricing",
  method: "GET",
  path: "/machines/pricing",
  scope: "machines:read",
  input: z.void(),
  output: PricingResponse,
  docs: {
    tags: ["Machines"],
    summary: "Machine pricing",
    description: "Effective per-minute metering rates, the provisioning gate and the snapshot price.",
  },
  console: "shared",
  handler: () => MACHINE_PRICING,
});

export const machinesHealthOp = defineOperation({
  id: "machines.health",
  method: "GET",
  path: "/machines/health",
  auth: "public",
  input: z.void(),
  output: MachinesHealth.extend({
    service: z.literal("machines").describe("which service answers (DECISIONS.md Compatibility amendments)"),
    api_version: z.literal("v1").describe("the API's major version (its path prefix)"),
  }),
  docs: {
    tags: ["Machines"],
    summary: "Machine service health",
    description:
      "Public. Whether a live desktop can be provisioned on this server now: the managed provider's programs (missing_packages names the Debian packages to install), root, and the last desktop start; degraded otherwise.",
  },
  handler: async (ctx) => ({
    ...(await machinesHealth(ctx.deps)),
    service: "machines" as const,
    api_version: "v1" as const,
  }),
});
