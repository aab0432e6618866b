// GET /v1/machines/health (public): the managed provider's real readiness (issue 10), not just whether
// one is configured: its programs (with the Debian packages that bring them) found and runnable, root,
// and whether the last desktop start in this process failed.
import type { z } from "zod";
import type { MachinesDeps } from "./runtime.ts";
import type { MachinesHealth } from "./schemas.ts";

interface ReadinessLike {
  ready: boolean;
  detail: string;
  missing?: { package: string }[];
}

export async function machinesHealth(deps: Pick<MachinesDeps, "machines">): Promise<z.infer<typeof MachinesHealth>> {
  const managed = deps.machines.managed;
  await managed?.probe?.().catch(() => {});
  const r: ReadinessLike | null = managed
    ? ((managed.readiness?.() as ReadinessLike | undefined) ?? { ready: true, detail: "ready" })
    : null;
  return {
    status: r?.ready ? "ok" : "degraded",
    managed_provider: managed?.name ?? null,
    managed_ready: r?.ready ?? false,
    managed_detail: r ? r.detail : "No managed machine provider runs on this server (MACHINE_PROVIDER=none).",
    missing_packages: [...new Set((r?.missing ?? []).map((m) => m.package))],
    mock_provider: deps.machines.mock.name,
    time: new Date().toISOString(),
  };
}
