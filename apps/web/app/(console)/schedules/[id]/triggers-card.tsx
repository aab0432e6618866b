"use client";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ConfirmDialog } from "@cua/ui/confirm-dialog";
import { CopyButton } from "@cua/ui/copy-button";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { dateTime } from "../../../../lib/format.ts";
import { useTRPC } from "../../../../lib/trpc.ts";

/** docs/schedules.md "Webhook": HMAC-SHA256(secret, "<t>." + raw body), sent as Service-Signature. */
export function curlExample(url: string, secret: string): string {
  return [
    `SECRET='${secret}'`,
    `URL='${url}'`,
    `body='{"invoice":"INV-7"}'`,
    "t=$(date +%s)",
    `sig=$(printf '%s.%s' "$t" "$body" | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/^.* //')`,
    `curl -sS -X POST "$URL" -H 'Content-Type: application/json' \\`,
    `  -H "Service-Signature: t=$t,v1=$sig" --data-binary "$body"`,
  ].join("\n");
}

const pre =
  "overflow-x-auto whitespace-pre rounded-md bg-slate-900 p-3 font-mono text-xs text-slate-100 dark:bg-slate-950";

interface Created {
  id: string;
  webhook_url: string | null;
  webhook_secret?: string;
}

function NewWebhook({ t, onDone }: { t: Created; onDone: () => void }) {
  const url = t.webhook_url ?? "";
  const secret = t.webhook_secret ?? "";
  const curl = curlExample(url, secret);
  return (
    <section
      aria-label="New webhook trigger"
      className="space-y-3 rounded-md border border-amber-300 bg-amber-50 p-4 text-sm dark:border-amber-800 dark:bg-amber-950"
    >
      <p className="font-medium">
        Copy the secret now: it is shown only this once. Deleting the trigger and creating it again gives a new URL and
        secret.
      </p>
      <div>
        <div className="mb-1 font-medium">Webhook URL</div>
        <div className="flex flex-wrap items-center gap-2">
          <code data-testid="webhook-url" className="break-all">
            {url}
          </code>
          <CopyButton value={url} label="Copy URL" />
        </div>
      </div>
      <div>
        <div className="mb-1 font-medium">Secret</div>
        <div className="flex flex-wrap items-center gap-2">
          <code data-testid="webhook-secret" className="break-all">
            {secret}
          </code>
          <CopyButton value={secret} label="Copy secret" />
        </div>
      </div>
      <div>
        <div className="mb-1 flex items-center justify-between gap-2">
          <span className="font-medium">Signed request (bash, openssl, curl)</span>
          <CopyButton value={curl} label="Copy curl" />
        </div>
        <pre data-testid="webhook-curl" className={pre}>
          {curl}
        </pre>
      </div>
      <Button variant="secondary" onClick={onDone}>
        I have copied the secret
      </Button>
    </section>
  );
}

export function TriggersCard({ scheduleId }: { scheduleId: string }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const list = useQuery(trpc.console.triggers.list.queryOptions({ id: scheduleId }));
  const [rate, setRate] = useState("60");
  const [created, setCreated] = useState<Created | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.triggers.list.pathKey() });
  const create = useMutation(
    trpc.console.triggers.create.mutationOptions({
      onSuccess: async (t) => {
        setCreated(t);
        await refresh();
      },
    }),
  );
  const update = useMutation(trpc.console.triggers.update.mutationOptions({ onSuccess: refresh }));
  const [deleting, setDeleting] = useState<string | null>(null);
  const remove = useMutation(
    trpc.console.triggers.delete.mutationOptions({
      onSuccess: async () => {
        setDeleting(null);
        await refresh();
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate({ id: scheduleId, kind: "webhook", rate_limit_per_minute: Number(rate) || undefined });
  };
  const err = create.error ?? update.error;
  return (
    <Card title="Triggers">
      <div className="space-y-4">
        {created ? (
          <NewWebhook t={created} onDone={() => setCreated(null)} />
        ) : (
          <form onSubmit={submit} aria-label="Create a webhook trigger" className="flex flex-wrap items-end gap-3">
            <Field label="Rate limit per minute" hint="1 to 600 deliveries in 60 seconds.">
              <Input inputMode="numeric" value={rate} onChange={(e) => setRate(e.target.value.replace(/\D/g, ""))} />
            </Field>
            <Button type="submit" loading={create.isPending}>
              Create webhook trigger
            </Button>
          </form>
        )}
        {err && (
          <ErrorBox title="The trigger was not changed" message={friendlyMessage(err)} code={errorInfo(err).code} />
        )}
        {list.isPending ? (
          <Spinner label="Loading triggers" />
        ) : list.error ? (
          <ErrorBox message={friendlyMessage(list.error)} onRetry={() => list.refetch()} />
        ) : list.data.data.length === 0 ? (
          <EmptyState title="No triggers">A webhook trigger fires this schedule on a signed POST.</EmptyState>
        ) : (
          <Table
            caption="Triggers"
            rows={list.data.data}
            rowKey={(t) => t.id}
            columns={[
              { key: "kind", header: "Kind", cell: (t) => t.kind },
              {
                key: "target",
                header: "URL or source",
                cell: (t) =>
                  t.kind === "webhook" ? (
                    <span className="inline-flex items-center gap-2">
                      <code className="break-all text-xs">{t.webhook_url}</code>
                      {t.webhook_url && <CopyButton value={t.webhook_url} label="Copy" />}
                    </span>
                  ) : (
                    `${t.event?.replaceAll("_", " ")} of ${t.source_schedule_id}`
                  ),
              },
              {
                key: "rate",
                header: "Per minute",
                className: "tabular-nums",
                cell: (t) => t.rate_limit_per_minute ?? "",
              },
              { key: "enabled", header: "Enabled", cell: (t) => (t.enabled ? "yes" : "no (answers 410)") },
              { key: "created", header: "Created", cell: (t) => dateTime(t.created_at) },
              {
                key: "actions",
                header: <span className="sr-only">Actions</span>,
                cell: (t) => (
                  <span className="inline-flex gap-2">
                    <Button
                      size="sm"
                      variant="secondary"
                      onClick={() => update.mutate({ id: scheduleId, trigger_id: t.id, enabled: !t.enabled })}
                    >
                      {t.enabled ? "Disable" : "Enable"}
                    </Button>
                    <Button size="sm" variant="danger" onClick={() => setDeleting(t.id)}>
                      Delete
                    </Button>
                  </span>
                ),
              },
            ]}
          />
        )}
      </div>
      <ConfirmDialog
        open={deleting !== null}
        title="Delete this trigger?"
        description="Its webhook URL stops working at once (404). A trigger created again gets a new URL and secret."
        confirmLabel="Delete trigger"
        busy={remove.isPending}
        error={remove.error ? friendlyMessage(remove.error) : null}
        onConfirm={() => deleting && remove.mutate({ id: scheduleId, trigger_id: deleting })}
        onCancel={() => {
          setDeleting(null);
          remove.reset();
        }}
      />
    </Card>
  );
}
