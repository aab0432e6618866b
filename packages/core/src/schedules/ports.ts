// What the schedule use cases ask of the durable executor (core never imports Inngest): the API
// implements ScheduleJobs with typed events (inngest/src/schedule-jobs.ts).

export interface ScheduleJobs {
  /** (re-)arm the schedule's timer: sleep until its next_run_at; a timer of an older generation is void */
  armed(scheduleId: string, generation: number): Promise<void>;
}

export interface SchedulesPort {
  jobs: ScheduleJobs;
  /** the service's public base URL (webhook_url); else taken from the request's Host */
  publicBaseUrl?: string;
}
