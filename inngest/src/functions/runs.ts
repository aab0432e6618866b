// The task-run functions. Thin: every step is one call into packages/core (core never imports Inngest).
// The same function objects run on a real Inngest server (served at /api/inngest) or on the embedded
// executor (docs/executor.md); they hold ids only and read everything else from the database.
//
//   run-task      run/started  -> start, then one step per agent step (screenshot -> engine -> policy
//                 -> execute -> record -> bill); waiting for a human is waitForEvent(run/resumed) with a
//                 timeout, re-checked against the database (an event sent before the wait began is not
//                 lost); cancelled by run/cancelled.
//   run-deadline  run/started  -> the deadline as a sleep race: sleepUntil(deadline) then time the run
//                 out unless it ended first; cancelled by run/finished and run/cancelled.
//   run-callback  run/callback -> at most three recorded delivery attempts, with sleeps between them.
//   run-sweeper   cron         -> re-sends start and callback events lost in a crash (idempotent ids).

import {
  checkHumanWait,
  expireRun,
  failRunAfterError,
  runAgentStep,
  type StepOutcome,
} from "@cua/core/runs/agent-step";
import { CALLBACK_MAX_ATTEMPTS, deliverCallback } from "@cua/core/runs/callbacks";
import type { RunsDeps } from "@cua/core/runs/ports";
import { runDeadline, startRun } from "@cua/core/runs/start-run";
import { sweepRuns } from "@cua/core/runs/sweep-runs";
import { type Inngest, NonRetriableError } from "inngest";
import { runCallback, runCancelled, runFinished, runResumed, runStarted } from "../events.ts";

export const RUN_TASK_ID = "run-task";
export const RUN_DEADLINE_ID = "run-deadline";
export const RUN_CALLBACK_ID = "run-callback";
export const RUN_SWEEPER_ID = "run-sweeper";

/**
 * How often a human wait re-reads the run: 1 s, doubling, at most 5 min. The first re-check is short: a
 * resume whose event arrived between the pause and the wait's registration is picked up within a second.
 */
const recheckSeconds = (k: number): number => Math.min(300, 2 ** k);

export function createRunFunctions(client: Inngest.Any, deps: RunsDeps) {
  const runTask = client.createFunction(
    {
      id: RUN_TASK_ID,
      name: "Task run",
      retries: 2,
      triggers: [{ event: runStarted }],
      cancelOn: [{ event: runCancelled, match: "data.run_id" }],
    },
    async ({ event, step }) => {
      const runId = event.data.run_id;
      const started = await step.run("start", () => startRun(deps, runId));
      // run/finished says whether a schedule started the run: only then does schedule-settle run (a start
      // memoized by an older version has no flag: treated as scheduled)
      const scheduled = (started as { scheduled?: boolean }).scheduled !== false;
      let out: StepOutcome | { kind: "running"; deadlineAt: string } = started;
      try {
        for (let i = 1; out.kind !== "terminal"; i++) {
          out = await step.run(`step-${i}`, () => runAgentStep(deps, runId));
          for (let k = 0; out.kind === "awaiting_human"; k++) {
            const left = Math.ceil((Date.parse(out.deadlineAt) - Date.now()) / 1000);
            const resumed = await step.waitForEvent(`human-${i}-${k}`, {
              event: runResumed,
              match: "data.run_id",
              timeout: `${Math.max(1, Math.min(recheckSeconds(k), left))}s`,
            });
            out = resumed
              ? { kind: "continue", step: 0 }
              : await step.run(`human-check-${i}-${k}`, () => checkHumanWait(deps, runId));
          }
        }
      } catch (e) {
        // a step's retries ran out: the run fails with the step's last error
        out = await step.run("fail", () => failRunAfterError(deps, runId, e instanceof Error ? e.message : String(e)));
      }
      await step.sendEvent(
        "finished",
        runFinished.create({ run_id: runId, scheduled }, { id: `run-finished-${runId}` }),
      );
      return out;
    },
  );

  const runDeadlineFn = client.createFunction(
    {
      id: RUN_DEADLINE_ID,
      name: "Task run deadline",
      triggers: [{ event: runStarted }],
      cancelOn: [
        { event: runFinished, match: "data.run_id" },
        { event: runCancelled, match: "data.run_id" },
      ],
    },
    async ({ event, step }) => {
      const runId = event.data.run_id;
      const at = await step.run("deadline", () => runDeadline(deps, runId));
      if (!at) return { expired: false };
      await step.sleepUntil("until-deadline", at);
      return step.run("expire", () => expireRun(deps, runId));
    },
  );

  const runCallbackFn = client.createFunction(
    { id: RUN_CALLBACK_ID, name: "Task run callback", retries: 0, triggers: [{ event: runCallback }] },
    async ({ event, step }) => {
      const id = event.data.delivery_id;
      const backoff = deps.runsConfig.callbackBackoffSeconds;
      for (let attempt = 1; attempt <= CALLBACK_MAX_ATTEMPTS; attempt++) {
        const r = await step.run(`attempt-${attempt}`, () => deliverCallback(deps, id, attempt));
        if (r.done) return r;
        if (attempt < CALLBACK_MAX_ATTEMPTS) await step.sleep(`backoff-${attempt}`, `${backoff[attempt - 1] ?? 60}s`);
      }
      throw new NonRetriableError("callback delivery: attempts exhausted");
    },
  );

  const runSweeper = client.createFunction(
    { id: RUN_SWEEPER_ID, name: "Task run sweeper", retries: 0, triggers: [{ cron: "* * * * *" }] },
    async ({ step }) => step.run("sweep", () => sweepRuns(deps)),
  );

  return [runTask, runDeadlineFn, runCallbackFn, runSweeper];
}
