// ScheduleJobs (packages/core/src/schedules/ports.ts) as events of the catalogue (events.ts). The event id
// names the schedule and its generation, so arming the same generation twice starts one timer.
import type { ScheduleJobs } from "@cua/core/schedules/ports";
import { type EventSink, scheduleArmed, sendAppEvents } from "./events.ts";

export class InngestScheduleJobs implements ScheduleJobs {
  sink: EventSink | null = null;

  async armed(scheduleId: string, generation: number): Promise<void> {
    if (!this.sink) throw new Error("the durable executor is not started");
    await sendAppEvents(
      this.sink,
      scheduleArmed.create(
        { schedule_id: scheduleId, generation },
        { id: `schedule-armed-${scheduleId}-${generation}` },
      ),
    );
  }
}
