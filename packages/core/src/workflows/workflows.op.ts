// /v1/workflows (SPEC.md "Workflows"; DECISIONS.md "Workflows" and its Compatibility amendment). Order in
// the registry: the static /workflows/runs paths come before /workflows/{id} (trpc-to-openapi matches in
// list order).

import { CoreError } from "@cua/base/errors";
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { workflowsDeps } from "./ports.ts";
import {
  AdHocWorkflowRunBody,
  CreateWorkflowBody,
  ListWorkflowRunsQuery,
  ListWorkflowsQuery,
  ResumeWorkflowRunBody,
  StartWorkflowRunBody,
  UpdateWorkflowBody,
  WorkflowDeleted,
  WorkflowIdInput,
  WorkflowList,
  WorkflowRecordSchema,
  WorkflowRunId,
  WorkflowRunIdInput,
  WorkflowRunList,
  WorkflowRunRecordSchema,
  WorkflowVersionList,
} from "./schemas.ts";
import { streamWorkflowEvents } from "./workflow-events.ts";
import {
  cancelWorkflowRun,
  getWorkflowRun,
  listWorkflowRuns,
  resumeWorkflowRun,
  startAdHocRun,
  startWorkflowRun,
} from "./workflow-runs.ts";
import {
  createWorkflow,
  deleteWorkflow,
  getWorkflow,
  listWorkflows,
  listWorkflowVersions,
  updateWorkflow,
} from "./workflows.ts";

const tags = ["Workflows"];
const runErrors = ["INVALID_MACHINE_ID", "MACHINE_NOT_FOUND", "LLM_PROVIDER_UNSUPPORTED"] as const;
const startNote =
  "Inputs are checked against inputs_schema (422 with body.inputs.* paths); task steps without machine_id need the body's machine_id. Each task step starts a task run billed as a run (5 credits per agent step v3/v4/v5, 8 v1; 0 with BYOK or a test key); other steps are free. Guards: budget_cents, max_iterations, deadline_seconds (a breach fails the run with GUARD_EXCEEDED). `webhook_secret` is in this response only.";

export const createWorkflowOp = defineOperation({
  id: "workflows.create",
  method: "POST",
  path: "/workflows",
  scope: "workflows:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: CreateWorkflowBody,
  output: WorkflowRecordSchema,
  errors: [],
  docs: {
    tags,
    summary: "Create a workflow",
    description:
      "Version 1 of a workflow (DSL 2026-06-01). The definition is validated: 422 VALIDATION_ERROR with each problem's path in `details` (body.definition.steps.0.then.1.id). slug defaults to one derived from the name; a slug in use is 422 at body.slug.",
  },
  console: "shared",
  handler: (ctx, input) => createWorkflow(ctx.deps, ctx.caller, input),
});

export const listWorkflowsOp = defineOperation({
  id: "workflows.list",
  method: "GET",
  path: "/workflows",
  scope: "workflows:read",
  input: ListWorkflowsQuery,
  output: WorkflowList,
  errors: ["INVALID_LIMIT", "INVALID_STATUS_FILTER", "INVALID_CURSOR"],
  docs: { tags, summary: "List workflows", description: "Newest first; filter by status; cursor-paginated." },
  console: "shared",
  handler: (ctx, input) => listWorkflows(ctx.deps, ctx.caller, input),
});

export const startAdHocRunOp = defineOperation({
  id: "workflows.startAdHocRun",
  method: "POST",
  path: "/workflows/runs",
  scope: "workflows:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: AdHocWorkflowRunBody,
  output: WorkflowRunRecordSchema,
  errors: [...runErrors],
  docs: {
    tags,
    summary: "Start an ad-hoc workflow run",
    description: `Runs an inline definition without saving it (validated like create). ${startNote}`,
  },
  console: "shared",
  handler: (ctx, input) => startAdHocRun(workflowsDeps(ctx.deps), ctx.caller, input),
});

export const listWorkflowRunsOp = defineOperation({
  id: "workflows.listRuns",
  method: "GET",
  path: "/workflows/runs",
  scope: "workflows:read",
  input: ListWorkflowRunsQuery,
  output: WorkflowRunList,
  errors: ["INVALID_LIMIT", "INVALID_STATUS_FILTER", "INVALID_CURSOR"],
  docs: {
    tags,
    summary: "List workflow runs",
    description: "Newest first; filter by status and workflow_id; cursor-paginated.",
  },
  console: "shared",
  handler: (ctx, input) => listWorkflowRuns(ctx.deps, ctx.caller, input),
});

export const getWorkflowRunOp = defineOperation({
  id: "workflows.getRun",
  method: "GET",
  path: "/workflows/runs/{id}",
  scope: "workflows:read",
  input: WorkflowRunIdInput,
  output: WorkflowRunRecordSchema,
  errors: ["WORKFLOW_RUN_NOT_FOUND"],
  docs: {
    tags,
    summary: "Get a workflow run",
    description: "The authoritative run record with every step's status, output and child task run.",
  },
  console: "shared",
  handler: (ctx, input) => getWorkflowRun(ctx.deps, ctx.caller, input.id),
});

export const WorkflowEventFrameSchema = z.object({
  seq: z.number().int().describe("monotonic per run; the SSE `id:`"),
  event: z.string().describe("status, step_started, step_finished, awaiting_human, resumed or terminal"),
  data: z.unknown().describe("the frame's JSON"),
  created_at: z.string().describe("ISO 8601 timestamp"),
});

export const workflowRunEventsOp = defineOperation({
  id: "workflows.runEvents",
  method: "GET",
  path: "/workflows/runs/{id}/events",
  scope: "workflows:read",
  transport: "sse",
  input: z.object({
    id: WorkflowRunId,
    after: z.string().optional().describe("replay frames with seq > after (or send Last-Event-ID)"),
  }),
  output: WorkflowEventFrameSchema,
  requestHeaders: [{ name: "Last-Event-ID", description: "the id of the last frame received (same as after)" }],
  errors: ["WORKFLOW_RUN_NOT_FOUND", "INVALID_CURSOR"],
  docs: {
    tags,
    summary: "Stream a workflow run's events",
    description:
      "Server-Sent Events with the task-run stream's framing: `id: <seq>`, `event:` status `{run_id, status, note?}` | step_started `{run_id, step_id, type, iteration}` | step_finished `{run_id, step_id, type, iteration, status, output, error}` | awaiting_human `{run_id, step_id, reason}` | resumed `{run_id, step_id, approved, note}` | terminal `{run_id, status, output, error}`, then a final `done` `{status, run_id}` and the close. Every frame is persisted: reconnect with `Last-Event-ID` or `?after=` for an ordered replay; after `done` a reconnect replays nothing. `: ping` every 15 s.",
  },
  console: "shared",
  stream: (ctx, input, signal) => {
    const raw = input.after ?? "";
    if (raw !== "" && !/^\d{1,10}$/.test(raw.trim())) {
      throw new CoreError("INVALID_CURSOR", "after / Last-Event-ID must be a non-negative integer event seq.");
    }
    return streamWorkflowEvents(ctx.deps, ctx.caller, input.id, raw === "" ? 0 : Number(raw.trim()), signal);
  },
});

export const cancelWorkflowRunOp = defineOperation({
  id: "workflows.cancelRun",
  method: "POST",
  path: "/workflows/runs/{id}/cancel",
  scope: "workflows:write",
  input: WorkflowRunIdInput,
  output: WorkflowRunRecordSchema,
  errors: ["WORKFLOW_RUN_NOT_FOUND", "INVALID_STATE"],
  docs: {
    tags,
    summary: "Cancel a workflow run",
    description:
      "Any active state -> cancelled; the task runs it started that are still active are cancelled too. A terminal run: 409 INVALID_STATE.",
  },
  console: "shared",
  handler: (ctx, input) => cancelWorkflowRun(workflowsDeps(ctx.deps), ctx.caller, input.id),
});

export const resumeWorkflowRunOp = defineOperation({
  id: "workflows.resumeRun",
  method: "POST",
  path: "/workflows/runs/{id}/resume",
  scope: "workflows:write",
  input: ResumeWorkflowRunBody,
  output: WorkflowRunRecordSchema,
  errors: ["WORKFLOW_RUN_NOT_FOUND", "NOT_AWAITING_HUMAN", "RESUME_CONFLICT"],
  docs: {
    tags,
    summary: "Answer a pending human approval",
    description:
      "`{approved, note?}` for the human_approval the run waits on (awaiting_human -> running). approved false rejects it: the run fails with APPROVAL_REJECTED. Another state: 409 NOT_AWAITING_HUMAN; a losing racer: 409 RESUME_CONFLICT.",
  },
  console: "shared",
  handler: (ctx, input) =>
    resumeWorkflowRun(workflowsDeps(ctx.deps), ctx.caller, input.id, input.approved, input.note?.trim() || null),
});

export const getWorkflowOp = defineOperation({
  id: "workflows.get",
  method: "GET",
  path: "/workflows/{id}",
  scope: "workflows:read",
  input: WorkflowIdInput,
  output: WorkflowRecordSchema,
  errors: ["WORKFLOW_NOT_FOUND"],
  docs: { tags, summary: "Get a workflow", description: "The workflow with its newest version's definition." },
  console: "shared",
  handler: (ctx, input) => getWorkflow(ctx.deps, ctx.caller, input.id),
});

export const updateWorkflowOp = defineOperation({
  id: "workflows.update",
  method: "PUT",
  path: "/workflows/{id}",
  scope: "workflows:write",
  input: UpdateWorkflowBody,
  output: WorkflowRecordSchema,
  errors: ["WORKFLOW_NOT_FOUND", "EMPTY_UPDATE"],
  docs: {
    tags,
    summary: "Update a workflow",
    description:
      "A change of name, definition or inputs_schema writes version N+1 (older versions are kept; runs keep the version they started with). slug, description, metadata and status (active | archived) change the record only. No field: 400 EMPTY_UPDATE.",
  },
  console: "shared",
  handler: (ctx, input) => {
    const { id, ...rest } = input;
    return updateWorkflow(ctx.deps, ctx.caller, id, rest);
  },
});

export const deleteWorkflowOp = defineOperation({
  id: "workflows.delete",
  method: "DELETE",
  path: "/workflows/{id}",
  scope: "workflows:write",
  input: WorkflowIdInput,
  output: WorkflowDeleted,
  errors: ["WORKFLOW_NOT_FOUND"],
  docs: {
    tags,
    summary: "Delete a workflow",
    description: "The workflow and its versions; runs already started keep their pinned definition.",
  },
  console: "shared",
  handler: (ctx, input) => deleteWorkflow(ctx.deps, ctx.caller, input.id),
});

export const startWorkflowRunOp = defineOperation({
  id: "workflows.startRun",
  method: "POST",
  path: "/workflows/{id}/runs",
  scope: "workflows:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: StartWorkflowRunBody,
  output: WorkflowRunRecordSchema,
  errors: ["WORKFLOW_NOT_FOUND", "INVALID_STATE", ...runErrors],
  docs: {
    tags,
    summary: "Start a workflow run",
    description: `Runs the workflow's current version (pinned: later updates do not change the run). An archived workflow: 409 INVALID_STATE. ${startNote}`,
  },
  console: "shared",
  handler: (ctx, input) => {
    const { id, ...rest } = input;
    return startWorkflowRun(workflowsDeps(ctx.deps), ctx.caller, id, rest);
  },
});

export const listWorkflowVersionsOp = defineOperation({
  id: "workflows.listVersions",
  method: "GET",
  path: "/workflows/{id}/versions",
  scope: "workflows:read",
  input: WorkflowIdInput,
  output: WorkflowVersionList,
  errors: ["WORKFLOW_NOT_FOUND"],
  docs: {
    tags,
    summary: "List a workflow's versions",
    description:
      "Every kept version (1 at create, one more per update of name, definition or inputs_schema), newest first.",
  },
  console: "shared",
  handler: (ctx, input) => listWorkflowVersions(ctx.deps, ctx.caller, input.id),
});
