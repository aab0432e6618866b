import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { modelsCatalog } from "./pricing.ts";

export const listModelsOp = defineOperation({
  id: "models.list",
  method: "GET",
  path: "/models",
  input: z.void(),
  output: z.object({
    models: z
      .array(z.object({ id: z.string(), provider: z.string(), cua_versions: z.array(z.string()) }))
      .describe("engines and provider models"),
    cua_versions: z
      .array(z.object({ id: z.string(), default: z.boolean(), step_credits: z.number().int() }))
      .describe("v5 (default), v4, v3, v1"),
    action_types: z.array(z.string()).describe("every action_type an engine returns"),
    pricing: z.record(z.string(), z.unknown()).describe("every effective price and surcharge, incl. pricing.schedules"),
  }),
  docs: {
    tags: ["Prediction"],
    summary: "Models, CUA versions and pricing",
    description: "Needs any valid key, no scope.",
  },
  handler: () => modelsCatalog(),
});
