import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { limitQuery, listOf } from "../operations/list.ts";
import { listKeys } from "./list-keys.ts";
import { KeyItem } from "./schemas.ts";

export const listKeysOp = defineOperation({
  id: "keys.list",
  method: "GET",
  path: "/keys",
  scope: "keys",
  input: z
    .object({
      limit: limitQuery(),
      cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
    })
    .optional(),
  output: listOf(KeyItem, "active keys, newest first", {
    keys: z.array(KeyItem).describe("the same array as data (SPEC's name)"),
  }),
  errors: ["INVALID_LIMIT", "INVALID_CURSOR"],
  docs: {
    tags: ["Account"],
    summary: "List API keys",
    description: "A test key sees test keys; a live key sees live and legacy keys.",
  },
  console: "shared",
  handler: (ctx, input) => listKeys(ctx.deps, ctx.caller, input ?? {}),
});
