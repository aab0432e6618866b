// The /v1 trigger operations (SPEC.md "Schedules and triggers" table and "Authentication" 6; DECISIONS.md
// "Schedules and triggers"). The webhook fire is a raw-body operation: its bytes are what was signed, so a
// plain route serves it (apps/api/src/http/webhook-route.ts) from this definition.
import { defineOperation, type OperationContext } from "../operations/define.ts";
import {
  CreateTriggerBody,
  DeletedTrigger,
  ScheduleIdInput,
  TriggerIdInput,
  TriggerList,
  TriggerRecordSchema,
  UpdateTriggerBody,
  WebhookFireAnswer,
  WebhookFireInput,
} from "./schemas.ts";
import { createTrigger, deleteTrigger, listTriggers, updateTrigger } from "./triggers.ts";

const tags = ["Triggers"];

/** webhook_url's base: PUBLIC_BASE_URL, else the request's own origin */
export function triggerBaseUrl(ctx: Pick<OperationContext, "deps" | "header">): string {
  const configured = ctx.deps.schedules?.publicBaseUrl;
  if (configured) return configured;
  const proto = ctx.header("x-forwarded-proto") === "https" ? "https" : "http";
  return `${proto}://${ctx.header("host") ?? "localhost"}`;
}

export const listTriggersOp = defineOperation({
  id: "triggers.list",
  method: "GET",
  path: "/schedules/{id}/triggers",
  scope: "schedules:read",
  input: ScheduleIdInput,
  output: TriggerList,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND"],
  docs: { tags, summary: "A schedule's triggers", description: "Oldest first. webhook_secret is never listed." },
  console: "shared",
  handler: (ctx, input) => listTriggers(ctx.deps, ctx.caller, input.id, triggerBaseUrl(ctx)),
});

export const createTriggerOp = defineOperation({
  id: "triggers.create",
  method: "POST",
  path: "/schedules/{id}/triggers",
  scope: "triggers:write",
  idempotency: "reserve-and-replay",
  successStatus: 201,
  input: CreateTriggerBody,
  output: TriggerRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "SOURCE_SCHEDULE_NOT_FOUND"],
  docs: {
    tags,
    summary: "Add a trigger",
    description:
      "webhook: answers webhook_url ({base_url}/v1/triggers/webhook/whk_<hex>) and webhook_secret (whsec_<64 hex>, in this answer and its exact replay only); rate_limit_per_minute 1-600 (default 60). chain: source_schedule_id (404 SOURCE_SCHEDULE_NOT_FOUND when not yours), event on_complete (default), on_failure or on_any, pass_output (default true: the source run's result is appended to the task). A chain that would form a cycle or run deeper than 5 levels: 422.",
  },
  console: "shared",
  handler: (ctx, input) => createTrigger(ctx.deps, ctx.caller, input, triggerBaseUrl(ctx)),
});

export const updateTriggerOp = defineOperation({
  id: "triggers.update",
  method: "PATCH",
  path: "/schedules/{id}/triggers/{trigger_id}",
  scope: "triggers:write",
  input: UpdateTriggerBody,
  output: TriggerRecordSchema,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "INVALID_TRIGGER_ID", "TRIGGER_NOT_FOUND"],
  docs: {
    tags,
    summary: "Enable or disable a trigger",
    description: "`{enabled}`; a disabled webhook answers 410 WEBHOOK_DISABLED.",
  },
  console: "shared",
  handler: (ctx, input) => updateTrigger(ctx.deps, ctx.caller, input, triggerBaseUrl(ctx)),
});

export const deleteTriggerOp = defineOperation({
  id: "triggers.delete",
  method: "DELETE",
  path: "/schedules/{id}/triggers/{trigger_id}",
  scope: "triggers:write",
  input: TriggerIdInput,
  output: DeletedTrigger,
  errors: ["INVALID_SCHEDULE_ID", "SCHEDULE_NOT_FOUND", "INVALID_TRIGGER_ID", "TRIGGER_NOT_FOUND"],
  docs: {
    tags,
    summary: "Delete a trigger",
    description: "Final: a webhook URL stops working; a trigger created again gets a new URL and secret.",
  },
  console: "shared",
  handler: (ctx, input) => deleteTrigger(ctx.deps, ctx.caller, input.id, input.trigger_id),
});

export const fireWebhookOp = defineOperation({
  id: "triggers.webhook",
  method: "POST",
  path: "/triggers/webhook/{webhook_id}",
  auth: "signature",
  transport: "raw-body",
  input: WebhookFireInput,
  output: WebhookFireAnswer,
  billing: "free (routing); the run it starts is billed as the schedule's runs",
  errors: [
    "INVALID_SIGNATURE",
    "TRIGGER_NOT_FOUND",
    "WEBHOOK_DISABLED",
    "PAYLOAD_TOO_LARGE",
    "RATE_LIMIT_EXCEEDED",
    "INSUFFICIENT_CREDITS",
  ],
  requestHeaders: [
    {
      name: "Service-Signature",
      description:
        "t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 keyed with webhook_secret over `<t>.` + the raw body>; at most 5 minutes old",
    },
  ],
  docs: {
    tags,
    summary: "Fire a webhook trigger",
    description:
      "No API key: the body (any content type, at most 1,000,000 bytes, else 413) is signed. Starts a run of the schedule with the payload appended to its task. The same body within 60 seconds answers deduplicated: true (header X-Service-Webhook-Deduplicated). Over rate_limit_per_minute: 429. Disabled: 410 WEBHOOK_DISABLED.",
  },
});
