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
import { type FormEvent, useState } from "react";
import { DefinitionEditor, EXAMPLE_DEFINITION } from "../../../components/workflow-definition.tsx";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { dateTime } from "../../../lib/format.ts";
import { type Mode, newestFirst } from "../../../lib/modes.ts";
import { useTRPC } from "../../../lib/trpc.ts";

const link = "font-medium text-indigo-700 underline dark:text-indigo-300";

function CreateWorkflowForm() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const [name, setName] = useState("");
  const [mode, setMode] = useState<Mode>("test");
  const [definition, setDefinition] = useState(JSON.stringify(EXAMPLE_DEFINITION, null, 2));
  const create = useMutation(
    trpc.console.workflows.create.mutationOptions({
      onSuccess: async (w) => {
        await qc.invalidateQueries({ queryKey: trpc.console.workflows.pathKey() });
        router.push(`/workflows/${w.id}`);
      },
    }),
  );
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(definition);
  } catch {}
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (parsed !== null) create.mutate({ mode, name, definition: parsed });
  };
  const err = create.error ? errorInfo(create.error) : null;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Create a workflow">
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
        <Field label="Name">
          <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </Field>
        <Field label="Mode" hint="Test workflows run sandbox task runs on test machines, free.">
          <Select value={mode} onChange={(e) => setMode(e.target.value as Mode)}>
            <option value="test">test</option>
            <option value="live">live</option>
          </Select>
        </Field>
      </div>
      <DefinitionEditor value={definition} onChange={setDefinition} error={create.error} />
      {err && err.code !== "VALIDATION_ERROR" && (
        <ErrorBox title="The workflow was not created" message={friendlyMessage(create.error)} code={err.code} />
      )}
      <Button type="submit" loading={create.isPending} disabled={!name.trim() || parsed === null}>
        Create workflow
      </Button>
    </form>
  );
}

export function WorkflowsView() {
  const trpc = useTRPC();
  const live = useQuery(trpc.console.workflows.list.queryOptions({ mode: "live", limit: "200" }));
  const test = useQuery(trpc.console.workflows.list.queryOptions({ mode: "test", limit: "200" }));
  const rows = newestFirst(live.data?.data, test.data?.data);
  const error = live.error ?? test.error;
  return (
    <>
      <PageHeader
        title="Workflows"
        description="Agent tasks chained with checks, branches, loops and human approvals, run durably."
      />
      <div className="space-y-6">
        <Card title="Create a workflow">
          <CreateWorkflowForm />
        </Card>
        <Card title="Workflows">
          {live.isPending || test.isPending ? (
            <Spinner label="Loading workflows" />
          ) : error ? (
            <ErrorBox message={friendlyMessage(error)} onRetry={() => Promise.all([live.refetch(), test.refetch()])} />
          ) : rows.length === 0 ? (
            <EmptyState title="No workflows yet">Create one above.</EmptyState>
          ) : (
            <Table
              caption="Workflows"
              rows={rows}
              rowKey={(w) => w.id}
              columns={[
                {
                  key: "name",
                  header: "Name",
                  cell: (w) => (
                    <Link className={link} href={`/workflows/${w.id}`}>
                      {w.name}
                    </Link>
                  ),
                },
                { key: "slug", header: "Slug", cell: (w) => <code className="text-xs">{w.slug}</code> },
                { key: "version", header: "Version", className: "text-right tabular-nums", cell: (w) => w.version },
                { key: "status", header: "Status", cell: (w) => w.status },
                { key: "mode", header: "Mode", cell: (w) => (w.id.startsWith("wf_test_") ? "test" : "live") },
                {
                  key: "updated",
                  header: "Updated",
                  cell: (w) => <span className="whitespace-nowrap">{dateTime(w.updated_at)}</span>,
                },
              ]}
            />
          )}
        </Card>
      </div>
    </>
  );
}
