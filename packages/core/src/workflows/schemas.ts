// Shapes of the /v1/workflows routes (SPEC.md "Workflows"; DECISIONS.md "Workflows" and its Compatibility
// amendment: DSL 2026-06-01). The definition is validated by definition.ts inside the body's zod schema, so
// its problems are ordinary 422 VALIDATION_ERROR details (`body.definition.steps.0.id`) in the usual check
// order; inputs_schema must compile as a JSON Schema.
import { z } from "zod";
import { NullableTimestamp, Timestamp } from "../operations/common-schemas.ts";
import { limitQuery, listOf, statusQuery } from "../operations/list.ts";
import { LlmChoice } from "../predict/model-choice.ts";
import { RunMetadata } from "../runs/schemas.ts";
import { validateDefinition } from "./definition.ts";
import { schemaProblem } from "./inputs-schema.ts";

export const WORKFLOW_RUN_STATUSES = [
  "queued",
  "running",
  "awaiting_human",
  "succeeded",
  "failed",
  "cancelled",
  "timed_out",
] as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[number];
export const WORKFLOW_STATUSES = ["active", "archived"] as const;
export const SLUG = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const Definition = z
  .unknown()
  .superRefine((def, ctx) => {
    for (const p of validateDefinition(def, "@")) {
      ctx.addIssue({ code: "custom", message: p.message, path: p.path.split(".").slice(1) });
    }
  })
  .describe(
    "`{steps: [Step], output?}` (DSL 2026-06-01): step types task, assert, if, loop, parallel, human_approval, retry, succeed, fail; conditions are objects with `op` (eq, ne, lt, gt, lte, gte, contains, truthy, falsy, exists, and, or, not); templates {{inputs.x}}, {{vars.y}}, {{stepId.field}}. At most 200 steps, 8 levels, 16 branches per parallel step (docs/workflows.md)",
  );

export const InputsSchema = z
  .record(z.string(), z.unknown())
  .superRefine((s, ctx) => {
    const why = schemaProblem(s);
    if (why) ctx.addIssue({ code: "custom", message: `not a valid JSON Schema: ${why}` });
  })
  .describe("JSON Schema (draft 2020-12 subset understood by Ajv) the run's inputs must satisfy (else 422)");

const Name = z.string().trim().min(1).max(200).describe("display name");
const Slug = z
  .string()
  .regex(SLUG, "must match ^[a-z0-9][a-z0-9_-]{0,62}$")
  .describe("^[a-z0-9][a-z0-9_-]{0,62}$, unique per account and mode (default: derived from name)");
const Description = z.string().max(2000).describe("free text");

export const CreateWorkflowBody = z.strictObject({
  name: Name,
  slug: Slug.optional(),
  definition: Definition,
  inputs_schema: InputsSchema.optional(),
  description: Description.optional(),
  metadata: RunMetadata.optional(),
});

/** ids are opaque here: a malformed one is 404 WORKFLOW_NOT_FOUND (DECISIONS Compatibility amendments) */
export const WorkflowId = z.string().max(256).describe("wf_<24 hex> (live) or wf_test_<24 hex> (test)");
export const WorkflowRunId = z.string().max(256).describe("wfr_<24 hex> (live) or wfr_test_<24 hex> (test)");

export const UpdateWorkflowBody = z.strictObject({
  id: WorkflowId,
  name: Name.optional(),
  slug: Slug.optional(),
  definition: Definition.optional(),
  inputs_schema: InputsSchema.nullable().optional(),
  description: Description.nullable().optional(),
  metadata: RunMetadata.optional(),
  status: z.enum(WORKFLOW_STATUSES).optional().describe("active or archived (an archived workflow starts no runs)"),
});

export const WorkflowIdInput = z.object({ id: WorkflowId });
export const WorkflowRunIdInput = z.object({ id: WorkflowRunId });

export const ListWorkflowsQuery = z.object({
  status: statusQuery(WORKFLOW_STATUSES, "filter: active or archived"),
  limit: limitQuery(),
  cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
});

export const ListWorkflowRunsQuery = z.object({
  status: statusQuery(WORKFLOW_RUN_STATUSES, `filter: ${WORKFLOW_RUN_STATUSES.join(", ")}`),
  workflow_id: z.string().max(256).optional().describe("only this workflow's runs"),
  limit: limitQuery(),
  cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
});

const startFields = {
  inputs: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("the run's inputs ({{inputs.x}}), checked against inputs_schema"),
  machine_id: z.string().min(1).max(128).optional().describe("default machine of task steps without machine_id"),
  budget_cents: z
    .int()
    .min(0)
    .max(100_000_000)
    .optional()
    .describe("0 (default) = none; the task runs may cost at most this (else GUARD_EXCEEDED)"),
  max_iterations: z
    .int()
    .min(1)
    .max(10_000)
    .optional()
    .describe("loop iterations plus retry attempts the run may use (default 1000; else GUARD_EXCEEDED)"),
  deadline_seconds: z
    .int()
    .min(1)
    .max(86_400)
    .optional()
    .describe("the run fails with GUARD_EXCEEDED after this many seconds (default 86,400)"),
  webhook_url: z
    .string()
    .max(2048)
    .optional()
    .describe("https URL recorded with the run (webhook_secret returned once)"),
  metadata: RunMetadata.optional(),
  llm: LlmChoice.optional(),
};

export const StartWorkflowRunBody = z.strictObject({ id: WorkflowId, ...startFields });
export const AdHocWorkflowRunBody = z.strictObject({
  definition: Definition,
  inputs_schema: InputsSchema.optional(),
  ...startFields,
});

export const ResumeWorkflowRunBody = z.strictObject({
  id: WorkflowRunId,
  approved: z.boolean().describe("true approves the pending human_approval; false rejects it (the run fails)"),
  note: z.string().max(10_000).optional().describe("recorded in the step's output and the resumed frame"),
});

export const WorkflowRecordSchema = z
  .object({
    object: z.literal("workflow").describe("always workflow"),
    id: z.string().describe("workflow id"),
    name: z.string().describe("display name"),
    slug: z.string().describe("unique per account and mode"),
    version: z.number().int().describe("the newest version (1 at create; each update adds one)"),
    dsl_version: z.literal("2026-06-01").describe("the DSL version"),
    definition: z.unknown().describe("the newest version's definition"),
    inputs_schema: z.unknown().nullable().describe("JSON Schema of the inputs, or null"),
    description: z.string().nullable().describe("free text"),
    status: z.enum(WORKFLOW_STATUSES).describe("active or archived"),
    metadata: z.record(z.string(), z.string()).describe("your key/value pairs"),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .describe("A workflow");

export const WorkflowList = listOf(WorkflowRecordSchema, "workflows, newest first");

export const WorkflowVersionSchema = z
  .object({
    object: z.literal("workflow.version").describe("always workflow.version"),
    workflow_id: z.string().describe("the workflow"),
    version: z.number().int().describe("1, 2, ..."),
    name: z.string().describe("the name at this version"),
    definition: z.unknown().describe("the definition of this version"),
    inputs_schema: z.unknown().nullable().describe("JSON Schema of the inputs, or null"),
    created_at: Timestamp,
  })
  .describe("One kept version of a workflow");
export const WorkflowVersionList = listOf(WorkflowVersionSchema, "versions, newest first");
export const WorkflowDeleted = z.object({
  id: z.string().describe("the deleted workflow"),
  object: z.literal("workflow").describe("always workflow"),
  deleted: z.literal(true).describe("always true"),
});

const StepStateSchema = z.object({
  id: z.string().describe("step id"),
  type: z.string().describe("step type"),
  status: z
    .enum(["pending", "running", "awaiting_human", "succeeded", "failed", "skipped", "cancelled"])
    .describe("pending until it first runs"),
  output: z.unknown().describe("what the step bound (task: {status, passed, result, run_id, steps, error})"),
  error: z.unknown().nullable().describe("why the step failed"),
  run_id: z.string().nullable().describe("task steps: the child task run (GET /v1/runs/{id})"),
  started_at: NullableTimestamp,
  finished_at: NullableTimestamp,
});

export const WorkflowRunRecordSchema = z
  .object({
    object: z.literal("workflow.run").describe("always workflow.run"),
    id: z.string().describe("workflow run id"),
    status: z
      .enum(WORKFLOW_RUN_STATUSES)
      .describe("queued, running, awaiting_human, succeeded, failed, cancelled, timed_out"),
    workflow_id: z.string().nullable().describe("null for an ad-hoc run"),
    workflow_version: z.number().int().nullable().describe("the version the run started with (pinned)"),
    machine_id: z.string().nullable().describe("default machine of task steps"),
    inputs: z.record(z.string(), z.unknown()).describe("the run's inputs"),
    output: z.unknown().nullable().describe("the definition's output (or a succeed step's), once succeeded"),
    error: z
      .object({
        code: z.string().describe("stable error code"),
        message: z.string().describe("human text"),
        step_id: z.string().optional().describe("the step that ended the run"),
      })
      .catchall(z.unknown())
      .nullable()
      .describe(
        "why the run failed: GUARD_EXCEEDED, ASSERTION_FAILED, STEP_FAILED, WORKFLOW_FAILED, APPROVAL_REJECTED, APPROVAL_TIMEOUT",
      ),
    awaiting_human_reason: z
      .string()
      .nullable()
      .describe("the pending human_approval's message, or the reason of the task step's run that waits for a human"),
    awaiting_step_id: z
      .string()
      .nullable()
      .describe("the step that waits: a human_approval, or a task step whose task run waits for a human"),
    awaiting_run_id: z
      .string()
      .nullable()
      .describe("the task run that waits for a human when the waiting step is a task step (else null)"),
    iterations_used: z.number().int().describe("loop iterations plus retry attempts so far"),
    max_iterations: z.number().int().describe("guard"),
    spent_cents: z.number().int().describe("cost of the task runs so far"),
    budget_cents: z.number().int().describe("guard; 0 = none"),
    deadline_at: Timestamp.describe("guard: the run fails with GUARD_EXCEEDED after this instant"),
    webhook_url: z.string().nullable().describe("as given at start"),
    webhook_secret: z.string().nullable().describe("whsec_<64 hex>: only in the start response"),
    metadata: z.record(z.string(), z.string()).describe("your key/value pairs"),
    usage: z
      .object({
        credits_charged: z.number().int().describe("credits the task runs were billed"),
        cost_cents: z.number().int().describe("the same in cents"),
      })
      .describe("what the task runs cost (= spent_cents)"),
    steps: z.array(StepStateSchema).describe("every step of the pinned definition, depth first"),
    definition: z.unknown().describe("the pinned definition the run executes (its version's, or the ad-hoc one)"),
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: NullableTimestamp,
    finished_at: NullableTimestamp,
  })
  .describe("A workflow run");

export const WorkflowRunList = listOf(WorkflowRunRecordSchema, "workflow runs, newest first");
