"use client";
import { Badge } from "@cua/ui/badge";
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
import { useMutation, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, useState } from "react";
import { MachineStatus } from "../../../components/machine-status.tsx";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { dateTime } from "../../../lib/format.ts";
import { useTRPC } from "../../../lib/trpc.ts";
import { useMachinesOfBothModes } from "../../../lib/use-machines.ts";

const STATUSES = ["provisioning", "running", "stopped", "suspended", "error", "terminated"] as const;

function ProvisionForm() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const [mode, setMode] = useState<"live" | "test">("live");
  const [name, setName] = useState("");
  const [ttl, setTtl] = useState("");
  const provision = useMutation(
    trpc.console.machines.provision.mutationOptions({
      onSuccess: async (r) => {
        await qc.invalidateQueries({ queryKey: trpc.console.machines.pathKey() });
        router.push(`/machines/${r.machine.id}`);
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    provision.mutate({ mode, display_name: name.trim() || undefined, ttl_minutes: ttl ? Number(ttl) : undefined });
  };
  const err = provision.error ? errorInfo(provision.error) : null;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Provision a machine">
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
        <Field label="Name">
          <Input
            name="display_name"
            maxLength={200}
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="e.g. checkout tests"
          />
        </Field>
        <Field label="Time to live in minutes (optional)" hint="5 to 10080; the machine is destroyed after it.">
          <Input
            inputMode="numeric"
            name="ttl"
            value={ttl}
            onChange={(e) => setTtl(e.target.value.replace(/\D/g, ""))}
          />
        </Field>
      </div>
      <fieldset>
        <legend className="mb-1 text-sm font-medium">Mode</legend>
        <div className="flex flex-wrap gap-4 text-sm">
          <label className="inline-flex items-center gap-2">
            <input
              type="radio"
              name="mode"
              checked={mode === "live"}
              onChange={() => setMode("live")}
              className="h-4 w-4 accent-indigo-600"
            />
            Live: a real Linux desktop, billed per minute (needs 20 credits)
          </label>
          <label className="inline-flex items-center gap-2">
            <input
              type="radio"
              name="mode"
              checked={mode === "test"}
              onChange={() => setMode("test")}
              className="h-4 w-4 accent-indigo-600"
            />
            Test: a mock machine, free
          </label>
        </div>
      </fieldset>
      {err && (
        <ErrorBox title="The machine was not provisioned" message={friendlyMessage(provision.error)} code={err.code} />
      )}
      <Button type="submit" loading={provision.isPending}>
        Provision
      </Button>
    </form>
  );
}

export function MachinesView() {
  const [status, setStatus] = useState("");
  // live status: poll fast while something is changing, slowly otherwise
  const list = useMachinesOfBothModes(status || undefined, (provisioning) => (provisioning ? 1000 : 5000));
  return (
    <>
      <PageHeader
        title="Machines"
        description="Managed desktops (live) and mock machines (test) of this account, with their live status."
      />
      <div className="space-y-6">
        <Card title="Provision a machine">
          <ProvisionForm />
        </Card>
        <Card title="Machines">
          <div className="mb-4 max-w-xs">
            <Field label="Status">
              <Select value={status} onChange={(e) => setStatus(e.target.value)}>
                <option value="">All but terminated</option>
                {STATUSES.map((s) => (
                  <option key={s} value={s}>
                    {s}
                  </option>
                ))}
              </Select>
            </Field>
          </div>
          {list.isPending ? (
            <Spinner label="Loading machines" />
          ) : list.error ? (
            <ErrorBox message={friendlyMessage(list.error)} onRetry={() => list.refetch()} />
          ) : list.machines.length === 0 ? (
            <EmptyState title={status ? `No ${status} machines` : "No machines yet"}>Provision one above.</EmptyState>
          ) : (
            <Table
              caption="Machines"
              rows={list.machines}
              rowKey={(m) => m.id}
              columns={[
                {
                  key: "name",
                  header: "Machine",
                  cell: (m) => (
                    <Link
                      className="font-medium text-indigo-700 underline dark:text-indigo-300"
                      href={`/machines/${m.id}`}
                    >
                      {m.display_name || m.id}
                    </Link>
                  ),
                },
                {
                  key: "status",
                  header: "Status",
                  cell: (m) => <MachineStatus status={m.status} reason={m.status_reason} />,
                },
                {
                  key: "kind",
                  header: "Kind",
                  cell: (m) => <Badge tone={m.is_test ? "amber" : "green"}>{m.is_test ? "test" : m.kind}</Badge>,
                },
                { key: "screen", header: "Screen", cell: (m) => `${m.screen.width}×${m.screen.height}` },
                {
                  key: "credits",
                  header: "Credits",
                  className: "text-right tabular-nums",
                  cell: (m) => m.credits_charged,
                },
                {
                  key: "created",
                  header: "Created",
                  cell: (m) => <span className="whitespace-nowrap">{dateTime(m.created_at)}</span>,
                },
                {
                  key: "expires",
                  header: "Expires",
                  cell: (m) => (
                    <span className="whitespace-nowrap">{m.expires_at ? dateTime(m.expires_at) : "never"}</span>
                  ),
                },
              ]}
            />
          )}
        </Card>
      </div>
    </>
  );
}
