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
import { useRouter, useSearchParams } from "next/navigation";
import { type FormEvent, useState } from "react";
import { RunStatus } from "../../../components/run-status.tsx";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { dateTime } from "../../../lib/format.ts";
import { type Mode, newestFirst } from "../../../lib/modes.ts";
import { useTRPC } from "../../../lib/trpc.ts";
import { useMachinesOfBothModes } from "../../../lib/use-machines.ts";

const STATUSES = ["queued", "running", "awaiting_human", "succeeded", "failed", "cancelled", "timed_out"] as const;
const link = "font-medium text-indigo-700 underline dark:text-indigo-300";

function CreateRunForm({ defaultMachine }: { defaultMachine?: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const machines = useMachinesOfBothModes("running");
  const [machineId, setMachineId] = useState(defaultMachine ?? "");
  const [task, setTask] = useState("");
  const [maxSteps, setMaxSteps] = useState("");
  const [onHuman, setOnHuman] = useState<"pause" | "fail" | "cancel">("pause");
  const create = useMutation(
    trpc.console.runs.create.mutationOptions({
      onSuccess: async (r) => {
        await qc.invalidateQueries({ queryKey: trpc.console.runs.pathKey() });
        router.push(`/runs/${r.id}`);
      },
    }),
  );
  if (machines.isPending) return <Spinner label="Loading machines" />;
  if (machines.error) return <ErrorBox message={friendlyMessage(machines.error)} onRetry={() => machines.refetch()} />;
  if (machines.machines.length === 0) {
    return (
      <EmptyState title="No running machine">
        A run drives a machine.{" "}
        <Link className={link} href="/machines">
          Provision one
        </Link>{" "}
        first.
      </EmptyState>
    );
  }
  const selected = machineId || machines.machines[0]!.id;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      machine_id: selected,
      task,
      max_steps: maxSteps ? Number(maxSteps) : undefined,
      on_awaiting_human: onHuman,
    });
  };
  const err = create.error ? errorInfo(create.error) : null;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Create a run">
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-3">
        <Field label="Machine">
          <Select value={selected} onChange={(e) => setMachineId(e.target.value)}>
            {machines.machines.map((m) => (
              <option key={m.id} value={m.id}>
                {(m.display_name || m.id) + (m.is_test ? " (test)" : "")}
              </option>
            ))}
          </Select>
        </Field>
        <Field label="Max steps (optional)" hint="1 to 1000 (default 50).">
          <Input
            inputMode="numeric"
            value={maxSteps}
            onChange={(e) => setMaxSteps(e.target.value.replace(/\D/g, ""))}
          />
        </Field>
        <Field label="When it needs a human">
          <Select value={onHuman} onChange={(e) => setOnHuman(e.target.value as "pause" | "fail" | "cancel")}>
            <option value="pause">Pause and wait for approval</option>
            <option value="fail">Fail the run</option>
            <option value="cancel">Cancel the run</option>
          </Select>
        </Field>
      </div>
      <Field
        label="Task"
        hint="Plain language. Test machines run the deterministic sandbox: #steps=N, #fail, #human, #slow=MS, #timeout."
      >
        <textarea
          value={task}
          onChange={(e) => setTask(e.target.value)}
          rows={3}
          required
          maxLength={16000}
          className="block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm focus-visible:outline-2 focus-visible:outline-indigo-600 dark:border-slate-600 dark:bg-slate-900"
        />
      </Field>
      {err && <ErrorBox title="The run was not created" message={friendlyMessage(create.error)} code={err.code} />}
      <Button type="submit" loading={create.isPending} disabled={!task.trim()}>
        Start run
      </Button>
    </form>
  );
}

export function RunsView() {
  const trpc = useTRPC();
  const params = useSearchParams();
  const [status, setStatus] = useState("");
  // both modes: the console's runs.list is GET /v1/runs in one mode at a time
  const listOf = (mode: Mode) => ({
    ...trpc.console.runs.list.queryOptions({ mode, status: status || undefined, limit: "200" }),
    refetchInterval: (q: { state: { data?: { data: { status: string }[] } } }) =>
      q.state.data?.data.some((r) => ["queued", "running", "awaiting_human"].includes(r.status)) ? 2000 : 10000,
  });
  const live = useQuery(listOf("live"));
  const test = useQuery(listOf("test"));
  const runs = {
    isPending: live.isPending || test.isPending,
    error: live.error ?? test.error,
    rows: newestFirst(live.data?.data, test.data?.data),
    refetch: () => Promise.all([live.refetch(), test.refetch()]),
  };
  return (
    <>
      <PageHeader
        title="Runs"
        description="Agents driving a task to completion on a machine; they can pause for a human."
      />
      <div className="space-y-6">
        <Card title="Start a run">
          <CreateRunForm defaultMachine={params.get("machine") ?? undefined} />
        </Card>
        <Card title="Runs">
          <div className="mb-4 max-w-xs">
            <Field label="Status">
              <Select value={status} onChange={(e) => setStatus(e.target.value)}>
                <option value="">All runs</option>
                {STATUSES.map((s) => (
                  <option key={s} value={s}>
                    {s.replace("_", " ")}
                  </option>
                ))}
              </Select>
            </Field>
          </div>
          {runs.isPending ? (
            <Spinner label="Loading runs" />
          ) : runs.error ? (
            <ErrorBox message={friendlyMessage(runs.error)} onRetry={() => runs.refetch()} />
          ) : runs.rows.length === 0 ? (
            <EmptyState title={status ? `No ${status.replace("_", " ")} runs` : "No runs yet"}>
              Start one above.
            </EmptyState>
          ) : (
            <Table
              caption="Runs"
              rows={runs.rows}
              rowKey={(r) => r.id}
              columns={[
                {
                  key: "task",
                  header: "Task",
                  cell: (r) => (
                    <Link className={`${link} line-clamp-2 max-w-md`} href={`/runs/${r.id}`}>
                      {r.task}
                    </Link>
                  ),
                },
                { key: "status", header: "Status", cell: (r) => <RunStatus status={r.status} /> },
                {
                  key: "steps",
                  header: "Steps",
                  className: "text-right tabular-nums",
                  cell: (r) => `${r.steps_completed} / ${r.max_steps}`,
                },
                {
                  key: "credits",
                  header: "Credits",
                  className: "text-right tabular-nums",
                  cell: (r) => r.credits_charged,
                },
                {
                  key: "created",
                  header: "Created",
                  cell: (r) => <span className="whitespace-nowrap">{dateTime(r.created_at)}</span>,
                },
              ]}
            />
          )}
        </Card>
      </div>
    </>
  );
}
