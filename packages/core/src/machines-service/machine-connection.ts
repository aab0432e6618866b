// GET /v1/machines/{id}/connection (connection:read; Cache-Control: no-store): VNC password and port, a
// noVNC websocket URL, and SSH details where the provider offers them (the local desktop provider does
// not: those fields are null). External machines: 409 INVALID_STATE, no credentials are issued.
import { CoreError } from "@cua/base/errors";
import type { ConnectionInfo } from "@cua/machines/provider";
import { syncHandle } from "./machine-access.ts";
import { withManagedReconcile } from "./reconcile-machine.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

export async function machineConnection(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
): Promise<ConnectionInfo> {
  const m = await loadMachine(deps, principal, id);
  if (m.kind === "external") {
    throw new CoreError(
      "INVALID_STATE",
      "External machines have no connection details; the service issues no credentials for them.",
      {
        current_state: m.status,
        allowed_from: [],
      },
    );
  }
  assertMachineStatus(m, ["running"], "connection details");
  return withManagedReconcile(deps, m, async ({ provider, handle }) => {
    const info = await provider.connection(handle);
    // starting VNC on demand changes the handle's process list: keep the stored handle current
    await syncHandle(deps, m, provider);
    return info;
  });
}
