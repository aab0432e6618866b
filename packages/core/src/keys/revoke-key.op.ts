import { defineOperation } from "../operations/define.ts";
import { revokeKey } from "./revoke-key.ts";
import { DeletedKey, DeleteKeyInput } from "./schemas.ts";

export const revokeKeyOp = defineOperation({
  id: "keys.revoke",
  method: "DELETE",
  path: "/keys/{key_id}",
  scope: "keys",
  input: DeleteKeyInput,
  output: DeletedKey,
  errors: ["INVALID_KEY_ID", "KEY_NOT_FOUND"],
  docs: {
    tags: ["Account"],
    summary: "Revoke an API key",
    description: "A key of the other mode or an unknown id is 404.",
  },
  console: "shared",
  handler: (ctx, input) => revokeKey(ctx.deps, ctx.caller, input.key_id),
});
