// The public machine record (DECISIONS.md "Machines") and the row -> record mapping.

import { CoreError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import { z } from "zod";
import type { KeyMode } from "../keys/scopes.ts";
import { parseMachineId } from "./ids.ts";
import type { MachineDeps0 } from "./types.ts";

export const MACHINE_STATUSES = ["provisioning", "running", "stopped", "suspended", "terminated", "error"] as const;
export type MachineStatus = (typeof MACHINE_STATUSES)[number];

export const CAPABILITIES = ["screenshot", "mouse", "keyboard", "scroll", "terminal", "files", "browser"] as const;
export type Capability = (typeof CAPABILITIES)[number];

export const MachineRecord = z
  .object({
    id: z.string().describe("UUID (live) or mch_test_<hex> (test)"),
    kind: z.enum(["managed", "external"]).describe("managed by the service, or a customer-operated external machine"),
    is_test: z.boolean().describe("a mock machine of a test key"),
    display_name: z.string().describe("human name"),
    os_type: z.enum(["linux", "windows", "macos"]).describe("operating system (macos only for external machines)"),
    desktop_enabled: z.boolean().describe("runs a desktop (X server, window manager, browser)"),
    status: z.enum(MACHINE_STATUSES).describe("provisioning, running, stopped, suspended, terminated or error"),
    status_reason: z
      .string()
      .nullable()
      .describe(
        "why the machine is in its status, e.g. suspended_for_billing, ttl_expired, provision_failed, start_failed, lost, service_stopped",
      ),
    status_message: z
      .string()
      .nullable()
      .describe(
        "what happened, in words, when status_reason alone does not say it (e.g. which program or Debian package is missing)",
      ),
    provider: z.string().describe("provider serving the machine: local-desktop, mock or external"),
    ttl_minutes: z.number().int().nullable().describe("auto-destroy after this many minutes (null: no TTL)"),
    expires_at: z.string().nullable().describe("when the TTL destroys the machine (ISO 8601) or null"),
    screen: z
      .object({ width: z.number().int().describe("pixels"), height: z.number().int().describe("pixels") })
      .describe("screen size"),
    capabilities: z
      .array(z.string())
      .describe("what the machine can do: screenshot, mouse, keyboard, scroll, terminal, files, browser"),
    metadata: z.record(z.string(), z.unknown()).describe("caller metadata"),
    protocol_version: z
      .number()
      .int()
      .nullable()
      .describe("external machines: driver protocol version (1); null for managed"),
    last_seen_at: z.string().nullable().describe("external machines: last driver contact; null for managed"),
    credits_charged: z.number().int().describe("credits metered for this machine so far"),
    created_at: z.string().describe("ISO 8601"),
    updated_at: z.string().describe("ISO 8601"),
  })
  .describe("A machine");
export type MachineRecord = z.infer<typeof MachineRecord>;

export function toMachineRecord(m: Machine): MachineRecord {
  return {
    id: m.id,
    kind: m.kind as MachineRecord["kind"],
    is_test: m.isTest,
    display_name: m.displayName,
    os_type: m.osType as MachineRecord["os_type"],
    desktop_enabled: m.desktopEnabled,
    status: m.status as MachineStatus,
    status_reason: m.statusReason,
    status_message: m.statusMessage,
    provider: m.provider,
    ttl_minutes: m.ttlMinutes,
    expires_at: m.expiresAt?.toISOString() ?? null,
    screen: { width: m.screenWidth, height: m.screenHeight },
    capabilities: m.capabilities,
    metadata: (m.metadata ?? {}) as Record<string, unknown>,
    protocol_version: m.protocolVersion,
    last_seen_at: m.kind === "external" ? (m.lastHeartbeatAt?.toISOString() ?? null) : null,
    credits_charged: m.creditsCharged,
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}

export interface MachinePrincipal {
  accountId: string;
  mode: KeyMode;
}

/**
 * The machine a principal may see: 400 INVALID_MACHINE_ID for a malformed id, 404 MACHINE_NOT_FOUND
 * (DECISIONS.md "Compatibility amendments") for an unknown id, another account's machine, or an id of the other mode. Terminated machines stay
 * visible (status terminated) unless `live` is set.
 */
export async function loadMachine(
  deps: MachineDeps0,
  principal: MachinePrincipal,
  rawId: unknown,
  opts: { live?: boolean } = {},
): Promise<Machine> {
  const { id, mode } = parseMachineId(rawId);
  if (mode !== principal.mode) throw new CoreError("MACHINE_NOT_FOUND", "The machine does not exist.");
  const m = await deps.db.machine.findFirst({ where: { id, accountId: principal.accountId, mode: principal.mode } });
  if (!m || (opts.live && m.status === "terminated"))
    throw new CoreError("MACHINE_NOT_FOUND", "The machine does not exist.");
  return m;
}

/** 409 INVALID_STATE with current_state and allowed_from. */
export function assertMachineStatus(
  m: Pick<Machine, "status">,
  allowed: MachineStatus[],
  what = "this operation",
): void {
  if (!allowed.includes(m.status as MachineStatus)) {
    throw new CoreError("INVALID_STATE", `The machine is ${m.status}; ${what} needs it ${allowed.join(" or ")}.`, {
      current_state: m.status,
      allowed_from: allowed,
    });
  }
}
