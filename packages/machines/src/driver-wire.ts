// The driver protocol's wire format (version 1): what the service sends a driver and what a driver posts
// back on the device-token routes (docs/driver.md). The server's operations (packages/core
// machines-service/driver-protocol.op.ts) and the external driver (apps/driver) both use these schemas,
// so the two ends cannot drift apart.

import { z } from "zod";

/** Driver protocol version this service speaks. */
export const PROTOCOL_VERSION = 1 as const;

export const DriverCommand = z.object({
  id: z.string().describe("cmd_<hex>: stable across redeliveries; deduplicate by it"),
  seq: z.number().int().describe("position in the machine's command stream (cursor space)"),
  command: z.string().describe("action command, browser_op, file_op or terminal_execute"),
  parameters: z.record(z.string(), z.unknown()).describe("validated parameters"),
  capability: z.string().describe("capability the command needs"),
  fencing_token: z.number().int().describe("echo it in the result; a newer fence cancels this command"),
  precondition_frame_id: z.string().nullable().describe("run only if this is still your newest frame; echo it"),
  deadline: z.string().describe("do not start after this instant (ISO 8601)"),
  protocol_version: z.literal(PROTOCOL_VERSION).describe("driver protocol version"),
});

export const PollResponse = z.object({
  commands: z.array(DriverCommand).describe("outstanding commands after the cursor (at-least-once)"),
  next_cursor: z.string().describe("persist after durable processing; pass as `after`"),
  fencing_token: z.number().int().describe("the machine's current fence"),
});

export const ObservationBody = z.strictObject({
  sequence: z.number().int().min(1).describe("last_sequence + 1"),
  mime_type: z.enum(["image/png", "image/jpeg"]).describe("image/png or image/jpeg"),
  data: z.string().describe("base64 of one frame, up to 10,485,760 characters; 320x240 to 3840x2160"),
});

export const ObservationResponse = z.object({
  frame_id: z.string().describe("frm_<hex>"),
  sequence: z.number().int().describe("accepted sequence"),
  request_digest: z.string().describe("SHA-256 (hex) of the decoded bytes sent"),
  digest: z.string().describe("SHA-256 (hex) of the stored, normalised bytes"),
  stored_at: z.string().describe("ISO 8601; frames are purged 900 s later"),
});

export const ResultBody = z.strictObject({
  status: z.enum(["succeeded", "failed", "rejected"]).describe("rejected: checks before execution failed"),
  result: z.record(z.string(), z.unknown()).default({}).describe("command result"),
  error: z
    .object({ code: z.string().max(64), message: z.string().max(2000) })
    .nullable()
    .default(null)
    .describe("why it failed or was rejected"),
  duration_ms: z.number().min(0).default(0).describe("execution time"),
  fencing_token: z.number().int().describe("echo of the command's fencing_token"),
  precondition_frame_id: z.string().nullable().describe("echo of the command's precondition_frame_id (null included)"),
});

export const ResultResponse = z.object({
  accepted: z.literal(true).describe("the result is recorded"),
  duplicate: z.boolean().describe("true for an exact replay of a result already recorded"),
});

export const HeartbeatBody = z
  .strictObject({
    status: z.record(z.string(), z.unknown()).optional().describe("free-form driver status"),
  })
  .optional();

export const HeartbeatResponse = z.object({
  last_sequence: z.number().int().describe("last accepted observation sequence (0: none)"),
  last_frame_id: z.string().nullable().describe("newest frame id, null when none"),
  fencing_token: z.number().int().describe("the machine's current fence"),
  server_time: z.string().describe("ISO 8601"),
});

export type DriverCommand = z.infer<typeof DriverCommand>;
export type PollResponse = z.infer<typeof PollResponse>;
export type ObservationResponse = z.infer<typeof ObservationResponse>;
export type ResultBody = z.input<typeof ResultBody>;
/** A result with its defaults filled in: what a driver stores and posts. */
export type DriverResult = z.output<typeof ResultBody>;
export type HeartbeatResponse = z.infer<typeof HeartbeatResponse>;
