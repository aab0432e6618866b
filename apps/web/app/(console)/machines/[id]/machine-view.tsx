"use client";
import { Badge } from "@cua/ui/badge";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ConfirmDialog } from "@cua/ui/confirm-dialog";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { PageHeader } from "@cua/ui/page-header";
import { Spinner } from "@cua/ui/spinner";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useState } from "react";
import { LiveScreen } from "../../../../components/live-screen.tsx";
import { MachineStatus } from "../../../../components/machine-status.tsx";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { dateTime } from "../../../../lib/format.ts";
import { useTRPC } from "../../../../lib/trpc.ts";
import { ActionForm, TerminalForm } from "./command-forms.tsx";

function ProvisioningProgress({ since }: { since: string }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const seconds = Math.max(0, Math.round((now - new Date(since).getTime()) / 1000));
  return (
    <div
      role="status"
      className="flex items-center gap-3 rounded-md bg-sky-50 p-3 text-sm text-sky-900 dark:bg-sky-950 dark:text-sky-100"
    >
      <Spinner inline label="Provisioning" />
      <span>
        Provisioning: starting the X server, window manager and browser ({seconds} s). The page updates by itself.
      </span>
    </div>
  );
}

function NoVnc({ id }: { id: string }) {
  const trpc = useTRPC();
  const conn = useQuery({
    ...trpc.console.machines.connection.queryOptions({ id }),
    staleTime: Number.POSITIVE_INFINITY,
    retry: false,
  });
  if (conn.isPending) return <Spinner label="Starting the VNC bridge" />;
  if (conn.error)
    return (
      <ErrorBox title="No interactive view" message={friendlyMessage(conn.error)} onRetry={() => conn.refetch()} />
    );
  if (!conn.data.novnc_url) {
    return (
      <EmptyState title="No noVNC page">
        Connect a VNC client to {conn.data.host}:{conn.data.vnc_port}.
      </EmptyState>
    );
  }
  const src = `${conn.data.novnc_url}&resize=scale&password=${encodeURIComponent(conn.data.vnc_password)}`;
  return (
    <div className="space-y-2">
      <iframe
        title="Interactive view (noVNC)"
        src={src}
        className="aspect-video w-full rounded border border-slate-300 bg-black dark:border-slate-700"
      />
      <p className="text-xs text-slate-500">
        Keyboard and mouse go to the machine while the view has focus.{" "}
        <a className="underline" href={src} target="_blank" rel="noreferrer">
          Open in a new tab
        </a>
        .
      </p>
    </div>
  );
}

export function MachineView({ id }: { id: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const machine = useQuery({
    ...trpc.console.machines.get.queryOptions({ id }),
    refetchInterval: (q) => (q.state.data?.status === "provisioning" ? 1000 : 3000),
  });
  const [confirm, setConfirm] = useState(false);
  const [vnc, setVnc] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.machines.pathKey() });
  // start, stop and restart are three operations (POST /v1/machines/{id}/start|stop|restart)
  const done = async (r: { message: string }) => {
    setNotice(r.message);
    await refresh();
  };
  const start = useMutation(trpc.console.machines.start.mutationOptions({ onSuccess: done }));
  const stop = useMutation(trpc.console.machines.stop.mutationOptions({ onSuccess: done }));
  const restart = useMutation(trpc.console.machines.restart.mutationOptions({ onSuccess: done }));
  const lifecycle = {
    isPending: start.isPending || stop.isPending || restart.isPending,
    error: start.error ?? stop.error ?? restart.error,
    mutate: ({ id, op }: { id: string; op: "start" | "stop" | "restart" }) => {
      for (const m of [start, stop, restart]) m.reset();
      ({ start, stop, restart })[op].mutate({ id });
    },
  };
  const snapshot = useMutation(
    trpc.console.machines.snapshot.mutationOptions({
      onSuccess: async (s) => {
        setNotice(`Snapshot ${s.name} created.`);
        await refresh();
      },
    }),
  );
  const terminate = useMutation(
    trpc.console.machines.terminate.mutationOptions({
      onSuccess: async (r) => {
        setConfirm(false);
        setNotice(r.message);
        await refresh();
      },
    }),
  );
  const snapshots = useQuery({
    ...trpc.console.machines.snapshots.queryOptions({ id }),
    enabled: machine.data?.kind === "managed",
  });

  if (machine.isPending) return <Spinner label="Loading the machine" />;
  if (machine.error) {
    return (
      <>
        <PageHeader title="Machine" />
        <ErrorBox
          message={friendlyMessage(machine.error)}
          code={errorInfo(machine.error).code}
          onRetry={() => machine.refetch()}
        />
        <p className="mt-4">
          <Link className="underline" href="/machines">
            Back to machines
          </Link>
        </p>
      </>
    );
  }
  const m = machine.data;
  const s = m.status;
  const busy = lifecycle.isPending || snapshot.isPending || terminate.isPending;
  const opError = lifecycle.error ?? snapshot.error;
  return (
    <>
      <PageHeader
        title={m.display_name || "Machine"}
        description={
          <span className="inline-flex flex-wrap items-center gap-2">
            <MachineStatus status={s} reason={m.status_reason} />
            <Badge tone={m.is_test ? "amber" : "green"}>{m.is_test ? "test" : m.kind}</Badge>
            <code className="text-xs">{m.id}</code>
          </span>
        }
        actions={
          <>
            <Button
              variant="secondary"
              disabled={busy || !(s === "stopped" || s === "suspended")}
              onClick={() => lifecycle.mutate({ id, op: "start" })}
            >
              Start
            </Button>
            <Button
              variant="secondary"
              disabled={busy || s !== "running"}
              onClick={() => lifecycle.mutate({ id, op: "stop" })}
            >
              Stop
            </Button>
            <Button
              variant="secondary"
              disabled={busy || s !== "running"}
              onClick={() => lifecycle.mutate({ id, op: "restart" })}
            >
              Restart
            </Button>
            <Button
              variant="secondary"
              disabled={busy || m.kind !== "managed" || !["running", "stopped", "suspended"].includes(s)}
              onClick={() => snapshot.mutate({ id })}
              loading={snapshot.isPending}
            >
              Snapshot
            </Button>
            <Button
              variant="danger"
              disabled={busy || s === "terminated"}
              onClick={() => {
                terminate.reset();
                setConfirm(true);
              }}
            >
              Terminate
            </Button>
          </>
        }
      />
      <div className="space-y-6">
        {lifecycle.isPending && <Spinner label="Working" />}
        {opError && (
          <ErrorBox title="That did not work" message={friendlyMessage(opError)} code={errorInfo(opError).code} />
        )}
        {notice && (
          <p role="status" className="text-sm text-green-700 dark:text-green-400">
            {notice}
          </p>
        )}
        {s === "provisioning" && <ProvisioningProgress since={m.created_at} />}
        {s === "error" && (
          <ErrorBox title="The machine failed" message={m.status_reason ?? "The provider reported an error."} />
        )}
        {s === "running" ? (
          <div className="grid grid-cols-1 gap-6 xl:grid-cols-3">
            <div className="xl:col-span-2">
              <Card
                title={vnc ? "Interactive view (noVNC)" : "Live screen"}
                actions={
                  m.kind === "managed" && !m.is_test ? (
                    <Button variant="ghost" size="sm" onClick={() => setVnc((v) => !v)} aria-pressed={vnc}>
                      {vnc ? "Show the live screenshots" : "Interactive view (noVNC)"}
                    </Button>
                  ) : null
                }
              >
                {vnc ? <NoVnc id={id} /> : <LiveScreen id={id} name={m.display_name || m.id} />}
              </Card>
            </div>
            <div className="space-y-6">
              <p>
                <Link
                  className="font-medium text-indigo-700 underline dark:text-indigo-300"
                  href={`/runs?machine=${encodeURIComponent(id)}`}
                >
                  Start a run on this machine
                </Link>
              </p>
              <Card title="Send an action">
                <ActionForm id={id} />
              </Card>
            </div>
            <div className="xl:col-span-3">
              <Card title="Terminal">
                <TerminalForm id={id} />
              </Card>
            </div>
          </div>
        ) : s !== "provisioning" ? (
          <EmptyState title={`The machine is ${s}`}>
            {s === "stopped" || s === "suspended"
              ? "Start it to see its screen and send actions."
              : "It has no screen to show."}
          </EmptyState>
        ) : null}
        <Card title="Details">
          <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-1">
            <dt className="text-slate-500">Screen</dt>
            <dd>
              {m.screen.width}×{m.screen.height}
            </dd>
            <dt className="text-slate-500">Provider</dt>
            <dd>{m.provider}</dd>
            <dt className="text-slate-500">Credits so far</dt>
            <dd>{m.credits_charged}</dd>
            <dt className="text-slate-500">Created</dt>
            <dd>{dateTime(m.created_at)}</dd>
            <dt className="text-slate-500">Expires</dt>
            <dd>{m.expires_at ? dateTime(m.expires_at) : "never"}</dd>
            <dt className="text-slate-500">Snapshots</dt>
            <dd>
              {snapshots.data?.data.length
                ? snapshots.data.data.map((x) => `${x.name} (${dateTime(x.created_at)})`).join(", ")
                : "none"}
            </dd>
          </dl>
        </Card>
      </div>
      <ConfirmDialog
        open={confirm}
        title="Terminate this machine?"
        description="Its processes and home directory are removed (snapshots are kept). This cannot be undone."
        confirmLabel="Terminate machine"
        busy={terminate.isPending}
        error={terminate.error ? friendlyMessage(terminate.error) : null}
        onCancel={() => setConfirm(false)}
        onConfirm={() => terminate.mutate({ id })}
      />
    </>
  );
}
