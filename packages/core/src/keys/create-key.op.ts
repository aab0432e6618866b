import { defineOperation } from "../operations/define.ts";
import { createKey } from "./create-key.ts";
import { CreatedKey, CreateKeyInput } from "./schemas.ts";

export const createKeyOp = defineOperation({
  id: "keys.create",
  method: "POST",
  path: "/keys",
  scope: "keys",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: CreateKeyInput,
  output: CreatedKey,
  errors: ["KEY_LIMIT_REACHED", "INSUFFICIENT_SCOPE"],
  docs: {
    tags: ["Account"],
    summary: "Create an API key",
    description:
      "Creates a key in the caller's mode. The raw key is in this response only. A key may grant only scopes it holds; `keys` is never a default.",
  },
  console: "shared",
  handler: (ctx, input) => createKey(ctx.deps, ctx.caller, input),
});
