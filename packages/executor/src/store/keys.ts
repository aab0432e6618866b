// Dedupe keys of queue items (executor_queue.dedupe_key): at most one item exists per key, which is
// what makes "at most one discovery call per run" and "a step is planned once" hold across workers.

export const itemKeys = {
  call: (runId: string) => `${runId}:call`,
  step: (runId: string, stepId: string) => `${runId}:step:${stepId}`,
  sleep: (runId: string, stepId: string) => `${runId}:sleep:${stepId}`,
  timeout: (runId: string, stepId: string) => `${runId}:timeout:${stepId}`,
  cron: (functionId: string, cron: string) => `cron:${functionId}:${cron}`,
};
