import { modelsCatalog } from "@cua/core/pricing/pricing";
import { z } from "zod";
import { router } from "../trpc/init.ts";
import { apiProcedure } from "../trpc/procedures.ts";

const ModelsOutput = z.object({
  models: z
    .array(z.object({ id: z.string(), provider: z.string(), cua_versions: z.array(z.string()) }))
    .describe("engines and provider models"),
  cua_versions: z
    .array(z.object({ id: z.string(), default: z.boolean(), step_credits: z.number().int() }))
    .describe("v5 (default), v4, v3, v1"),
  action_types: z.array(z.string()).describe("every action_type an engine returns"),
  pricing: z.record(z.string(), z.unknown()).describe("every effective price and surcharge, incl. pricing.schedules"),
});

export const modelsRouter = router({
  list: apiProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/models",
        tags: ["Prediction"],
        summary: "Models, CUA versions and pricing",
        description: "Needs any valid key, no scope.",
      },
    })
    .input(z.void())
    .output(ModelsOutput)
    .query(() => modelsCatalog()),
});
