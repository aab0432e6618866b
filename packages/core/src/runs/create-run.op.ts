import { callContext } from "../operations/call-context.ts";
import { defineOperation } from "../operations/define.ts";
import { createRun } from "./create-run.ts";
import { CreateRunBody, RunRecordSchema } from "./schemas.ts";

export const createRunOp = defineOperation({
  id: "runs.create",
  method: "POST",
  path: "/runs",
  scope: "runs:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: CreateRunBody,
  output: RunRecordSchema,
  billing: "each completed step: 5 credits (v3/v4/v5), 8 (v1); 0 with BYOK or a test key",
  errors: [
    "INVALID_MACHINE_ID",
    "MACHINE_NOT_FOUND",
    "INPUT_TOO_LARGE",
    "INSUFFICIENT_CREDITS",
    "INVALID_STATE",
    "LLM_PROVIDER_UNSUPPORTED",
    "LLM_KEY_NOT_CONFIGURED",
  ],
  docs: {
    tags: ["Runs"],
    summary: "Create a task run",
    description:
      "Starts an agent on a machine (status queued). The wallet must cover one step (5 credits v3/v4/v5, 8 v1; 0 with BYOK or a test key); each completed step is billed once. `webhook_secret` is in this response and its exact replay only. BYOK: X-LLM-Provider / X-LLM-Api-Key (live keys; a test key gets 422 LLM_PROVIDER_UNSUPPORTED).",
  },
  console: "shared",
  handler: (ctx, input) => createRun(ctx.deps, callContext(ctx), input),
});
