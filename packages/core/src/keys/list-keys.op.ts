import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { listKeys } from "./list-keys.ts";
import { KeyItem } from "./schemas.ts";

export const listKeysOp = defineOperation({
  id: "keys.list",
  method: "GET",
  path: "/keys",
  scope: "keys",
  input: z.void(),
  output: z.object({ keys: z.array(KeyItem).describe("active keys") }),
  docs: {
    tags: ["Account"],
    summary: "List API keys",
    description: "A test key sees test keys; a live key sees live and legacy keys.",
  },
  console: "shared",
  handler: (ctx) => listKeys(ctx.deps, ctx.caller),
});
