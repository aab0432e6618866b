// Request and response schemas of the machine endpoints (the routers' OpenAPI comes from these).

import { MAX_BATCH_STEPS, TimeoutMs } from "@cua/machines/commands";
import { z } from "zod";
import { listOf } from "../operations/list.ts";
import { CAPABILITIES, MachineRecord } from "./record.ts";

export const MachineIdParam = z.object({
  id: z.string().describe("machine id: a UUID (live) or mch_test_<hex> (test)"),
});

const Metadata = z
  .record(z.string().max(64), z.union([z.string().max(500), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= 16, { message: "at most 16 keys" })
  .describe(
    "free-form metadata: up to 16 keys (DECISIONS.md Compatibility amendments) of strings (up to 500 chars), numbers, booleans or null",
  );

export const TtlMinutes = z
  .number()
  .int()
  .min(0)
  .max(10_080)
  .refine((v) => v === 0 || (v >= 5 && v <= 10_080), { message: "must be 0 (clears) or 5 to 10080" })
  .describe("auto-destroy after this many minutes: 5 to 10080; 0 clears the TTL");

export const ProvisionBody = z.strictObject({
  display_name: z.string().max(200).default("").describe("human name of the machine"),
  os_type: z.enum(["linux", "windows"]).default("linux").describe("linux (default) or windows"),
  desktop_enabled: z.boolean().default(true).describe("run a desktop (X server, window manager, Chromium)"),
  ttl_minutes: TtlMinutes.optional(),
  screen_width: z.number().int().min(320).max(3840).default(1280).describe("screen width in pixels (default 1280)"),
  screen_height: z.number().int().min(240).max(2160).default(720).describe("screen height in pixels (default 720)"),
  restore_from_snapshot: z
    .string()
    .regex(/^snap_[0-9a-f]{24}$/, "must be a snapshot id snap_<24 hex>")
    .optional()
    .describe("start with the home directory of this snapshot (one of the account's snapshots)"),
  metadata: Metadata.optional(),
  // DECISIONS.md "Compatibility amendments (2026-11-25)": the commercial contract's sizing fields. The
  // provider runs what it can; the answer's `resources` says what the machine got.
  provider: z.enum(["auto"]).optional().describe("auto (default): the server's provider for the key's mode"),
  cpu_cores: z.int().min(1).max(16).optional().describe("1 to 16 (requested; see resources in the answer)"),
  memory_gb: z.int().min(1).max(64).optional().describe("1 to 64 (requested; see resources in the answer)"),
  storage_gb: z.int().min(8).max(500).optional().describe("8 to 500 (requested; see resources in the answer)"),
});
export type ProvisionBody = z.output<typeof ProvisionBody>;

export const ConnectionSummarySchema = z
  .object({
    public_ip: z.string().nullable().describe("host of the VNC and websocket endpoints"),
    ssh_port: z.number().int().nullable(),
    ssh_username: z.string().nullable(),
    vnc_port: z.number().int().nullable(),
    websocket_port: z.number().int().nullable(),
    has_ssh_key: z.boolean(),
    has_vnc_password: z.boolean(),
  })
  .describe("where to connect (no secrets: GET /v1/machines/{id}/connection); nulls while provisioning");

export const ResourcesSchema = z
  .object({
    cpu_cores: z.number().int().describe("cores the machine can use"),
    memory_gb: z.number().describe("memory the machine can use, GB"),
    storage_gb: z.number().nullable().describe("disk the machine can use, GB (null: shared with the host)"),
    shared_host: z.boolean().describe("true when the desktop shares the host's cores, memory and disk"),
  })
  .describe("what the provider gives the machine (it may not honour a requested size)");

export const ProvisionResponse = z.object({
  machine: MachineRecord,
  connection: ConnectionSummarySchema,
  resources: ResourcesSchema,
  provisioning: z
    .boolean()
    .describe("true while the machine is being created (live); false when it is running already (test)"),
});

export const ListQuery = z.object({
  limit: z.string().optional().describe("1 to 200 (default 50)"),
  cursor: z.string().optional().describe("next_cursor of the previous page"),
  status: z.string().optional().describe("only machines in this status; default: all but terminated"),
});

export const ListResponse = listOf(MachineRecord, "machines, newest first");

export const PatchBody = z.strictObject({
  ttl_minutes: TtlMinutes.optional().describe("new TTL counted from now (5 to 10080) or 0 to clear it"),
  display_name: z.string().max(200).optional().describe("new human name"),
  metadata: Metadata.optional().describe("replaces the metadata"),
});

export const LifecycleResponse = z.object({
  machine_id: z.string().describe("machine id"),
  status: z.string().describe("status after the operation"),
  message: z.string().describe("what happened"),
});

export const TerminateResponse = LifecycleResponse.extend({
  terminated: z.literal(true).describe("always true"),
});

export const PricingResponse = z.object({
  linux_running_per_hour: z.number().int().describe("credits per hour for a running Linux machine"),
  windows_running_per_hour: z.number().int().describe("credits per hour for a running Windows machine"),
  stopped_per_hour: z.number().int().describe("credits per hour for a stopped or suspended machine"),
  billing: z.literal("per_minute").describe("usage is metered per minute"),
  provision_gate_credits: z.number().int().describe("wallet balance needed to provision (a gate, not a fee)"),
  snapshot_credits: z.number().int().describe("credits per snapshot"),
});

export const SnapshotBody = z
  .strictObject({
    name: z.string().min(1).max(200).optional().describe("snapshot name (default: snapshot-<timestamp>)"),
  })
  .optional();

export const SnapshotRecord = z.object({
  machine_id: z.string().describe("machine id"),
  snapshot_id: z.string().describe("snap_<24 hex>"),
  name: z.string().describe("snapshot name"),
  status: z.enum(["creating", "available", "failed"]).describe("available once the archive is written"),
  size_bytes: z.number().int().nullable().describe("archive size"),
  created_at: z.string().describe("ISO 8601"),
  credits_charged: z.number().int().describe("credits charged (1 on live keys, 0 on test keys)"),
});

export const RestoreBody = z.strictObject({
  snapshot_id: z
    .string()
    .regex(/^snap_[0-9a-f]{24}$/, "must be snap_<24 hex>")
    .describe("one of the account's snapshots"),
});

export const ScreenshotResponse = z.object({
  machine_id: z.string().describe("machine id"),
  image_b64: z.string().describe("base64 of the image"),
  mime_type: z.string().describe("image/png (external machines may send image/jpeg)"),
  width: z.number().int().describe("pixels"),
  height: z.number().int().describe("pixels"),
  captured_at: z.string().describe("ISO 8601"),
});

export const ConnectionResponse = z.object({
  machine_id: z.string().describe("machine id"),
  host: z.string().describe("host of the VNC and websocket endpoints"),
  ssh_port: z.number().int().nullable().describe("null: the provider offers no SSH"),
  ssh_username: z.string().nullable().describe("null: the provider offers no SSH"),
  ssh_private_key_pem: z.string().nullable().describe("null: the provider offers no SSH"),
  vnc_port: z.number().int().describe("raw VNC (RFB) port"),
  vnc_password: z.string().describe("VNC password"),
  websocket_url: z.string().describe("RFB over WebSocket for noVNC"),
  novnc_url: z.string().nullable().describe("noVNC web client page, when served"),
});

const Parameters = z.record(z.string(), z.unknown()).default({}).describe("command parameters");
const PreconditionFrame = z
  .string()
  .max(64)
  .nullable()
  .optional()
  .describe(
    "external machines: run only if this is still the newest observed frame (else 409 FRAME_PRECONDITION_FAILED)",
  );

// DECISIONS.md "Compatibility amendments (2026-11-25)": answers carry the screen after the command
const IncludeScreenshot = z
  .boolean()
  .optional()
  .describe("default true: the answer carries `screenshot`, a base64 PNG of the screen after the command");
const ScreenAfter = z
  .string()
  .nullable()
  .optional()
  .describe(
    "base64 PNG taken after the command (absent with include_screenshot: false; null when none could be taken)",
  );

export const ActionBody = z.strictObject({
  command: z
    .string()
    .max(64)
    .describe(
      "allowlisted command name (unknown: 422); aliases type_text (= type) and key_press {key} (= {keys: [key]})",
    ),
  parameters: Parameters,
  timeout_ms: TimeoutMs.optional(),
  precondition_frame_id: PreconditionFrame,
  include_screenshot: IncludeScreenshot,
});

export const OpError = z.object({ code: z.string(), message: z.string() }).nullable().describe("why it failed");

export const ActionResponse = z.object({
  machine_id: z.string().describe("machine id"),
  command: z.string().describe("the command"),
  success: z.boolean().describe("whether the command succeeded"),
  result: z.record(z.string(), z.unknown()).describe("command result (terminal: result.output)"),
  error: OpError,
  duration_ms: z.number().describe("milliseconds"),
  screenshot: ScreenAfter,
});

export const BatchBodySchema = z.strictObject({
  steps: z
    .array(
      z.strictObject({
        command: z.string().max(64).describe("allowlisted command"),
        parameters: Parameters,
        timeout_ms: TimeoutMs.optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_STEPS)
    .describe("1 to 50 steps, run in order"),
  stop_on_error: z.boolean().default(true).describe("stop at the first failed step (default true)"),
});

export const BatchResponse = z.object({
  machine_id: z.string().describe("machine id"),
  results: z
    .array(
      ActionResponse.omit({ machine_id: true, screenshot: true }).extend({
        index: z.number().int().describe("step index"),
        status: z.enum(["succeeded", "failed", "skipped"]).describe("skipped: not run after a stop_on_error failure"),
      }),
    )
    .describe("one per step"),
  completed_count: z.number().int().describe("steps that succeeded"),
  failed_count: z.number().int().describe("steps that failed"),
  aborted: z.boolean().describe("true when stop_on_error ended the batch early"),
  request_id: z.string().describe("request id"),
});

export const OpBody = z.strictObject({
  parameters: Parameters,
  timeout_ms: TimeoutMs.optional(),
  include_screenshot: IncludeScreenshot,
});

export const OpResponse = z.object({
  machine_id: z.string().describe("machine id"),
  op: z.string().describe("the operation"),
  command: z.string().describe("the command that ran: browser_<op> or file_<op>"),
  screenshot: ScreenAfter,
  success: z.boolean().describe("whether it succeeded"),
  result: z.record(z.string(), z.unknown()).describe("operation result"),
  error: OpError,
  duration_ms: z.number().describe("milliseconds"),
});

export const TerminalBody = z.strictObject({
  command: z.string().min(1).max(100_000).describe("bash command line (PowerShell on Windows)"),
  timeout_ms: TimeoutMs.optional(),
  session_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .optional()
    .describe("reuse a persistent shell: cwd and environment persist"),
  cwd: z.string().min(1).max(4096).optional().describe("working directory (relative to home when relative)"),
  include_screenshot: IncludeScreenshot,
});

export const TerminalResponse = z.object({
  machine_id: z.string().describe("machine id"),
  command: z.string().describe("the command line that ran"),
  screenshot: ScreenAfter,
  success: z.boolean().describe("whether the command ran (a non-zero exit still succeeds; see result.exit_code)"),
  result: z.record(z.string(), z.unknown()).describe("result.output holds up to 5000 characters of output"),
  error: OpError,
  duration_ms: z.number().describe("milliseconds"),
});

export const EnrollBody = z.strictObject({
  display_name: z.string().max(200).default("").describe("human name of the machine"),
  os_type: z.enum(["linux", "windows", "macos"]).default("linux").describe("the host's operating system"),
  capabilities: z
    .array(z.enum(CAPABILITIES))
    .min(1)
    .max(CAPABILITIES.length)
    .refine((c) => new Set(c).size === c.length, { message: "capabilities must be unique" })
    .describe("what the driver can do: screenshot, mouse, keyboard, scroll, terminal, files, browser"),
  screen_width: z.number().int().min(320).max(3840).describe("screen width in pixels"),
  screen_height: z.number().int().min(240).max(2160).describe("screen height in pixels"),
  protocol_version: z.literal(1).describe("driver protocol version: 1"),
  metadata: Metadata.optional(),
});

export const EnrollResponse = z.object({
  machine_id: z.string().describe("the new machine's id"),
  device_token: z
    .string()
    .describe("dtk_<64 hex>: the driver's credential for this one machine; shown only here and in an exact replay"),
  protocol_version: z.literal(1).describe("driver protocol version"),
  capabilities: z.array(z.string()).describe("enrolled capabilities"),
  created_at: z.string().describe("ISO 8601"),
  machine: MachineRecord,
});

export const MachinesHealth = z.object({
  status: z
    .enum(["ok", "degraded"])
    .describe("ok when the managed provider runs here and a desktop can start (managed_ready)"),
  managed_provider: z.string().nullable().describe("name of the managed provider, null when none runs here"),
  managed_ready: z
    .boolean()
    .describe(
      "a live desktop can be provisioned now: required programs present, the service runs as root, the last desktop start did not fail",
    ),
  managed_detail: z.string().nullable().describe("why the managed provider is or is not ready, in words"),
  missing_packages: z
    .array(z.string())
    .describe("Debian packages of programs the managed provider did not find (scripts/install-desktop-deps.sh)"),
  mock_provider: z.string().describe("name of the test-key provider"),
  time: z.string().describe("server time"),
});
