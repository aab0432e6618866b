// The machine provider port. The service (HTTP facade, scheduler, agent runs) talks to machines only
// through this interface; a provider owns processes, users and disks, the service owns the database.
//
// Handles are plain JSON the service persists with the machine record and hands back on every call.
// A provider must accept any handle it produced earlier, also after a service restart (see reconcile).
// Methods that change the handle return the new one; the caller persists it.

import { CoreError } from "@cua/base/errors";
import { z } from "zod";

export const ScreenSize = z
  .strictObject({
    width: z.number().int().min(320).max(3840).describe("Screen width in pixels"),
    height: z.number().int().min(240).max(2160).describe("Screen height in pixels"),
  })
  .describe("Desktop screen size");
export type ScreenSize = z.infer<typeof ScreenSize>;

export const ProvisionInput = z.strictObject({
  machineId: z.string().min(1).max(128).describe("The machine id (UUID or mch_test_<hex>)"),
  displayName: z.string().max(200).default("").describe("Human name of the machine"),
  screen: ScreenSize.default({ width: 1280, height: 720 }),
  desktopEnabled: z.boolean().default(true).describe("Run a desktop (X server, window manager, browser)"),
});
export type ProvisionInput = z.input<typeof ProvisionInput>;

/** Status a provider knows about. The service maps its own richer states (provisioning, suspended, ...). */
export type HandleStatus = "running" | "stopped";

export const MachineHandleBase = z.object({
  provider: z.string().describe("Name of the provider that owns this machine"),
  machine_id: z.string(),
  display_name: z.string(),
  status: z.enum(["running", "stopped"]),
  screen: ScreenSize,
  desktop_enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** Persistable JSON describing one machine. Providers extend it with their own fields. */
export interface MachineHandle {
  provider: string;
  machine_id: string;
  display_name: string;
  status: HandleStatus;
  screen: ScreenSize;
  desktop_enabled: boolean;
  created_at: string;
  updated_at: string;
  [extra: string]: unknown;
}

export interface Screenshot {
  png: Buffer;
  mime_type: "image/png";
  width: number;
  height: number;
  captured_at: string;
}

/** An operation-level failure (the call itself was valid): success false with this error. */
export interface OpError {
  code: string;
  message: string;
}

export interface OpResult {
  success: boolean;
  result: Record<string, unknown>;
  error: OpError | null;
}

export interface CommandResult extends OpResult {
  command: string;
  duration_ms: number;
}

export interface BatchStepResult extends CommandResult {
  index: number;
  /** succeeded, failed, or skipped (not run because an earlier step failed with stop_on_error) */
  status: "succeeded" | "failed" | "skipped";
}

export interface BatchResult {
  results: BatchStepResult[];
  /** steps that ran and succeeded */
  completed_count: number;
  /** steps that ran and failed */
  failed_count: number;
  /** true when stop_on_error ended the batch before its last step */
  aborted: boolean;
}

export interface SnapshotInfo {
  snapshot_id: string;
  machine_id: string;
  name: string;
  size_bytes: number;
  created_at: string;
}

export interface ConnectionInfo {
  machine_id: string;
  host: string;
  /** The local desktop provider offers no SSH: these four are null. */
  ssh_port: number | null;
  ssh_username: string | null;
  ssh_private_key_pem: string | null;
  vnc_port: number;
  vnc_password: string;
  /** websockify endpoint for noVNC (RFB over WebSocket) */
  websocket_url: string;
  /** noVNC web client page served by the same websockify */
  novnc_url: string | null;
}

export interface ReconcileResult {
  machine_id: string;
  /** running: alive (re-adopted); stopped: state preserved but no processes; lost: user or home gone */
  status: "running" | "stopped" | "lost";
  handle: MachineHandle;
  /** true when the status differs from the handle that came in */
  changed: boolean;
  detail: string;
}

export interface TerminateResult {
  machine_id: string;
  terminated: true;
  /** processes still found for the machine's user after cleanup (always 0 unless cleanup failed) */
  leftover_processes: number;
}

export interface ExecuteOptions {
  /** 1000..120000; default 30000 */
  timeoutMs?: number;
}

export interface MachineProvider {
  /** provider name, stored in handle.provider */
  readonly name: string;
  /** create the machine and start it; returns a running handle */
  provision(input: ProvisionInput): Promise<MachineHandle>;
  /** stopped -> running */
  start(handle: MachineHandle): Promise<MachineHandle>;
  /** running -> stopped; processes end, the home directory (state) stays */
  stop(handle: MachineHandle): Promise<MachineHandle>;
  /** running -> running (stop then start) */
  restart(handle: MachineHandle): Promise<MachineHandle>;
  /** any -> gone: processes, user, home and auth files are removed; snapshots are kept */
  terminate(handle: MachineHandle): Promise<TerminateResult>;
  /** after a service restart: which machines are still alive; re-adopts them */
  reconcile(handles: MachineHandle[]): Promise<ReconcileResult[]>;
  /** full-screen PNG; 502 SCREENSHOT_FAILED when the capture errors */
  screenshot(handle: MachineHandle): Promise<Screenshot>;
  /** one allowlisted action command (see commands.ts); 422 VALIDATION_ERROR on bad input */
  execute(
    handle: MachineHandle,
    command: string,
    parameters: unknown,
    options?: ExecuteOptions,
  ): Promise<CommandResult>;
  /** at most 50 steps, validated up front; see runBatch */
  executeBatch(handle: MachineHandle, body: unknown): Promise<BatchResult>;
  /** one of the sixteen browser ops; 400 UNKNOWN_BROWSER_OP */
  browser(handle: MachineHandle, op: string, parameters: unknown, options?: ExecuteOptions): Promise<OpResult>;
  /** bash (persistent per session_id), output capped at 5000 characters */
  terminal(handle: MachineHandle, input: unknown): Promise<OpResult>;
  /** one of the eleven file ops, confined to the home directory; 400 UNKNOWN_FILE_OP */
  files(handle: MachineHandle, op: string, parameters: unknown): Promise<OpResult>;
  /** archive the home directory into the snapshot store */
  snapshot(handle: MachineHandle, name: string): Promise<SnapshotInfo>;
  /** replace the home directory with a snapshot's content; keeps the running/stopped status */
  restoreFromSnapshot(handle: MachineHandle, snapshotId: string): Promise<MachineHandle>;
  /** VNC password, port and noVNC websocket; starts the VNC server on demand */
  connection(handle: MachineHandle): Promise<ConnectionInfo>;
  /** release resources held by the provider object itself (connections, timers); machines keep running */
  close(): Promise<void>;
  /** whether machines can start on this host now (GET /v1/machines/health); absent: always ready */
  readiness?(): ProviderReadinessBase;
  /** refreshes what readiness() knows by trying the provider's programs (cached by the provider) */
  probe?(): Promise<void>;
  /**
   * removes whatever a machine that has no handle may have left (a provision cut short by a crash):
   * processes, user, files. Idempotent, like terminate.
   */
  forget?(machineId: string): Promise<TerminateResult>;
  /** machine ids this provider holds something for on the host (users, homes), to find orphans */
  listMachineIds?(): Promise<string[]>;
}

export interface ProviderReadinessBase {
  ready: boolean;
  detail: string;
}

export function nowIso(): string {
  return new Date().toISOString();
}

export function assertStatus(handle: MachineHandle, allowed: HandleStatus[]): void {
  if (!allowed.includes(handle.status)) {
    throw new CoreError(
      "INVALID_STATE",
      `The machine is ${handle.status}; this operation needs it ${allowed.join(" or ")}.`,
      { current_state: handle.status, allowed_from: allowed },
    );
  }
}

export function assertRunning(handle: MachineHandle): void {
  assertStatus(handle, ["running"]);
}

export function assertDesktop(handle: MachineHandle): void {
  if (!handle.desktop_enabled) {
    throw new CoreError("FEATURE_NOT_AVAILABLE", "This machine was provisioned with desktop_enabled: false.");
  }
}

/** Thrown by backends for an operation-level failure; runCommand turns it into success: false. */
export class MachineOpError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function opOk(result: Record<string, unknown>): OpResult {
  return { success: true, result, error: null };
}

export function opFail(code: string, message: string, result: Record<string, unknown> = {}): OpResult {
  return { success: false, result, error: { code, message } };
}
