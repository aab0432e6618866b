import { defineOperation } from "../operations/define.ts";
import { getRun, listRuns } from "./get-run.ts";
import { ListRunsQuery, RunIdInput, RunList, RunRecordSchema } from "./schemas.ts";

export const listRunsOp = defineOperation({
  id: "runs.list",
  method: "GET",
  path: "/runs",
  scope: "runs:read",
  input: ListRunsQuery,
  output: RunList,
  errors: ["INVALID_LIMIT", "INVALID_STATUS_FILTER", "INVALID_CURSOR"],
  docs: { tags: ["Runs"], summary: "List task runs", description: "Newest first; filter by status; cursor-paginated." },
  console: "shared",
  handler: (ctx, input) =>
    listRuns(ctx.deps, ctx.caller, {
      status: input.status,
      limit: input.limit,
      cursor: input.cursor,
    }),
});

export const getRunOp = defineOperation({
  id: "runs.get",
  method: "GET",
  path: "/runs/{id}",
  scope: "runs:read",
  input: RunIdInput,
  output: RunRecordSchema,
  errors: ["INVALID_RUN_ID", "RUN_NOT_FOUND"],
  docs: {
    tags: ["Runs"],
    summary: "Get a task run",
    description: "The authoritative run record, with its callback delivery history.",
  },
  console: "shared",
  handler: (ctx, input) => getRun(ctx.deps, ctx.caller, input.id),
});
