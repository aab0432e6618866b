// The workflow-run function (docs/workflows.md "Execution"): one durable function per workflow run. It walks
// the pinned definition; every effect is one memoized step whose body is one core call
// (packages/core/src/workflows/engine.ts), so a crash replays the walk from memoized results and no step
// body that committed runs again. Conditions and templates are evaluated here over the memoized results
// (deterministic on replay); nothing is evaluated as code. Steps without effects (assert, if, loop, retry,
// parallel, succeed, fail) run inside the function: what they did is recorded in a batch (per branch) that
// the next effect's body writes in its own transaction (a task start, an approval, the finish).
//
//   workflow-run   workflow/started -> begin, walk, finish; cancelled by workflow/cancelled.
//     task            enter, start a task run (the run-task function drives it, billed as a run), then wait
//                     for run/finished of that run (re-checked against the database, a missed event only
//                     delays), bind {status, passed, result, run_id, steps, error}
//     parallel        the branches concurrently (Promise.allSettled: a failed branch fails the step after
//                     every branch ended)
//     loop / retry    bounded by the loop's max_iterations / max_attempts and the run's max_iterations
//     human_approval  waitForEvent(workflow/resumed) with the approval's timeout, re-checked in the database

import { CALLBACK_MAX_ATTEMPTS } from "@cua/core/runs/callbacks";
import { deliverWorkflowCallback } from "@cua/core/workflows/callbacks";
import { evaluate } from "@cua/core/workflows/conditions";
import { DEFAULT_LOOP_MAX_ITERATIONS, flattenSteps, type Step } from "@cua/core/workflows/definition";
import {
  type Begun,
  beginWorkflowRun,
  checkApproval,
  checkTaskStep,
  finishWorkflowRun,
  type Gate,
  openApproval,
  type Pending,
  type RunFailure,
  type StepRecord,
  startTaskStep,
  type TaskFields,
} from "@cua/core/workflows/engine";
import type { WorkflowsDeps } from "@cua/core/workflows/ports";
import { sweepWorkflows } from "@cua/core/workflows/sweep-workflows";
import { render, type Scope } from "@cua/core/workflows/templates";
import { type Inngest, NonRetriableError } from "inngest";
import { runFinished, workflowCallback, workflowCancelled, workflowResumed, workflowStarted } from "../events.ts";

export const WORKFLOW_RUN_ID = "workflow-run";
export const WORKFLOW_CALLBACK_ID = "workflow-callback";
export const WORKFLOW_SWEEPER_ID = "workflow-sweeper";

/** The failure codes a retry step retries (the others end the run). */
const RETRYABLE = new Set(["ASSERTION_FAILED", "STEP_FAILED"]);

class Failed extends Error {
  constructor(readonly fail: RunFailure) {
    super(fail.message);
  }
}
class Succeeded extends Error {
  constructor(readonly output: unknown) {
    super("succeeded");
  }
}
class Stopped extends Error {}

/** Waits re-read the database after 1 s, doubling, at most 60 s (bounded by the step's own deadline). */
const recheckSeconds = (k: number): number => Math.min(60, 2 ** k);

const asText = (v: unknown): string =>
  v === undefined || v === null ? "" : typeof v === "string" ? v : JSON.stringify(v);

export function createWorkflowFunctions(client: Inngest.Any, deps: WorkflowsDeps) {
  const workflowRun = client.createFunction(
    {
      id: WORKFLOW_RUN_ID,
      name: "Workflow run",
      retries: 2,
      triggers: [{ event: workflowStarted }],
      cancelOn: [{ event: workflowCancelled, match: "data.workflow_run_id" }],
    },
    async ({ event, step }) => {
      const runId = event.data.workflow_run_id;
      const begun = (await step.run("begin", () => beginWorkflowRun(deps, runId))) as Begun;
      if (!begun.started) return { status: "not started" };
      const scope: Scope = { inputs: begun.inputs, vars: {}, steps: {} };
      /** loop iterations and retry attempts after the first (guard max_iterations) */
      let iterations = 0;
      const check = (g: Gate) => {
        if (g.ok) return;
        if (g.stop) throw new Stopped();
        throw new Failed(g.fail);
      };
      const secondsUntil = (iso: string) =>
        Math.max(1, Math.ceil((Date.parse(iso) - deps.clock.now().getTime()) / 1000));
      const sub = (iter: string, id: string, n: number) => `${iter ? `${iter}/` : ""}${id}.${n}`;
      type Buf = { records: StepRecord[] };
      /** the batch so far, emptied: the next effect writes it */
      const take = (buf: Buf): Pending => {
        const records = buf.records;
        buf.records = [];
        return { records, iterations };
      };
      const iterate = (s: Step) => {
        if (iterations >= begun.maxIterations)
          throw new Failed({
            code: "GUARD_EXCEEDED",
            message: `max_iterations (${begun.maxIterations}) used up`,
            step_id: s.id,
          });
        iterations++;
      };

      const runList = async (list: Step[], iter: string, buf: Buf): Promise<void> => {
        for (const s of list) await runStep(s, iter, buf);
      };

      const runStep = async (s: Step, iter: string, buf: Buf): Promise<void> => {
        const k = iter ? `${s.id}@${iter}` : s.id;
        const m = { stepId: s.id, type: s.type, iteration: iter };
        const at = () => deps.clock.now().toISOString();
        const enter = () => buf.records.push({ ...m, kind: "enter", at: at() });
        const leave = (status: "succeeded" | "failed", output?: unknown, error?: RunFailure | null) =>
          buf.records.push({ ...m, kind: "leave", status, output, error: error ?? null, at: at() });
        const bind = (v: unknown) => {
          scope.steps[s.id] = v;
        };
        switch (s.type) {
          case "assert": {
            enter();
            const passed = evaluate(s.condition, scope);
            const fail: RunFailure | null = passed
              ? null
              : {
                  code: "ASSERTION_FAILED",
                  message: asText(render(s.message ?? "", scope)) || `assert "${s.id}" did not hold`,
                  step_id: s.id,
                };
            leave(passed ? "succeeded" : "failed", { passed }, fail);
            bind({ passed });
            if (fail) throw new Failed(fail);
            return;
          }
          case "succeed": {
            enter();
            const output = render(s.output ?? null, scope) ?? null;
            leave("succeeded", { output });
            bind({ output });
            throw new Succeeded(output);
          }
          case "fail": {
            enter();
            const fail: RunFailure = {
              code: "WORKFLOW_FAILED",
              message: asText(render(s.message ?? "", scope)) || `fail step "${s.id}"`,
              step_id: s.id,
            };
            leave("failed", null, fail);
            throw new Failed(fail);
          }
          case "if": {
            enter();
            const cond = evaluate(s.condition, scope);
            // the branch not taken: its steps are skipped (in this iteration)
            for (const x of flattenSteps((cond ? s.else : s.then) ?? []))
              buf.records.push({
                stepId: x.id,
                type: x.type,
                iteration: iter,
                kind: "leave",
                status: "skipped",
                at: at(),
              });
            await runList(cond ? s.then : (s.else ?? []), iter, buf);
            const out = { condition: cond, branch: cond ? "then" : s.else ? "else" : null };
            leave("succeeded", out);
            bind(out);
            return;
          }
          case "loop": {
            enter();
            const max = s.max_iterations ?? DEFAULT_LOOP_MAX_ITERATIONS;
            let count: number | null = null;
            if (s.count !== undefined) {
              const c = typeof s.count === "string" ? render(s.count, scope) : s.count;
              const n = typeof c === "string" && /^\d+$/.test(c) ? Number(c) : c;
              if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n > 1000) {
                const fail: RunFailure = {
                  code: "STEP_FAILED",
                  message: `loop "${s.id}": count resolved to ${asText(c) || "nothing"}, not an integer from 0 to 1000`,
                  step_id: s.id,
                };
                leave("failed", null, fail);
                throw new Failed(fail);
              }
              count = n;
            }
            let i = 0;
            for (;;) {
              const more = count !== null ? i < count : evaluate(s.while!, scope);
              if (!more) break;
              if (i >= max) {
                const fail: RunFailure = {
                  code: "GUARD_EXCEEDED",
                  message: `loop "${s.id}" reached its max_iterations (${max})`,
                  step_id: s.id,
                };
                leave("failed", { iterations: i }, fail);
                throw new Failed(fail);
              }
              iterate(s);
              i++;
              await runList(s.body, sub(iter, s.id, i), buf);
            }
            const out = { iterations: i };
            leave("succeeded", out);
            bind(out);
            return;
          }
          case "retry": {
            enter();
            let attempt = 1;
            for (; ; attempt++) {
              if (attempt > 1) iterate(s);
              try {
                await runList(s.body, sub(iter, s.id, attempt), buf);
                break;
              } catch (e) {
                if (e instanceof Failed && RETRYABLE.has(e.fail.code) && attempt < s.max_attempts) continue;
                throw e;
              }
            }
            const out = { attempts: attempt };
            leave("succeeded", out);
            bind(out);
            return;
          }
          case "parallel": {
            enter();
            // each branch records into its own batch (the first one takes what came before)
            const bufs: Buf[] = s.branches.map((_, i) => ({ records: i === 0 ? take(buf).records : [] }));
            const settled = await Promise.allSettled(s.branches.map((b, i) => runList(b, iter, bufs[i]!)));
            for (const b of bufs) buf.records.push(...b.records);
            const rejected = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
            if (rejected) throw rejected.reason;
            const out = { branches: s.branches.length };
            leave("succeeded", out);
            bind(out);
            return;
          }
          case "human_approval": {
            const message = asText(render(s.message ?? "", scope)) || `Approve step "${s.id}"?`;
            const pending = take(buf);
            const opened = await step.run(`approval:${k}`, () =>
              openApproval(deps, runId, m, message, s.timeout_seconds ?? null, pending),
            );
            if (!opened.ok) return check(opened);
            let until = opened.deadlineAt;
            for (let j = 0; ; j++) {
              await step.waitForEvent(`approval-wait:${k}:${j}`, {
                event: workflowResumed,
                match: "data.workflow_run_id",
                timeout: `${Math.min(recheckSeconds(j), secondsUntil(until))}s`,
              });
              const c = await step.run(`approval-check:${k}:${j}`, () => checkApproval(deps, runId, m));
              if (c.pending) {
                until = c.deadlineAt;
                continue;
              }
              if ("stop" in c) throw new Stopped();
              bind({ approved: c.approved, note: c.note });
              if (c.fail) throw new Failed(c.fail);
              return;
            }
          }
          case "task": {
            const fields: TaskFields = {
              task: asText(render(s.task, scope)),
              machine_id: s.machine_id ? asText(render(s.machine_id, scope)) || null : null,
              ...(s.cua_version ? { cua_version: s.cua_version } : {}),
              ...(s.instructions ? { instructions: asText(render(s.instructions, scope)) } : {}),
              ...(s.system_prompt ? { system_prompt: asText(render(s.system_prompt, scope)) } : {}),
              ...(s.max_steps ? { max_steps: s.max_steps } : {}),
              ...(s.on_awaiting_human ? { on_awaiting_human: s.on_awaiting_human } : {}),
            };
            enter();
            const pending = take(buf);
            const started = await step.run(`task:${k}`, () => startTaskStep(deps, runId, m, fields, pending));
            if (!started.ok) return check(started);
            const child = started.runId;
            let until = deps.clock.now().toISOString();
            for (let j = 0; ; j++) {
              await step.waitForEvent(`task-wait:${k}:${j}`, {
                event: runFinished,
                if: `async.data.run_id == "${child}"`,
                timeout: `${j === 0 ? 1 : Math.min(recheckSeconds(j), Math.max(1, secondsUntil(until)))}s`,
              });
              const c = await step.run(`task-check:${k}:${j}`, () => checkTaskStep(deps, runId, m, child));
              if (!c.done) {
                until = c.deadlineAt;
                continue;
              }
              if ("stop" in c) throw new Stopped();
              bind(c.binding);
              if (s.save_as) {
                scope.vars[s.save_as] = c.binding;
                scope.steps[s.save_as] = c.binding;
              }
              if (c.fail) throw new Failed(c.fail);
              return;
            }
          }
        }
      };

      const root: Buf = { records: [] };
      const finish = (outcome: { status: "succeeded"; output: unknown } | { status: "failed"; error: RunFailure }) => {
        const pending = take(root);
        return step.run("finish", () => finishWorkflowRun(deps, runId, outcome, pending));
      };
      try {
        await runList(begun.definition.steps, "", root);
        const output = begun.definition.output === undefined ? null : (render(begun.definition.output, scope) ?? null);
        return { status: await finish({ status: "succeeded", output }) };
      } catch (e) {
        if (e instanceof Stopped) return { status: "stopped" };
        if (e instanceof Succeeded) return { status: await finish({ status: "succeeded", output: e.output }) };
        const fail: RunFailure =
          e instanceof Failed ? e.fail : { code: "STEP_FAILED", message: e instanceof Error ? e.message : String(e) };
        return { status: await finish({ status: "failed", error: fail }) };
      }
    },
  );
  // workflow-callback: at most three recorded delivery attempts, with sleeps between them (like run-callback)
  const workflowCallbackFn = client.createFunction(
    { id: WORKFLOW_CALLBACK_ID, name: "Workflow run callback", retries: 0, triggers: [{ event: workflowCallback }] },
    async ({ event, step }) => {
      const id = event.data.delivery_id;
      const backoff = deps.runsConfig.callbackBackoffSeconds;
      for (let attempt = 1; attempt <= CALLBACK_MAX_ATTEMPTS; attempt++) {
        const r = await step.run(`attempt-${attempt}`, () => deliverWorkflowCallback(deps, id, attempt));
        if (r.done) return r;
        if (attempt < CALLBACK_MAX_ATTEMPTS) await step.sleep(`backoff-${attempt}`, `${backoff[attempt - 1] ?? 60}s`);
      }
      throw new NonRetriableError("workflow callback delivery: attempts exhausted");
    },
  );
  // workflow-sweeper: re-sends start and callback events lost between a commit and its send
  const workflowSweeper = client.createFunction(
    { id: WORKFLOW_SWEEPER_ID, name: "Workflow run sweeper", retries: 0, triggers: [{ cron: "* * * * *" }] },
    async ({ step }) => step.run("sweep", () => sweepWorkflows(deps)),
  );
  return [workflowRun, workflowCallbackFn, workflowSweeper];
}
