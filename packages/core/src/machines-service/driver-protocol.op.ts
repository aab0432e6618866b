// The external driver's routes (device token, protocol version 1): declared here for their OpenAPI entries
// and error codes; served by apps/api/src/http/machines-plain-routes.ts (their own rate limits, long poll).

import {
  HeartbeatResponse,
  ObservationBody,
  ObservationResponse,
  PollResponse,
  ResultBody,
  ResultResponse,
} from "@cua/machines/driver-wire";
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";

const DEVICE_AUTH =
  "Authenticated by the machine's device token: `Authorization: Bearer dtk_<64 hex>` (never an API key; 401 INVALID_DEVICE_TOKEN otherwise). Rate limits: 1000/min and 40000/h per peer before authentication, 300/min and 12000/h per device token, 1200/min and 48000/h per account.";
const tags = ["External machines"];
const id = z.string().describe("machine id");

export const driverPollOp = defineOperation({
  id: "driver.poll",
  method: "GET",
  path: "/machines/{id}/commands",
  auth: "device_token",
  input: z.object({
    id,
    after: z.string().optional().describe("cursor (next_cursor)"),
    limit: z.string().optional().describe("1 to 50"),
    wait_seconds: z.string().optional().describe("0 to 30"),
  }),
  output: PollResponse,
  errors: ["INVALID_CURSOR", "INVALID_LIMIT"],
  docs: {
    tags,
    summary: "Driver: poll commands",
    description: `Long poll (wait_seconds 0..30) for outstanding commands after the cursor \`after\` (a next_cursor). Delivery is at least once: persist next_cursor after durable processing and deduplicate by command id. ${DEVICE_AUTH}`,
  },
});

export const driverObservationOp = defineOperation({
  id: "driver.observation",
  method: "POST",
  path: "/machines/{id}/observations",
  auth: "device_token",
  successStatus: 201,
  input: ObservationBody.extend({ id }),
  output: ObservationResponse,
  errors: ["SEQUENCE_CONFLICT", "INVALID_SCREENSHOT", "PAYLOAD_TOO_LARGE"],
  docs: {
    tags,
    summary: "Driver: post an observation",
    description: `One PNG or JPEG frame (base64 up to 10,485,760 characters; 320x240 to 3840x2160). sequence must be last_sequence + 1 (409 SEQUENCE_CONFLICT with last_sequence); an exact replay of the newest frame returns the same answer. Frames are stored encrypted and purged after 900 s. 60/min and 3600/h per device token. ${DEVICE_AUTH}`,
  },
});

export const driverResultOp = defineOperation({
  id: "driver.result",
  method: "POST",
  path: "/machines/{id}/commands/{command_id}/results",
  auth: "device_token",
  input: ResultBody.extend({ id, command_id: z.string().describe("command id") }),
  output: ResultResponse,
  errors: ["NOT_FOUND", "FENCING_TOKEN_MISMATCH", "RESULT_CONFLICT"],
  docs: {
    tags,
    summary: "Driver: post a command result",
    description: `The terminal result of a command. It echoes fencing_token and precondition_frame_id exactly (null included; else 409 FENCING_TOKEN_MISMATCH, also for a command cancelled by a newer fence). An exact replay answers duplicate: true; a different result for a finished command is 409 RESULT_CONFLICT. ${DEVICE_AUTH}`,
  },
});

export const driverHeartbeatOp = defineOperation({
  id: "driver.heartbeat",
  method: "POST",
  path: "/machines/{id}/heartbeat",
  auth: "device_token",
  input: z.strictObject({ id, status: z.record(z.string(), z.unknown()).optional() }),
  output: HeartbeatResponse,
  docs: {
    tags,
    summary: "Driver: heartbeat",
    description: `Returns last_sequence, last_frame_id (nullable), the current fencing_token and server_time. After a restart: poll once for the fence, heartbeat, then post observation last_sequence + 1. ${DEVICE_AUTH}`,
  },
});
