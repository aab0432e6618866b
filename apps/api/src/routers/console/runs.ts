// Task runs as the operator sees them: both modes in one list, create a run on a machine, follow its event
// stream live (a tRPC subscription over server-sent events, resumable by seq), resume with a note, cancel.
// Each procedure calls the same core use case as /v1/runs, in the run's (or machine's) mode.
import { operatorPrincipal, operatorPrincipalFor, operatorPrincipalForRun } from "@cua/core/console/operator-principal";
import { cancelRun } from "@cua/core/runs/cancel-run";
import { createRun } from "@cua/core/runs/create-run";
import type { RunEventFrame } from "@cua/core/runs/event-hub";
import { getRun, listRuns } from "@cua/core/runs/get-run";
import { resumeRun } from "@cua/core/runs/resume-run";
import { tracked } from "@trpc/server";
import { z } from "zod";
import { consoleProcedure } from "../../trpc/console-procedures.ts";
import { router } from "../../trpc/init.ts";
import { CreateRunBody, ResumeRunBody, RunIdInput } from "../runs.types.ts";

const ConsoleCreateRun = CreateRunBody.pick({
  machine_id: true,
  task: true,
  max_steps: true,
  on_awaiting_human: true,
  cua_version: true,
});

export const consoleRunsRouter = router({
  list: consoleProcedure
    .input(z.strictObject({ status: z.string().max(32).optional().describe("only runs in this status") }))
    .query(async ({ ctx, input }) => {
      const [live, test] = await Promise.all(
        (["live", "test"] as const).map((mode) =>
          listRuns(ctx.deps, operatorPrincipal(ctx.operator, mode), { status: input.status, limit: 200 }),
        ),
      );
      return { runs: [...live!.runs, ...test!.runs].sort((a, b) => b.created_at.localeCompare(a.created_at)) };
    }),
  get: consoleProcedure
    .input(RunIdInput)
    .query(({ ctx, input }) => getRun(ctx.deps, operatorPrincipalForRun(ctx.operator, input.id), input.id)),
  create: consoleProcedure
    .input(ConsoleCreateRun)
    .mutation(({ ctx, input }) =>
      createRun(
        ctx.deps,
        { principal: operatorPrincipalFor(ctx.operator, input.machine_id), requestId: ctx.requestId, llm: {} },
        input,
      ),
    ),
  resume: consoleProcedure
    .input(ResumeRunBody.extend(RunIdInput.shape))
    .mutation(({ ctx, input }) =>
      resumeRun(ctx.deps, operatorPrincipalForRun(ctx.operator, input.id), input.id, input.note?.trim() || null),
    ),
  cancel: consoleProcedure
    .input(RunIdInput)
    .mutation(({ ctx, input }) => cancelRun(ctx.deps, operatorPrincipalForRun(ctx.operator, input.id), input.id)),
  /** The run's persisted frames after `after` (or the client's last event id), then live ones; ends after terminal. */
  events: consoleProcedure
    .input(RunIdInput.extend({ lastEventId: z.string().max(16).nullish().describe("resume after this seq") }))
    .subscription(async function* ({ ctx, input, signal }) {
      await getRun(ctx.deps, operatorPrincipalForRun(ctx.operator, input.id), input.id); // 404 before streaming
      const after = input.lastEventId && /^\d+$/.test(input.lastEventId) ? Number(input.lastEventId) : 0;
      const queue: RunEventFrame[] = [];
      let wake: (() => void) | null = null;
      let failure: unknown = null;
      const sub = ctx.deps.runEvents.subscribe(
        input.id,
        after,
        (frames) => {
          queue.push(...frames);
          wake?.();
        },
        (e) => {
          failure = e;
          wake?.();
        },
      );
      const aborted = () => wake?.();
      signal?.addEventListener("abort", aborted);
      try {
        for (;;) {
          while (queue.length > 0) {
            const f = queue.shift()!;
            yield tracked(String(f.seq), f);
            if (f.event === "terminal") return;
          }
          if (failure) throw failure;
          if (signal?.aborted) return;
          await new Promise<void>((r) => {
            wake = r;
          });
          wake = null;
        }
      } finally {
        signal?.removeEventListener("abort", aborted);
        sub.close();
      }
    }),
});
