// Machine pricing (DECISIONS.md "Machines": GET /v1/machines/pricing). Metering works in credit-minutes
// (1/60 credit): a running Linux machine accrues 5 per minute (5 credits/hour), Windows 9, a stopped or
// suspended machine 1. Whole credits are charged as they accrue; the remainder carries over.
export const MACHINE_PRICING = {
  linux_running_per_hour: 5,
  windows_running_per_hour: 9,
  stopped_per_hour: 1,
  billing: "per_minute" as const,
  provision_gate_credits: 20,
  snapshot_credits: 1,
};

/** credit-minutes (1/60 credit) accrued per minute in a status; 0 = not metered */
export function unitsPerMinute(m: { status: string; osType: string }): number {
  if (m.status === "running") {
    return m.osType === "windows" ? MACHINE_PRICING.windows_running_per_hour : MACHINE_PRICING.linux_running_per_hour;
  }
  if (m.status === "stopped" || m.status === "suspended") return MACHINE_PRICING.stopped_per_hour;
  return 0;
}

/** Only live managed machines are metered (test keys bill nothing; external machines cost 0). */
export function isMetered(m: { kind: string; isTest: boolean; mode: string }): boolean {
  return m.kind === "managed" && !m.isTest && m.mode === "live";
}
