import { defineOperation } from "../operations/define.ts";
import { resumeRun } from "./resume-run.ts";
import { ResumeRunBody, RunIdInput, RunRecordSchema } from "./schemas.ts";

export const resumeRunOp = defineOperation({
  id: "runs.resume",
  method: "POST",
  path: "/runs/{id}/resume",
  scope: "runs:write",
  input: ResumeRunBody.extend(RunIdInput.shape),
  output: RunRecordSchema,
  errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND", "NOT_AWAITING_HUMAN", "RESUME_CONFLICT"],
  docs: {
    tags: ["Runs"],
    summary: "Resume a task run",
    description:
      "awaiting_human -> running, with an optional note. Another state: 409 NOT_AWAITING_HUMAN; a resume that lost a race: 409 RESUME_CONFLICT.",
  },
  console: "shared",
  handler: (ctx, input) => resumeRun(ctx.deps, ctx.caller, input.id, input.note?.trim() || null),
});
