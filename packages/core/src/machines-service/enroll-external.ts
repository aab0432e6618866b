// POST /v1/machines/external (DECISIONS.md "External machines"): creates an external machine and its
// device token. The token is returned here only (the API's idempotency layer replays this exact body,
// encrypted at rest, for an exact repeat with the same Idempotency-Key); the database keeps its SHA-256.

import { PROTOCOL_VERSION } from "@cua/machines/driver-wire";
import type { z } from "zod";
import { hashDeviceToken, newDeviceToken } from "./device-token.ts";
import { newMachineId } from "./ids.ts";
import { asJson } from "./machine-ops.ts";
import type { MachinePrincipal, MachineRecord } from "./record.ts";
import { toMachineRecord } from "./record.ts";
import { EXTERNAL_PROVIDER } from "./runtime.ts";
import type { EnrollBody } from "./schemas.ts";
import type { MachineDeps0 } from "./types.ts";

export async function enrollExternalMachine(
  deps: MachineDeps0,
  principal: MachinePrincipal,
  body: z.output<typeof EnrollBody>,
): Promise<{
  machine_id: string;
  device_token: string;
  protocol_version: 1;
  capabilities: string[];
  created_at: string;
  machine: MachineRecord;
}> {
  const token = newDeviceToken();
  const now = deps.clock.now();
  const m = await deps.db.machine.create({
    data: {
      id: newMachineId(principal.mode),
      accountId: principal.accountId,
      mode: principal.mode,
      kind: "external",
      isTest: false,
      displayName: body.display_name,
      osType: body.os_type,
      desktopEnabled: body.capabilities.includes("screenshot"),
      status: "running",
      provider: EXTERNAL_PROVIDER,
      screenWidth: body.screen_width,
      screenHeight: body.screen_height,
      capabilities: body.capabilities,
      metadata: asJson(body.metadata ?? {}),
      deviceTokenHash: hashDeviceToken(token),
      protocolVersion: PROTOCOL_VERSION,
      billedThrough: now,
    },
  });
  return {
    machine_id: m.id,
    device_token: token,
    protocol_version: PROTOCOL_VERSION,
    capabilities: m.capabilities,
    created_at: m.createdAt.toISOString(),
    machine: toMachineRecord(m),
  };
}
