"use client";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { PageHeader } from "@cua/ui/page-header";
import { Select } from "@cua/ui/select";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, useEffect, useState } from "react";
import { RunStatus } from "../../../../components/run-status.tsx";
import { DefinitionEditor } from "../../../../components/workflow-definition.tsx";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { dateTime } from "../../../../lib/format.ts";
import { useTRPC } from "../../../../lib/trpc.ts";
import { useMachinesOfBothModes } from "../../../../lib/use-machines.ts";

const link = "font-medium text-indigo-700 underline dark:text-indigo-300";
const area =
  "mt-1 block w-full rounded-md border border-slate-300 bg-white px-3 py-2 font-mono text-xs focus-visible:outline-2 focus-visible:outline-indigo-600 dark:border-slate-600 dark:bg-slate-900";

function StartRunForm({ id, test }: { id: string; test: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const machines = useMachinesOfBothModes("running");
  const mine = machines.machines.filter((m) => Boolean(m.is_test) === test);
  const [machineId, setMachineId] = useState("");
  const [inputs, setInputs] = useState('{\n  "month": "2026-10"\n}');
  const start = useMutation(
    trpc.console.workflows.startRun.mutationOptions({
      onSuccess: async (r) => {
        await qc.invalidateQueries({ queryKey: trpc.console.workflows.pathKey() });
        router.push(`/workflows/runs/${r.id}`);
      },
    }),
  );
  let parsed: Record<string, unknown> | null = null;
  try {
    const v = JSON.parse(inputs || "{}");
    parsed = v && typeof v === "object" && !Array.isArray(v) ? v : null;
  } catch {}
  const selected = machineId || mine[0]?.id || "";
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (parsed) start.mutate({ id, inputs: parsed, ...(selected ? { machine_id: selected } : {}) });
  };
  const err = start.error ? errorInfo(start.error) : null;
  if (machines.isPending) return <Spinner label="Loading machines" />;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Start a workflow run">
      <Field label="Default machine of task steps">
        <Select value={selected} onChange={(e) => setMachineId(e.target.value)}>
          {mine.length === 0 && <option value="">no running {test ? "test" : "live"} machine</option>}
          {mine.map((m) => (
            <option key={m.id} value={m.id}>
              {m.display_name || m.id}
            </option>
          ))}
        </Select>
      </Field>
      <label className="block text-sm font-medium">
        Inputs (JSON object)
        <textarea
          aria-label="Inputs"
          value={inputs}
          onChange={(e) => setInputs(e.target.value)}
          rows={4}
          className={area}
        />
      </label>
      {err && <ErrorBox title="The run did not start" message={friendlyMessage(start.error)} code={err.code} />}
      <Button type="submit" loading={start.isPending} disabled={!parsed}>
        Start run
      </Button>
    </form>
  );
}

export function WorkflowView({ id }: { id: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const wf = useQuery(trpc.console.workflows.get.queryOptions({ id }));
  const runs = useQuery({
    ...trpc.console.workflows.listRuns.queryOptions({
      workflow_id: id,
      limit: "50",
      mode: id.startsWith("wf_test_") ? "test" : "live",
    }),
    refetchInterval: 3000,
  });
  const versions = useQuery(trpc.console.workflows.listVersions.queryOptions({ id }));
  const [definition, setDefinition] = useState("");
  useEffect(() => {
    if (wf.data && definition === "") setDefinition(JSON.stringify(wf.data.definition, null, 2));
  }, [wf.data, definition]);
  const save = useMutation(
    trpc.console.workflows.update.mutationOptions({
      onSuccess: (w) => {
        setDefinition(JSON.stringify(w.definition, null, 2));
        return qc.invalidateQueries({ queryKey: trpc.console.workflows.pathKey() });
      },
    }),
  );
  const archive = useMutation(
    trpc.console.workflows.update.mutationOptions({
      onSuccess: () => qc.invalidateQueries({ queryKey: trpc.console.workflows.pathKey() }),
    }),
  );
  if (wf.isPending) return <Spinner label="Loading the workflow" />;
  if (wf.error) {
    return (
      <>
        <PageHeader title="Workflow" />
        <ErrorBox message={friendlyMessage(wf.error)} code={errorInfo(wf.error).code} onRetry={() => wf.refetch()} />
      </>
    );
  }
  const w = wf.data;
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(definition);
  } catch {}
  const saveErr = save.error ? errorInfo(save.error) : null;
  return (
    <>
      <PageHeader
        title={w.name}
        description={
          <span className="inline-flex flex-wrap items-center gap-2">
            <code className="text-xs">{w.id}</code> · slug <code className="text-xs">{w.slug}</code> · version{" "}
            <span data-testid="workflow-version">{w.version}</span> · {w.status}
          </span>
        }
        actions={
          <Button
            variant="secondary"
            onClick={() => archive.mutate({ id, status: w.status === "active" ? "archived" : "active" })}
            loading={archive.isPending}
          >
            {w.status === "active" ? "Archive" : "Unarchive"}
          </Button>
        }
      />
      <div className="space-y-6">
        <div className="grid grid-cols-1 gap-6 xl:grid-cols-2">
          <Card title="Start a run">
            {w.status === "active" ? (
              <StartRunForm id={id} test={id.startsWith("wf_test_")} />
            ) : (
              <p className="text-slate-500">An archived workflow starts no runs.</p>
            )}
          </Card>
          <Card title="Edit the definition">
            <form
              className="space-y-3"
              aria-label="Edit the definition"
              onSubmit={(e) => {
                e.preventDefault();
                if (parsed !== null) save.mutate({ id, definition: parsed });
              }}
            >
              <DefinitionEditor value={definition} onChange={setDefinition} error={save.error} />
              {saveErr && saveErr.code !== "VALIDATION_ERROR" && (
                <ErrorBox message={friendlyMessage(save.error)} code={saveErr.code} />
              )}
              <Button type="submit" loading={save.isPending} disabled={parsed === null}>
                Save as version {w.version + 1}
              </Button>
            </form>
          </Card>
        </div>
        <Card title="Runs">
          {runs.isPending ? (
            <Spinner label="Loading runs" />
          ) : runs.error ? (
            <ErrorBox message={friendlyMessage(runs.error)} onRetry={() => runs.refetch()} />
          ) : runs.data.data.length === 0 ? (
            <EmptyState title="No runs yet">Start one above.</EmptyState>
          ) : (
            <Table
              caption="Runs of this workflow"
              rows={runs.data.data}
              rowKey={(r) => r.id}
              columns={[
                {
                  key: "id",
                  header: "Run",
                  cell: (r) => (
                    <Link className={link} href={`/workflows/runs/${r.id}`}>
                      <code className="text-xs">{r.id}</code>
                    </Link>
                  ),
                },
                { key: "status", header: "Status", cell: (r) => <RunStatus status={r.status} /> },
                { key: "version", header: "Version", className: "text-right", cell: (r) => r.workflow_version ?? "" },
                { key: "created", header: "Created", cell: (r) => dateTime(r.created_at) },
              ]}
            />
          )}
        </Card>
        <Card title="Version history">
          {versions.isPending ? (
            <Spinner label="Loading versions" />
          ) : versions.error ? (
            <ErrorBox message={friendlyMessage(versions.error)} onRetry={() => versions.refetch()} />
          ) : (
            <ol className="space-y-2" data-testid="versions">
              {versions.data.data.map((v) => (
                <li key={v.version}>
                  <details>
                    <summary className="cursor-pointer">
                      version {v.version} · {v.name} · {dateTime(v.created_at)}
                    </summary>
                    <pre className="mt-1 max-h-64 overflow-auto rounded bg-slate-50 p-2 text-xs dark:bg-slate-900">
                      {JSON.stringify(v.definition, null, 2)}
                    </pre>
                  </details>
                </li>
              ))}
            </ol>
          )}
        </Card>
      </div>
    </>
  );
}
