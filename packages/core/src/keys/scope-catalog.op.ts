// The console's scope picker: every scope and the default sets of /v1/keys (operator-only: no REST route).
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { ALL_SCOPES, defaultScopes } from "./scopes.ts";

export const scopeCatalogOp = defineOperation({
  id: "keys.scopes",
  method: "GET",
  path: null,
  input: z.void(),
  output: z.object({
    scopes: z.array(z.string()).describe("every scope"),
    defaults: z.object({ live: z.array(z.string()), test: z.array(z.string()) }).describe("the /v1/keys default sets"),
  }),
  docs: { tags: ["Account"], summary: "Scope catalog", description: "Every scope and the default sets per mode." },
  console: "operator-only",
  handler: () => ({ scopes: [...ALL_SCOPES], defaults: { live: defaultScopes("live"), test: defaultScopes("test") } }),
});
