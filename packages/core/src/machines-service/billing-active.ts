// GET /v1/billing/active (DECISIONS.md "Compatibility amendments (2026-11-25)": new read endpoints): what is
// metered right now, with its rate and what it has cost. Machines: live managed machines that are running,
// stopped or suspended (GET /v1/machines/pricing rates); test and external machines cost 0 and are not
// listed. Schedules: live managed schedule executions whose run has not ended (schedules/active.ts).

import { activeSchedules } from "../schedules/active.ts";
import { isMetered, unitsPerMinute } from "./pricing.ts";
import type { MachinePrincipal } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

export interface ActiveMachine {
  machine_id: string;
  display_name: string;
  status: string;
  os_type: string;
  rate_credits_per_hour: number;
  accrued_credits: number;
  unbilled_credits: number;
  metered_since: string;
}

export async function activeBilling(deps: MachinesDeps, principal: MachinePrincipal) {
  const rows =
    principal.mode === "live"
      ? await deps.db.machine.findMany({
          where: {
            accountId: principal.accountId,
            mode: "live",
            kind: "managed",
            isTest: false,
            status: { in: ["running", "stopped", "suspended"] },
          },
          orderBy: [{ createdAt: "desc" }, { id: "desc" }],
        })
      : [];
  const now = deps.clock.now();
  const minuteMs = deps.machines.minuteMs;
  const machines: ActiveMachine[] = rows
    .filter((m) => isMetered(m))
    .map((m) => {
      const perMinute = unitsPerMinute(m); // credit-minutes (1/60 credit) per minute
      const minutes = Math.max(0, Math.floor((now.getTime() - m.billedThrough.getTime()) / minuteMs));
      return {
        machine_id: m.id,
        display_name: m.displayName,
        status: m.status,
        os_type: m.osType,
        rate_credits_per_hour: perMinute,
        accrued_credits: m.creditsCharged,
        unbilled_credits: Math.floor((m.meterRemainder + minutes * perMinute) / 60),
        metered_since: m.createdAt.toISOString(),
      };
    });
  const schedules = await activeSchedules(deps, principal);
  return {
    mode: principal.mode,
    machines,
    schedules,
    total_rate_credits_per_hour:
      machines.reduce((s, m) => s + m.rate_credits_per_hour, 0) +
      schedules.reduce((s, x) => s + x.rate_credits_per_hour, 0),
    total_accrued_credits:
      machines.reduce((s, m) => s + m.accrued_credits, 0) + schedules.reduce((s, x) => s + x.accrued_credits, 0),
    time: now.toISOString(),
  };
}
