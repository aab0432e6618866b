"use client";
import { Badge } from "@cua/ui/badge";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { PageHeader } from "@cua/ui/page-header";
import { Spinner } from "@cua/ui/spinner";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useSubscription } from "@trpc/tanstack-react-query";
import Link from "next/link";
import { useState } from "react";
import { LiveScreen } from "../../../../components/live-screen.tsx";
import { RunStatus } from "../../../../components/run-status.tsx";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { dateTime } from "../../../../lib/format.ts";
import { useTRPC } from "../../../../lib/trpc.ts";

interface Frame {
  seq: number;
  event: string;
  data: Record<string, unknown>;
  created_at: string;
}

function describe(f: Frame): string {
  const d = f.data;
  switch (f.event) {
    case "status":
      return `status → ${String(d.status)}${d.note ? ` (note: ${String(d.note)})` : ""}`;
    case "step": {
      const a = d.action as { action_type?: string; params?: unknown } | undefined;
      return `step ${String(d.step)}: ${a?.action_type ?? "?"} ${a?.params ? JSON.stringify(a.params) : ""}${d.reasoning ? ` · ${String(d.reasoning)}` : ""}`;
    }
    case "billing":
      return `step ${String(d.step)} billed ${String(d.credits_charged)} credits (total ${String(d.total_credits_charged)})`;
    case "awaiting_human":
      return `waiting for a human: ${String(d.reason)}`;
    case "terminal":
      return `finished: ${String(d.status)}${d.error ? ` (${JSON.stringify(d.error)})` : ""}`;
    default:
      return JSON.stringify(d);
  }
}

function HumanPanel({ id, reason }: { id: string; reason: string | null }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [note, setNote] = useState("");
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.runs.pathKey() });
  const resume = useMutation(trpc.console.runs.resume.mutationOptions({ onSuccess: refresh }));
  const cancel = useMutation(trpc.console.runs.cancel.mutationOptions({ onSuccess: refresh }));
  const err = resume.error ?? cancel.error;
  return (
    <section
      aria-labelledby="human-title"
      className="rounded-lg border-2 border-amber-400 bg-amber-50 p-4 dark:bg-amber-950"
    >
      <h2 id="human-title" className="font-semibold text-amber-900 dark:text-amber-100">
        The agent is waiting for a human
      </h2>
      <p className="mt-1 text-sm text-amber-900 dark:text-amber-100" data-testid="awaiting-reason">
        Reason: {reason ?? "not given"}
      </p>
      <div className="mt-3 space-y-3">
        <Field label="Note for the agent (optional)">
          <textarea
            value={note}
            onChange={(e) => setNote(e.target.value)}
            rows={2}
            maxLength={10000}
            className="block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm focus-visible:outline-2 focus-visible:outline-indigo-600 dark:border-slate-600 dark:bg-slate-900"
          />
        </Field>
        <div className="flex flex-wrap gap-2">
          <Button
            onClick={() => resume.mutate({ id, note: note.trim() || undefined })}
            loading={resume.isPending}
            disabled={cancel.isPending}
          >
            Approve and resume
          </Button>
          <Button
            variant="danger"
            onClick={() => cancel.mutate({ id })}
            loading={cancel.isPending}
            disabled={resume.isPending}
          >
            Cancel run
          </Button>
        </div>
        {err && <ErrorBox title="That did not work" message={friendlyMessage(err)} code={errorInfo(err).code} />}
      </div>
    </section>
  );
}

export function RunView({ id }: { id: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const run = useQuery({
    ...trpc.console.runs.get.queryOptions({ id }),
    // the event stream invalidates it on every change; this is only a safety net
    refetchInterval: (q) =>
      q.state.data && ["succeeded", "failed", "cancelled", "timed_out"].includes(q.state.data.status) ? false : 5000,
  });
  const [frames, setFrames] = useState<Frame[]>([]);
  const terminal = run.data ? ["succeeded", "failed", "cancelled", "timed_out"].includes(run.data.status) : false;
  const events = useSubscription(
    trpc.console.runs.events.subscriptionOptions(
      { id },
      {
        enabled: run.isSuccess,
        onData: (tracked) => {
          const f = tracked.data as Frame;
          setFrames((prev) => (prev.some((p) => p.seq === f.seq) ? prev : [...prev, f].sort((a, b) => a.seq - b.seq)));
          if (f.event !== "step" && f.event !== "billing")
            void qc.invalidateQueries({ queryKey: trpc.console.runs.get.queryKey({ id }) });
        },
      },
    ),
  );
  const cancel = useMutation(
    trpc.console.runs.cancel.mutationOptions({
      onSuccess: () => qc.invalidateQueries({ queryKey: trpc.console.runs.pathKey() }),
    }),
  );

  if (run.isPending) return <Spinner label="Loading the run" />;
  if (run.error) {
    return (
      <>
        <PageHeader title="Run" />
        <ErrorBox message={friendlyMessage(run.error)} code={errorInfo(run.error).code} onRetry={() => run.refetch()} />
      </>
    );
  }
  const r = run.data;
  const active = r.status === "running" || r.status === "awaiting_human" || r.status === "queued";
  return (
    <>
      <PageHeader
        title="Run"
        description={
          <span className="inline-flex flex-wrap items-center gap-2">
            <RunStatus status={r.status} />
            <code className="text-xs">{r.id}</code>
            <Link className="text-indigo-700 underline dark:text-indigo-300" href={`/machines/${r.machine_id}`}>
              machine
            </Link>
            {/* a workflow's task step: its workflow run waits and resumes with it (docs/workflows.md) */}
            {r.metadata?.workflow_run_id && (
              <Link
                className="text-indigo-700 underline dark:text-indigo-300"
                href={`/workflows/runs/${r.metadata.workflow_run_id}`}
                data-testid="workflow-run-link"
              >
                step {r.metadata.workflow_step_id ?? "?"} of a workflow run
              </Link>
            )}
          </span>
        }
        actions={
          active && r.status !== "awaiting_human" ? (
            <Button variant="danger" onClick={() => cancel.mutate({ id })} loading={cancel.isPending}>
              Cancel run
            </Button>
          ) : null
        }
      />
      <div className="space-y-6">
        <p className="whitespace-pre-wrap rounded-md bg-slate-50 p-3 text-sm dark:bg-slate-900">{r.task}</p>
        {cancel.error && <ErrorBox message={friendlyMessage(cancel.error)} code={errorInfo(cancel.error).code} />}
        {r.status === "awaiting_human" && <HumanPanel id={id} reason={r.awaiting_human_reason} />}
        {terminal && (
          <div
            role="status"
            className={`rounded-md p-3 text-sm ${r.status === "succeeded" ? "bg-green-50 text-green-900 dark:bg-green-950 dark:text-green-100" : "bg-red-50 text-red-900 dark:bg-red-950 dark:text-red-100"}`}
          >
            The run {r.status.replace("_", " ")} after {r.steps_completed} steps
            {r.error ? `: ${r.error.code} ${r.error.message}` : "."}
            {r.result != null && r.status === "succeeded" && <p className="mt-2">{r.result.summary}</p>}
          </div>
        )}
        <div className="grid grid-cols-1 gap-6 xl:grid-cols-2">
          <Card title="Machine screen">
            {active ? (
              <LiveScreen id={r.machine_id} name="the run's machine" />
            ) : (
              <p className="text-slate-500">The live screen shows while the run is active.</p>
            )}
          </Card>
          <Card
            title="Events"
            actions={
              <span className="text-xs text-slate-500" aria-live="polite">
                {events.status === "pending" ? (
                  <Badge tone="green">live</Badge>
                ) : events.status === "connecting" ? (
                  "connecting…"
                ) : events.status === "error" ? (
                  "stream interrupted, reconnecting"
                ) : (
                  "ended"
                )}
              </span>
            }
          >
            {frames.length === 0 ? (
              <Spinner label="Waiting for events" />
            ) : (
              <ol className="max-h-96 space-y-1 overflow-auto font-mono text-xs" data-testid="run-events">
                {frames.map((f) => (
                  <li key={f.seq} className="flex gap-2">
                    <span className="shrink-0 text-slate-400">#{f.seq}</span>
                    <span className="shrink-0 font-semibold">{f.event}</span>
                    <span className="break-all">{describe(f)}</span>
                  </li>
                ))}
              </ol>
            )}
          </Card>
        </div>
        <Card title="Details">
          <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1">
            <dt className="text-slate-500">Steps</dt>
            <dd>
              {r.steps_completed} of at most {r.max_steps}
            </dd>
            <dt className="text-slate-500">Engine</dt>
            <dd>
              {r.cua_version} · {r.llm.provider}
            </dd>
            <dt className="text-slate-500">Credits</dt>
            <dd>{r.credits_charged}</dd>
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
