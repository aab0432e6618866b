// The `connection` of a machine create answer (DECISIONS.md "Compatibility amendments (2026-11-25)":
// {public_ip, ssh_port, ssh_username, vnc_port, websocket_port, has_ssh_key, has_vnc_password}, nulls where
// absent). It names where to connect, never a secret: the key and password come from GET .../connection
// (scope connection:read). A machine still provisioning, an external machine, or one whose details cannot be
// read yet answers nulls.
import type { Machine } from "@cua/db/generated";
import { withManagedReconcile } from "./reconcile-machine.ts";
import type { MachinesDeps } from "./runtime.ts";

export interface ConnectionSummary {
  public_ip: string | null;
  ssh_port: number | null;
  ssh_username: string | null;
  vnc_port: number | null;
  websocket_port: number | null;
  has_ssh_key: boolean;
  has_vnc_password: boolean;
}

export const NO_CONNECTION: ConnectionSummary = {
  public_ip: null,
  ssh_port: null,
  ssh_username: null,
  vnc_port: null,
  websocket_port: null,
  has_ssh_key: false,
  has_vnc_password: false,
};

function portOf(url: string | null | undefined): number | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    if (u.port) return Number(u.port);
    return u.protocol === "wss:" || u.protocol === "https:" ? 443 : 80;
  } catch {
    return null;
  }
}

export async function connectionSummary(deps: MachinesDeps, m: Machine): Promise<ConnectionSummary> {
  if (m.kind === "external" || m.status !== "running") return NO_CONNECTION;
  try {
    const c = await withManagedReconcile(deps, m, ({ provider, handle }) => provider.connection(handle));
    return {
      public_ip: c.host || null,
      ssh_port: c.ssh_port,
      ssh_username: c.ssh_username,
      vnc_port: c.vnc_port ?? null,
      websocket_port: portOf(c.websocket_url),
      has_ssh_key: Boolean(c.ssh_private_key_pem),
      has_vnc_password: Boolean(c.vnc_password),
    };
  } catch (e) {
    deps.logger.warn("connection summary unavailable", { machine_id: m.id, err: String(e) });
    return NO_CONNECTION;
  }
}
