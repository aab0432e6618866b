"use client";
import { Badge } from "@cua/ui/badge";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ConfirmDialog } from "@cua/ui/confirm-dialog";
import { CopyButton } from "@cua/ui/copy-button";
import { Dialog } from "@cua/ui/dialog";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { PageHeader } from "@cua/ui/page-header";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { dateTime } from "../../../lib/format.ts";
import { type Mode, newestFirst } from "../../../lib/modes.ts";
import { useTRPC } from "../../../lib/trpc.ts";

interface CreatedKey {
  id: string;
  name: string;
  key: string;
  prefix: string;
  mode: Mode;
  scopes: string[];
}

function CreateKeyForm({ onCreated }: { onCreated: (k: CreatedKey) => void }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const catalog = useQuery(trpc.console.keys.scopes.queryOptions(undefined, { staleTime: Number.POSITIVE_INFINITY }));
  const [name, setName] = useState("");
  const [mode, setMode] = useState<Mode>("live");
  const [scopes, setScopes] = useState<Set<string>>(new Set());
  const [touched, setTouched] = useState(false);
  const [expires, setExpires] = useState("");
  // start from the mode's default set until the operator picks scopes by hand
  useEffect(() => {
    if (!touched && catalog.data) setScopes(new Set(catalog.data.defaults[mode]));
  }, [catalog.data, mode, touched]);
  const create = useMutation(
    trpc.console.keys.create.mutationOptions({
      onSuccess: async (k) => {
        onCreated(k);
        setName("");
        setExpires("");
        await qc.invalidateQueries({ queryKey: trpc.console.keys.list.pathKey() });
      },
    }),
  );
  const toggle = (s: string) => {
    setTouched(true);
    setScopes((prev) => {
      const next = new Set(prev);
      if (next.has(s)) next.delete(s);
      else next.add(s);
      return next;
    });
  };
  const setAll = (list: string[]) => {
    setTouched(true);
    setScopes(new Set(list));
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({
      mode,
      name: name.trim() || undefined,
      scopes: [...scopes],
      expires_at: expires ? new Date(`${expires}T23:59:59`).toISOString() : undefined,
    });
  };
  if (catalog.isPending) return <Spinner label="Loading scopes" />;
  if (catalog.error) return <ErrorBox message={friendlyMessage(catalog.error)} onRetry={() => catalog.refetch()} />;
  const err = create.error ? errorInfo(create.error) : null;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Create an API key">
      <div className="grid gap-4 sm:grid-cols-2">
        <Field label="Name">
          <Input
            name="name"
            maxLength={200}
            value={name}
            onChange={(e) => setName(e.target.value)}
            placeholder="e.g. CI runner"
          />
        </Field>
        <Field label="Expires (optional)" hint="The key stops working at the end of this day.">
          <Input type="date" name="expires" value={expires} onChange={(e) => setExpires(e.target.value)} />
        </Field>
      </div>
      <fieldset>
        <legend className="mb-1 text-sm font-medium">Mode</legend>
        <div className="flex flex-wrap gap-4 text-sm">
          {(["live", "test"] as const).map((m) => (
            <label key={m} className="inline-flex items-center gap-2">
              <input
                type="radio"
                name="mode"
                value={m}
                checked={mode === m}
                onChange={() => setMode(m)}
                className="h-4 w-4 accent-indigo-600"
              />
              {m === "live" ? "Live (bills the wallet)" : "Test (sandbox, bills nothing)"}
            </label>
          ))}
        </div>
      </fieldset>
      <fieldset>
        <legend className="mb-1 text-sm font-medium">Scopes ({scopes.size} selected)</legend>
        <div className="mb-2 flex flex-wrap gap-2">
          <Button variant="ghost" size="sm" onClick={() => setAll(catalog.data.defaults[mode])}>
            Defaults
          </Button>
          <Button variant="ghost" size="sm" onClick={() => setAll(catalog.data.scopes)}>
            All
          </Button>
          <Button variant="ghost" size="sm" onClick={() => setAll([])}>
            None
          </Button>
        </div>
        <div className="grid grid-cols-1 gap-x-4 gap-y-1 text-sm sm:grid-cols-2 lg:grid-cols-3">
          {catalog.data.scopes.map((s) => (
            <label key={s} className="inline-flex items-center gap-2">
              <input
                type="checkbox"
                name="scopes"
                value={s}
                checked={scopes.has(s)}
                onChange={() => toggle(s)}
                className="h-4 w-4 accent-indigo-600"
              />
              <code>{s}</code>
            </label>
          ))}
        </div>
      </fieldset>
      {err && <ErrorBox title="The key was not created" message={friendlyMessage(create.error)} code={err.code} />}
      <Button type="submit" loading={create.isPending} disabled={scopes.size === 0}>
        Create key
      </Button>
      {scopes.size === 0 && <p className="text-xs text-slate-500">Choose at least one scope.</p>}
    </form>
  );
}

function RawKeyDialog({ created, onClose }: { created: CreatedKey | null; onClose: () => void }) {
  return (
    <Dialog
      open={created !== null}
      onClose={onClose}
      title="Your new API key"
      description="Copy it now: this is the only time the full key is shown. Later only its prefix is listed."
      footer={
        <Button onClick={onClose} data-autofocus>
          I have copied it
        </Button>
      }
    >
      {created && (
        <div className="space-y-3">
          <p className="text-sm">
            <Badge tone={created.mode === "live" ? "green" : "amber"}>{created.mode}</Badge>{" "}
            {created.name || "unnamed key"} · {created.scopes.length} scopes
          </p>
          <code
            data-testid="raw-key"
            className="block select-all break-all rounded bg-slate-100 p-3 font-mono text-sm dark:bg-slate-800"
          >
            {created.key}
          </code>
          <CopyButton value={created.key} label="Copy key" />
        </div>
      )}
    </Dialog>
  );
}

interface KeyRow {
  id: string;
  name: string;
  prefix: string;
  key_kind: string;
  mode: Mode;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

function KeyList() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  // at most 200 active keys per account: one page of 200 holds them all
  const live = useQuery(trpc.console.keys.list.queryOptions({ mode: "live", limit: "200" }));
  const test = useQuery(trpc.console.keys.list.queryOptions({ mode: "test", limit: "200" }));
  const [target, setTarget] = useState<KeyRow | null>(null);
  const revoke = useMutation(
    trpc.console.keys.revoke.mutationOptions({
      onSuccess: async () => {
        setTarget(null);
        await qc.invalidateQueries({ queryKey: trpc.console.keys.list.pathKey() });
      },
    }),
  );
  if (live.isPending || test.isPending) return <Spinner label="Loading keys" />;
  const failed = live.error ?? test.error;
  if (failed)
    return (
      <ErrorBox
        message={friendlyMessage(failed)}
        onRetry={() => {
          void live.refetch();
          void test.refetch();
        }}
      />
    );
  const rows = newestFirst<KeyRow>(live.data?.data, test.data?.data);
  if (rows.length === 0) {
    return <EmptyState title="No API keys yet">Create one above to call the API under /v1.</EmptyState>;
  }
  return (
    <>
      <Table<KeyRow>
        caption="Active API keys"
        rows={rows}
        rowKey={(k) => k.id}
        columns={[
          { key: "name", header: "Name", cell: (k) => k.name || <span className="text-slate-400">unnamed</span> },
          {
            key: "prefix",
            header: "Prefix",
            cell: (k) => <code className="whitespace-nowrap text-xs">{k.prefix}…</code>,
          },
          {
            key: "kind",
            header: "Kind",
            cell: (k) => (
              <Badge tone={k.key_kind === "test" ? "amber" : k.key_kind === "live" ? "green" : "neutral"}>
                {k.key_kind}
              </Badge>
            ),
          },
          {
            key: "scopes",
            header: "Scopes",
            cell: (k) => (
              <div className="flex max-w-md flex-wrap gap-1">
                {k.scopes.map((s) => (
                  <Badge key={s}>{s}</Badge>
                ))}
              </div>
            ),
          },
          {
            key: "created",
            header: "Created",
            cell: (k) => <span className="whitespace-nowrap">{dateTime(k.created_at)}</span>,
          },
          {
            key: "used",
            header: "Last used",
            cell: (k) => <span className="whitespace-nowrap">{dateTime(k.last_used_at)}</span>,
          },
          {
            key: "expires",
            header: "Expires",
            cell: (k) => <span className="whitespace-nowrap">{k.expires_at ? dateTime(k.expires_at) : "never"}</span>,
          },
          {
            key: "actions",
            header: <span className="sr-only">Actions</span>,
            cell: (k) => (
              <Button
                variant="secondary"
                size="sm"
                aria-label={`Revoke ${k.name || "unnamed key"} (${k.prefix})`}
                onClick={() => {
                  revoke.reset();
                  setTarget(k);
                }}
              >
                Revoke
              </Button>
            ),
          },
        ]}
      />
      <ConfirmDialog
        open={target !== null}
        title="Revoke this key?"
        description={
          <>
            Requests with <code>{target?.prefix}…</code> ({target?.name || "unnamed key"}) will be refused with 401 at
            once. This cannot be undone.
          </>
        }
        confirmLabel="Revoke key"
        busy={revoke.isPending}
        error={revoke.error ? friendlyMessage(revoke.error) : null}
        onCancel={() => setTarget(null)}
        onConfirm={() => target && revoke.mutate({ key_id: target.id, mode: target.mode })}
      />
    </>
  );
}

export function KeysView() {
  const [created, setCreated] = useState<CreatedKey | null>(null);
  return (
    <>
      <PageHeader
        title="API keys"
        description="Keys authenticate calls to /v1. Live keys bill the wallet; test keys run in the sandbox. At most 200 active keys."
      />
      <div className="space-y-6">
        <Card title="Create a key">
          <CreateKeyForm onCreated={setCreated} />
        </Card>
        <Card title="Active keys">
          <KeyList />
        </Card>
      </div>
      <RawKeyDialog created={created} onClose={() => setCreated(null)} />
    </>
  );
}
