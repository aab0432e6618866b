"use client";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { PageHeader } from "@cua/ui/page-header";
import { Spinner } from "@cua/ui/spinner";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { RunStatus } from "../../../../../components/run-status.tsx";
import { StepTree } from "../../../../../components/workflow-definition.tsx";
import { errorInfo, friendlyMessage } from "../../../../../lib/errors.ts";
import { dateTime } from "../../../../../lib/format.ts";
import { useTRPC } from "../../../../../lib/trpc.ts";

const TERMINAL = ["succeeded", "failed", "cancelled", "timed_out"];

/**
 * The run waits for a human: a human_approval step, or a task step whose task run waits (awaiting_run_id).
 * Both are answered with console.workflows.resumeRun; for a task step it resumes the task run with the note
 * (or, rejected, cancels it and the step fails with APPROVAL_REJECTED; docs/workflows.md).
 */
function ApprovalPanel({
  id,
  stepId,
  reason,
  taskRunId,
}: {
  id: string;
  stepId: string | null;
  reason: string | null;
  taskRunId: string | null;
}) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [note, setNote] = useState("");
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.workflows.pathKey() });
  const resume = useMutation(trpc.console.workflows.resumeRun.mutationOptions({ onSuccess: refresh }));
  return (
    <section
      aria-labelledby="approval-title"
      className="rounded-lg border-2 border-amber-400 bg-amber-50 p-4 dark:bg-amber-950"
    >
      <h2 id="approval-title" className="font-semibold text-amber-900 dark:text-amber-100">
        {taskRunId
          ? `The task run of step ${stepId ?? "?"} is waiting for a human`
          : `Approval needed${stepId ? ` (step ${stepId})` : ""}`}
      </h2>
      <p className="mt-1 text-sm text-amber-900 dark:text-amber-100" data-testid="approval-reason">
        {taskRunId ? `Reason: ${reason ?? "not given"}` : (reason ?? "No message.")}
      </p>
      {taskRunId && (
        <p className="mt-1 text-sm text-amber-900 dark:text-amber-100">
          Approve resumes the task run with your note; Reject cancels it and fails the workflow run. Or open{" "}
          <Link className="underline" href={`/runs/${taskRunId}`} data-testid="awaiting-task-run">
            the task run {taskRunId}
          </Link>
          .
        </p>
      )}
      <div className="mt-3 space-y-3">
        <Field label="Note (optional)">
          <textarea
            value={note}
            onChange={(e) => setNote(e.target.value)}
            rows={2}
            maxLength={10000}
            className="block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm dark:border-slate-600 dark:bg-slate-900"
          />
        </Field>
        <div className="flex flex-wrap gap-2">
          <Button
            onClick={() => resume.mutate({ id, approved: true, note: note.trim() || undefined })}
            loading={resume.isPending}
          >
            Approve
          </Button>
          <Button
            variant="danger"
            onClick={() => resume.mutate({ id, approved: false, note: note.trim() || undefined })}
            loading={resume.isPending}
          >
            Reject
          </Button>
        </div>
        {resume.error && (
          <ErrorBox
            title="That did not work"
            message={friendlyMessage(resume.error)}
            code={errorInfo(resume.error).code}
          />
        )}
      </div>
    </section>
  );
}

export function WorkflowRunView({ id }: { id: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const run = useQuery({
    ...trpc.console.workflows.getRun.queryOptions({ id }),
    refetchInterval: (q) => (q.state.data && TERMINAL.includes(q.state.data.status) ? false : 1000),
  });
  const cancel = useMutation(
    trpc.console.workflows.cancelRun.mutationOptions({
      onSuccess: () => qc.invalidateQueries({ queryKey: trpc.console.workflows.pathKey() }),
    }),
  );
  if (run.isPending) return <Spinner label="Loading the workflow run" />;
  if (run.error) {
    return (
      <>
        <PageHeader title="Workflow run" />
        <ErrorBox message={friendlyMessage(run.error)} code={errorInfo(run.error).code} onRetry={() => run.refetch()} />
      </>
    );
  }
  const r = run.data;
  const terminal = TERMINAL.includes(r.status);
  return (
    <>
      <PageHeader
        title="Workflow run"
        description={
          <span className="inline-flex flex-wrap items-center gap-2">
            <RunStatus status={r.status} />
            <code className="text-xs">{r.id}</code>
            {r.workflow_id && (
              <Link className="text-indigo-700 underline dark:text-indigo-300" href={`/workflows/${r.workflow_id}`}>
                workflow (version {r.workflow_version})
              </Link>
            )}
          </span>
        }
        actions={
          terminal ? null : (
            <Button variant="danger" onClick={() => cancel.mutate({ id })} loading={cancel.isPending}>
              Cancel run
            </Button>
          )
        }
      />
      <div className="space-y-6">
        {cancel.error && <ErrorBox message={friendlyMessage(cancel.error)} code={errorInfo(cancel.error).code} />}
        {r.status === "awaiting_human" && (
          <ApprovalPanel
            id={id}
            stepId={r.awaiting_step_id}
            reason={r.awaiting_human_reason}
            taskRunId={r.awaiting_run_id}
          />
        )}
        {terminal && (
          <div
            role="status"
            data-testid="workflow-outcome"
            className={`rounded-md p-3 text-sm ${r.status === "succeeded" ? "bg-green-50 text-green-900 dark:bg-green-950 dark:text-green-100" : "bg-red-50 text-red-900 dark:bg-red-950 dark:text-red-100"}`}
          >
            The workflow run {r.status.replace("_", " ")}
            {r.error ? `: ${r.error.code} ${r.error.message}` : "."}
            {r.output != null && <pre className="mt-2 overflow-auto text-xs">{JSON.stringify(r.output, null, 2)}</pre>}
          </div>
        )}
        <Card title="Steps">
          <StepTree steps={(r.definition as { steps: Record<string, unknown>[] }).steps} states={r.steps} />
        </Card>
        <Card title="Details">
          <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1">
            <dt className="text-slate-500">Inputs</dt>
            <dd>
              <code className="text-xs">{JSON.stringify(r.inputs)}</code>
            </dd>
            <dt className="text-slate-500">Iterations</dt>
            <dd>
              {r.iterations_used} of at most {r.max_iterations}
            </dd>
            <dt className="text-slate-500">Spent</dt>
            <dd>
              {r.spent_cents} credits{r.budget_cents ? ` of a ${r.budget_cents} budget` : ""}
            </dd>
            <dt className="text-slate-500">Created</dt>
            <dd>{dateTime(r.created_at)}</dd>
            <dt className="text-slate-500">Finished</dt>
            <dd>{r.finished_at ? dateTime(r.finished_at) : "not yet"}</dd>
          </dl>
        </Card>
      </div>
    </>
  );
}
