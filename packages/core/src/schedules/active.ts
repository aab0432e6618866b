// Schedules metered right now, for GET /v1/billing/active (DECISIONS.md "Compatibility amendments": "metered
// machines and schedules running now, with their rate and accrued credits"): the live, managed schedules'
// executions whose run has not ended yet. Their meter (10 credits per started minute, 20 minimum, 6-hour
// cap) is charged when the run ends; `accrued_credits` is what it would charge now.
import type { CoreDeps } from "../deps.ts";
import { meterCredits, SCHEDULE_CREDITS_PER_MINUTE } from "./fire.ts";

export interface ActiveSchedule {
  schedule_id: string;
  name: string;
  schedule_run_id: string;
  run_id: string | null;
  rate_credits_per_hour: number;
  accrued_credits: number;
  metered_since: string;
}

export async function activeSchedules(
  deps: Pick<CoreDeps, "db" | "clock">,
  p: { accountId: string; mode: "live" | "test" },
): Promise<ActiveSchedule[]> {
  if (p.mode !== "live") return [];
  const rows = await deps.db.scheduleRun.findMany({
    where: {
      settledAt: null,
      runId: { not: null },
      schedule: { accountId: p.accountId, mode: "live", llmProvider: "managed" },
    },
    include: { schedule: { select: { name: true } } },
    orderBy: [{ executedAt: "desc" }, { id: "desc" }],
    take: 200,
  });
  const now = deps.clock.now().getTime();
  return rows.map((r) => ({
    schedule_id: r.scheduleId,
    name: r.schedule.name,
    schedule_run_id: r.id,
    run_id: r.runId,
    rate_credits_per_hour: SCHEDULE_CREDITS_PER_MINUTE * 60,
    accrued_credits: meterCredits(Math.max(0, (now - r.executedAt.getTime()) / 1000)),
    metered_since: r.executedAt.toISOString(),
  }));
}
