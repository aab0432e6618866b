"use client";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ConfirmDialog } from "@cua/ui/confirm-dialog";
import { CopyButton } from "@cua/ui/copy-button";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { Select } from "@cua/ui/select";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
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

const EVENTS = [
  ["on_complete", "completes (succeeded)"],
  ["on_failure", "fails (failed or timed out)"],
  ["on_any", "ends (any way)"],
] as const;
type ChainEvent = (typeof EVENTS)[number][0];
const eventWords = (e: string | null) => EVENTS.find(([v]) => v === e)?.[1] ?? e ?? "";
const link = "font-medium text-indigo-700 underline dark:text-indigo-300";

export function TriggersCard({ scheduleId, isTest }: { scheduleId: string; isTest: boolean }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const list = useQuery(trpc.console.triggers.list.queryOptions({ id: scheduleId }));
  // chain sources: the other schedules of this schedule's mode (another mode's source is 404)
  const schedules = useQuery(
    trpc.console.schedules.list.queryOptions({ mode: isTest ? "test" : "live", limit: "200" }),
  );
  const sources = (schedules.data?.data ?? []).filter((x) => x.id !== scheduleId);
  const nameOf = (id: string | null) => schedules.data?.data.find((x) => x.id === id)?.name ?? id ?? "";
  const [kind, setKind] = useState<"webhook" | "chain">("webhook");
  const [rate, setRate] = useState("60");
  const [source, setSource] = useState("");
  const [event, setEvent] = useState<ChainEvent>("on_complete");
  const [passOutput, setPassOutput] = useState(true);
  const [created, setCreated] = useState<Created | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.triggers.list.pathKey() });
  const create = useMutation(
    trpc.console.triggers.create.mutationOptions({
      onSuccess: async (t) => {
        if (t.kind === "webhook") setCreated(t);
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
    if (kind === "webhook")
      create.mutate({ id: scheduleId, kind: "webhook", rate_limit_per_minute: Number(rate) || undefined });
    else
      create.mutate({
        id: scheduleId,
        kind: "chain",
        source_schedule_id: source || sources[0]?.id || "",
        event,
        pass_output: passOutput,
      });
  };
  const err = create.error ?? update.error;
  return (
    <Card title="Triggers">
      <div className="space-y-4">
        {created ? (
          <NewWebhook t={created} onDone={() => setCreated(null)} />
        ) : (
          <form onSubmit={submit} aria-label="Create a trigger" className="space-y-3">
            <div className="flex flex-wrap items-start gap-3">
              <Field label="Kind">
                <Select value={kind} onChange={(e) => setKind(e.target.value as "webhook" | "chain")}>
                  <option value="webhook">Webhook (a signed POST fires it)</option>
                  <option value="chain">Chain (another schedule's run fires it)</option>
                </Select>
              </Field>
              {kind === "webhook" ? (
                <Field label="Rate limit per minute" hint="1 to 600 deliveries in 60 seconds.">
                  <Input
                    inputMode="numeric"
                    value={rate}
                    onChange={(e) => setRate(e.target.value.replace(/\D/g, ""))}
                  />
                </Field>
              ) : (
                <>
                  <Field label="Source schedule" hint={`A ${isTest ? "test" : "live"} schedule, like this one.`}>
                    <Select value={source || sources[0]?.id || ""} onChange={(e) => setSource(e.target.value)}>
                      {sources.length === 0 && <option value="">No other schedule</option>}
                      {sources.map((x) => (
                        <option key={x.id} value={x.id}>
                          {x.name}
                        </option>
                      ))}
                    </Select>
                  </Field>
                  <Field label="Fires when the source run">
                    <Select value={event} onChange={(e) => setEvent(e.target.value as ChainEvent)}>
                      {EVENTS.map(([v, l]) => (
                        <option key={v} value={v}>
                          {l}
                        </option>
                      ))}
                    </Select>
                  </Field>
                </>
              )}
            </div>
            {kind === "chain" && (
              <label className="flex items-center gap-2 text-sm">
                <input type="checkbox" checked={passOutput} onChange={(e) => setPassOutput(e.target.checked)} />
                Pass the source run's result to this schedule's task
              </label>
            )}
            <Button type="submit" loading={create.isPending} disabled={kind === "chain" && sources.length === 0}>
              {kind === "webhook" ? "Create webhook trigger" : "Create chain trigger"}
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
          <EmptyState title="No triggers">
            A webhook trigger fires this schedule on a signed POST; a chain trigger when another schedule's run ends.
          </EmptyState>
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
                    <span data-testid="chain-source">
                      when{" "}
                      <Link className={link} href={`/schedules/${t.source_schedule_id}`}>
                        {nameOf(t.source_schedule_id)}
                      </Link>{" "}
                      {eventWords(t.event)}
                      {t.pass_output ? ", with its result" : ""}
                    </span>
                  ),
              },
              {
                key: "rate",
                header: "Per minute",
                className: "tabular-nums",
                cell: (t) => t.rate_limit_per_minute ?? "",
              },
              {
                key: "enabled",
                header: "Enabled",
                cell: (t) => (t.enabled ? "yes" : t.kind === "webhook" ? "no (answers 410)" : "no"),
              },
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
        description="A webhook trigger's URL stops working at once (404; one created again gets a new URL and secret). A chain trigger stops firing this schedule."
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
