// The schedule functions (docs/schedules.md "Firing"). Thin: every step is one call into packages/core.
//
//   schedule-timer     schedule/armed -> sleepUntil(next_run_at), then fire the slot if this generation is
//                      still current (the claim is a conditional update: a slot fires once). Re-armed by
//                      every change (create, PATCH, resume, a fire); a newer generation cancels older timers.
//                      A timer due while the service was down fires once at the next start.
//   schedule-settle    run/finished   -> settle the history entry of a run a schedule started: status,
//                      duration, the credit meter, the failure count, then the chain triggers.
//   schedule-sweeper   cron           -> settles entries whose run ended without run/finished (cancelled),
//                      re-arms active schedules whose timer is overdue (a lost event).
import {
  type FireDeps,
  fireDue,
  rearmOverdue,
  settleRun,
  settleStragglers,
  timerTarget,
} from "@cua/core/schedules/fire";
import type { Inngest } from "inngest";
import { runFinished, scheduleArmed } from "../events.ts";

export const SCHEDULE_TIMER_ID = "schedule-timer";
export const SCHEDULE_SETTLE_ID = "schedule-settle";
export const SCHEDULE_SWEEPER_ID = "schedule-sweeper";

export function createScheduleFunctions(client: Inngest.Any, deps: FireDeps) {
  const timer = client.createFunction(
    {
      id: SCHEDULE_TIMER_ID,
      name: "Schedule timer",
      retries: 3,
      triggers: [{ event: scheduleArmed }],
      cancelOn: [
        {
          event: scheduleArmed,
          if: "async.data.schedule_id == event.data.schedule_id && async.data.generation > event.data.generation",
        },
      ],
    },
    async ({ event, step }) => {
      const { schedule_id: id, generation } = event.data;
      const at = await step.run("next", () => timerTarget(deps, id, generation));
      if (!at) return { fired: null };
      await step.sleepUntil("until-next-run", at);
      const fired = await step.run("fire", () => fireDue(deps, id, generation));
      return { fired };
    },
  );

  const settle = client.createFunction(
    {
      id: SCHEDULE_SETTLE_ID,
      name: "Schedule run settle",
      retries: 3,
      // only runs a schedule started (issue 16: every task run started this function for nothing)
      triggers: [{ event: runFinished, if: "event.data.scheduled == true" }],
    },
    async ({ event, step }) => step.run("settle", () => settleRun(deps, event.data.run_id)),
  );

  const sweeper = client.createFunction(
    { id: SCHEDULE_SWEEPER_ID, name: "Schedule sweeper", retries: 0, triggers: [{ cron: "* * * * *" }] },
    async ({ step }) => {
      const settled = await step.run("settle-stragglers", () => settleStragglers(deps));
      const rearmed = await step.run("rearm-overdue", () => rearmOverdue(deps));
      return { settled, rearmed };
    },
  );

  return [timer, settle, sweeper];
}
