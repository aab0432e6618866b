"use client";
import { Badge, type BadgeTone } from "@cua/ui/badge";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { PageHeader } from "@cua/ui/page-header";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { type ReactNode, useEffect, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { dateTime } from "../../../../lib/format.ts";
import { viewerZone } from "../../../../lib/schedule-preview.ts";
import { useTRPC } from "../../../../lib/trpc.ts";
import { ScheduleStatus, TwoZones } from "../schedule-status.tsx";
import { EditScheduleForm } from "./edit-schedule.tsx";
import { TriggersCard } from "./triggers-card.tsx";

const link = "font-medium text-indigo-700 underline dark:text-indigo-300";
const HISTORY_TONE: Record<string, BadgeTone> = {
  queued: "neutral",
  running: "blue",
  completed: "green",
  failed: "red",
  skipped: "neutral",
  cancelled: "neutral",
  insufficient_credits: "amber",
};

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <dt className="text-xs font-medium uppercase tracking-wide text-slate-500 dark:text-slate-400">{label}</dt>
      <dd className="mt-0.5 text-sm">{children}</dd>
    </div>
  );
}

export function ScheduleView({ id }: { id: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [viewer, setViewer] = useState("UTC");
  const [editing, setEditing] = useState(false);
  useEffect(() => setViewer(viewerZone()), []);
  const schedule = useQuery(trpc.console.schedules.get.queryOptions({ id }));
  const history = useQuery({
    ...trpc.console.schedules.runs.queryOptions({ id, limit: "50" }),
    refetchInterval: (q) =>
      q.state.data?.data.some((r) => r.status === "queued" || r.status === "running") ? 1000 : 5000,
  });
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.schedules.pathKey() });
  const pause = useMutation(trpc.console.schedules.pause.mutationOptions({ onSuccess: refresh }));
  const resume = useMutation(trpc.console.schedules.resume.mutationOptions({ onSuccess: refresh }));
  const runNow = useMutation(trpc.console.schedules.run.mutationOptions({ onSuccess: refresh }));
  const actionError = pause.error ?? resume.error ?? runNow.error;

  if (schedule.isPending) return <Spinner label="Loading the schedule" />;
  if (schedule.error)
    return (
      <ErrorBox
        title="The schedule could not load"
        message={friendlyMessage(schedule.error)}
        code={errorInfo(schedule.error).code}
        onRetry={() => schedule.refetch()}
      />
    );
  const s = schedule.data;
  return (
    <>
      <PageHeader
        title={s.name}
        description={
          <Link className={link} href="/schedules">
            All schedules
          </Link>
        }
        actions={
          <>
            <Button variant="secondary" onClick={() => setEditing(true)} disabled={editing}>
              Edit
            </Button>
            {s.status === "active" ? (
              <Button variant="secondary" loading={pause.isPending} onClick={() => pause.mutate({ id })}>
                Pause
              </Button>
            ) : (
              <Button variant="secondary" loading={resume.isPending} onClick={() => resume.mutate({ id })}>
                Resume
              </Button>
            )}
            <Button loading={runNow.isPending} onClick={() => runNow.mutate({ id })}>
              Run now
            </Button>
          </>
        }
      />
      <div className="space-y-6">
        {actionError && (
          <ErrorBox
            title="The action failed"
            message={friendlyMessage(actionError)}
            code={errorInfo(actionError).code}
          />
        )}
        {editing && (
          <Card title="Edit the schedule">
            <EditScheduleForm schedule={s} viewer={viewer} onDone={() => setEditing(false)} />
          </Card>
        )}
        <Card title="Schedule">
          <dl className="grid grid-cols-1 gap-4 sm:grid-cols-3">
            <Fact label="Status">
              <ScheduleStatus status={s.status} reason={s.paused_reason} />
            </Fact>
            <Fact label="Next run">
              <span data-testid="next-run">
                <TwoZones at={s.next_run_at} zone={s.timezone} viewer={viewer} />
              </span>
            </Fact>
            <Fact label="When">
              <span data-testid="schedule-when">
                {s.run_at ? `once at ${dateTime(s.run_at)}` : <code>{s.cron}</code>} ({s.frequency ?? "one-shot"},{" "}
                {s.timezone})
              </span>
            </Fact>
            <Fact label="Machine">
              <Link className={link} href={`/machines/${s.machine_id}`}>
                {s.machine_id}
              </Link>
            </Fact>
            <Fact label="Mode">{s.is_test ? "test" : "live"}</Fact>
            <Fact label="Runs">
              {s.run_count} (failures in a row: {s.consecutive_failures} of {s.max_consecutive_failures})
            </Fact>
            <div className="sm:col-span-3">
              <Fact label="Task prompt">
                <span className="whitespace-pre-wrap" data-testid="task-prompt">
                  {s.task_prompt}
                </span>
              </Fact>
            </div>
          </dl>
        </Card>
        <Card title="History">
          {history.isPending ? (
            <Spinner label="Loading history" />
          ) : history.error ? (
            <ErrorBox message={friendlyMessage(history.error)} onRetry={() => history.refetch()} />
          ) : history.data.data.length === 0 ? (
            <EmptyState title="No runs yet">Fires appear here; Run now fires at once.</EmptyState>
          ) : (
            <Table
              caption="History"
              rows={history.data.data}
              rowKey={(r) => r.id}
              columns={[
                {
                  key: "status",
                  header: "Status",
                  cell: (r) => (
                    <span data-testid="history-status">
                      <Badge tone={HISTORY_TONE[r.status] ?? "neutral"}>{r.status.replaceAll("_", " ")}</Badge>
                      {r.error && <span className="ml-1 text-xs text-red-700 dark:text-red-300">{r.error.code}</span>}
                    </span>
                  ),
                },
                { key: "trigger", header: "Trigger", cell: (r) => r.trigger.replace("_", " ") },
                {
                  key: "credits",
                  header: "Credits",
                  className: "text-right tabular-nums",
                  cell: (r) => r.credits_charged,
                },
                {
                  key: "duration",
                  header: "Duration",
                  className: "text-right tabular-nums",
                  cell: (r) => (r.duration_seconds == null ? "" : `${r.duration_seconds} s`),
                },
                {
                  key: "when",
                  header: "Executed",
                  cell: (r) => <span className="whitespace-nowrap">{dateTime(r.executed_at)}</span>,
                },
                {
                  key: "run",
                  header: "Run",
                  cell: (r) =>
                    r.run_id ? (
                      <Link className={link} href={`/runs/${r.run_id}`}>
                        {r.run_id}
                      </Link>
                    ) : (
                      "none"
                    ),
                },
              ]}
            />
          )}
        </Card>
        <TriggersCard scheduleId={id} isTest={s.is_test} />
      </div>
    </>
  );
}
