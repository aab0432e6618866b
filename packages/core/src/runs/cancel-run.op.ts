import { defineOperation } from "../operations/define.ts";
import { cancelRun } from "./cancel-run.ts";
import { RunIdInput, RunRecordSchema } from "./schemas.ts";

export const cancelRunOp = defineOperation({
  id: "runs.cancel",
  method: "POST",
  path: "/runs/{id}/cancel",
  scope: "runs:write",
  input: RunIdInput,
  output: RunRecordSchema,
  errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND", "INVALID_STATE"],
  docs: {
    tags: ["Runs"],
    summary: "Cancel a task run",
    description: "Any non-terminal state -> cancelled. A terminal run: 409 INVALID_STATE with current_state.",
  },
  console: "shared",
  handler: (ctx, input) => cancelRun(ctx.deps, ctx.caller, input.id),
});
