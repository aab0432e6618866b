"use client";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { PageHeader } from "@cua/ui/page-header";
import { Select } from "@cua/ui/select";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, useEffect, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { type Mode, newestFirst } from "../../../lib/modes.ts";
import { type PreviewInput, timingOf, viewerZone } from "../../../lib/schedule-preview.ts";
import { useTRPC } from "../../../lib/trpc.ts";
import { useMachinesOfBothModes } from "../../../lib/use-machines.ts";
import { ScheduleStatus, TwoZones } from "./schedule-status.tsx";
import { FirePreview, TaskPromptField, TimingInputs, useNow, usePreview } from "./timing-fields.tsx";

const link = "font-medium text-indigo-700 underline dark:text-indigo-300";
function CreateScheduleForm() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const machines = useMachinesOfBothModes(undefined);
  const [name, setName] = useState("");
  const [task, setTask] = useState("");
  const [machineId, setMachineId] = useState("");
  const [p, setP] = useState<PreviewInput>({
    frequency: "daily",
    cron: "",
    time: "09:00",
    timezone: "UTC",
    day_of_week: "1",
    day_of_month: "1",
    run_at: "",
  });
  const [viewer, setViewer] = useState("UTC");
  // the viewer's zone and "now" are the browser's: read after hydration
  useEffect(() => {
    const z = viewerZone();
    setViewer(z);
    setP((old) => ({ ...old, timezone: z }));
  }, []);
  const now = useNow();
  const preview = usePreview(p, now);
  const create = useMutation(
    trpc.console.schedules.create.mutationOptions({
      onSuccess: async (s) => {
        await qc.invalidateQueries({ queryKey: trpc.console.schedules.pathKey() });
        router.push(`/schedules/${s.id}`);
      },
    }),
  );
  if (machines.isPending) return <Spinner label="Loading machines" />;
  if (machines.error) return <ErrorBox message={friendlyMessage(machines.error)} onRetry={() => machines.refetch()} />;
  if (machines.machines.length === 0) {
    return (
      <EmptyState title="No machine">
        A schedule's runs drive a machine.{" "}
        <Link className={link} href="/machines">
          Provision one
        </Link>{" "}
        first.
      </EmptyState>
    );
  }
  const selected = machines.machines.find((m) => m.id === machineId) ?? machines.machines[0]!;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      mode: (selected.is_test ? "test" : "live") as Mode,
      name,
      task_prompt: task,
      machine_id: selected.id,
      timezone: p.timezone,
      ...timingOf(p),
    });
  };
  const err = create.error ? errorInfo(create.error) : null;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Create a schedule">
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
        <Field label="Name">
          <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </Field>
        <Field label="Machine" hint="The schedule takes the machine's mode (live or test).">
          <Select value={selected.id} onChange={(e) => setMachineId(e.target.value)}>
            {machines.machines.map((m) => (
              <option key={m.id} value={m.id}>
                {`${m.display_name || m.id}${m.is_test ? " (test)" : ""} · ${m.status}`}
              </option>
            ))}
          </Select>
        </Field>
      </div>
      <TaskPromptField
        value={task}
        onChange={setTask}
        hint="What each fire asks the agent. Test machines run the deterministic sandbox (#steps=N, #fail, ...)."
      />
      <TimingInputs p={p} onChange={setP} idPrefix="create" />
      <FirePreview preview={preview} zone={p.timezone} viewer={viewer} />
      {err && <ErrorBox title="The schedule was not created" message={friendlyMessage(create.error)} code={err.code} />}
      <Button type="submit" loading={create.isPending} disabled={!name.trim() || !task.trim()}>
        Create schedule
      </Button>
    </form>
  );
}

export function SchedulesView() {
  const trpc = useTRPC();
  const [status, setStatus] = useState("");
  const [viewer, setViewer] = useState("UTC");
  useEffect(() => setViewer(viewerZone()), []);
  // both modes: the console's schedules.list is GET /v1/schedules in one mode at a time
  const listOf = (mode: Mode) => ({
    ...trpc.console.schedules.list.queryOptions({ mode, status: status || undefined, limit: "200" }),
    refetchInterval: 15_000,
  });
  const live = useQuery(listOf("live"));
  const test = useQuery(listOf("test"));
  const error = live.error ?? test.error;
  const rows = newestFirst(live.data?.data, test.data?.data);
  return (
    <>
      <PageHeader
        title="Schedules"
        description="Recurring or one-shot agent work on a machine, fired on time or by a signed webhook."
      />
      <div className="space-y-6">
        <Card title="Create a schedule">
          <CreateScheduleForm />
        </Card>
        <Card title="Schedules">
          <div className="mb-4 max-w-xs">
            <Field label="Status">
              <Select value={status} onChange={(e) => setStatus(e.target.value)}>
                <option value="">All schedules</option>
                <option value="active">active</option>
                <option value="paused">paused</option>
              </Select>
            </Field>
          </div>
          {live.isPending || test.isPending ? (
            <Spinner label="Loading schedules" />
          ) : error ? (
            <ErrorBox message={friendlyMessage(error)} onRetry={() => Promise.all([live.refetch(), test.refetch()])} />
          ) : rows.length === 0 ? (
            <EmptyState title={status ? `No ${status} schedules` : "No schedules yet"}>Create one above.</EmptyState>
          ) : (
            <Table
              caption="Schedules"
              rows={rows}
              rowKey={(s) => s.id}
              columns={[
                {
                  key: "name",
                  header: "Name",
                  cell: (s) => (
                    <Link className={link} href={`/schedules/${s.id}`}>
                      {s.name}
                    </Link>
                  ),
                },
                { key: "mode", header: "Mode", cell: (s) => (s.is_test ? "test" : "live") },
                {
                  key: "status",
                  header: "Status",
                  cell: (s) => <ScheduleStatus status={s.status} reason={s.paused_reason} />,
                },
                {
                  key: "when",
                  header: "When",
                  cell: (s) => (
                    <span className="whitespace-nowrap">
                      {s.run_at ? "once" : <code>{s.cron}</code>} · {s.timezone}
                    </span>
                  ),
                },
                {
                  key: "next",
                  header: "Next run",
                  cell: (s) => <TwoZones at={s.next_run_at} zone={s.timezone} viewer={viewer} />,
                },
                { key: "runs", header: "Runs", className: "text-right tabular-nums", cell: (s) => s.run_count },
              ]}
            />
          )}
        </Card>
      </div>
    </>
  );
}
