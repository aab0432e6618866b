"use client";
import { Badge } from "@cua/ui/badge";
import { Button } from "@cua/ui/button";
import { Card } from "@cua/ui/card";
import { ConfirmDialog } from "@cua/ui/confirm-dialog";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { PageHeader } from "@cua/ui/page-header";
import { Spinner } from "@cua/ui/spinner";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { dateTime } from "../../../lib/format.ts";
import { useTRPC } from "../../../lib/trpc.ts";

type Provider = "anthropic" | "openai";

const PROVIDERS: { id: Provider; name: string; placeholder: string }[] = [
  { id: "anthropic", name: "Anthropic", placeholder: "sk-ant-…" },
  { id: "openai", name: "OpenAI", placeholder: "sk-…" },
];

interface Stored {
  provider: string;
  key_fingerprint: string;
  created_at: string;
  updated_at: string | null;
}

function ProviderCard({ provider, stored }: { provider: (typeof PROVIDERS)[number]; stored: Stored | undefined }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [value, setValue] = useState("");
  const [confirming, setConfirming] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.console.llmKeys.list.queryKey() });
  const put = useMutation(
    trpc.console.llmKeys.put.mutationOptions({
      onSuccess: async (r) => {
        setValue("");
        setStatus(`Stored. Fingerprint ${r.key_fingerprint}.`);
        await refresh();
      },
    }),
  );
  const del = useMutation(
    trpc.console.llmKeys.delete.mutationOptions({
      onSuccess: async () => {
        setConfirming(false);
        setStatus("Deleted.");
        await refresh();
      },
    }),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setStatus(null);
    put.mutate({ provider: provider.id, api_key: value.trim() });
  };
  const err = put.error ? errorInfo(put.error) : null;
  return (
    <Card title={provider.name} actions={stored ? <Badge tone="green">stored</Badge> : <Badge>not stored</Badge>}>
      {stored ? (
        <dl className="mb-4 grid grid-cols-[auto_1fr] gap-x-4 gap-y-1">
          <dt className="text-slate-500">Fingerprint</dt>
          <dd>
            <code data-testid={`fingerprint-${provider.id}`}>{stored.key_fingerprint}</code>
          </dd>
          <dt className="text-slate-500">Stored</dt>
          <dd>{dateTime(stored.created_at)}</dd>
          <dt className="text-slate-500">Replaced</dt>
          <dd>{dateTime(stored.updated_at)}</dd>
        </dl>
      ) : (
        <p className="mb-4">
          No key stored. Live calls naming {provider.name} without a key header will use the one you store here.
        </p>
      )}
      <form
        onSubmit={submit}
        className="space-y-3"
        aria-label={`${stored ? "Replace" : "Store"} the ${provider.name} key`}
      >
        <Field
          label={stored ? `New ${provider.name} key` : `${provider.name} API key`}
          hint="Encrypted at rest; never shown again, only its fingerprint (first 16 hex of SHA-256)."
          error={err?.details?.find((d) => d.path === "body.api_key")?.message}
        >
          <Input
            type="password"
            autoComplete="off"
            name={`${provider.id}-key`}
            value={value}
            onChange={(e) => setValue(e.target.value)}
            placeholder={provider.placeholder}
          />
        </Field>
        <div className="flex flex-wrap gap-2">
          <Button type="submit" loading={put.isPending} disabled={value.trim() === ""}>
            {stored ? "Replace key" : "Store key"}
          </Button>
          {stored && (
            <Button
              variant="secondary"
              onClick={() => {
                del.reset();
                setConfirming(true);
              }}
            >
              Delete
            </Button>
          )}
        </div>
        {err && !err.details && (
          <ErrorBox title="The key was not stored" message={friendlyMessage(put.error)} code={err.code} />
        )}
        {status && (
          <p role="status" className="text-sm text-green-700 dark:text-green-400">
            {status}
          </p>
        )}
      </form>
      <ConfirmDialog
        open={confirming}
        title={`Delete the ${provider.name} key?`}
        description="Future calls will no longer find it; runs and sessions already holding a copy keep working until they end."
        confirmLabel="Delete key"
        busy={del.isPending}
        error={del.error ? friendlyMessage(del.error) : null}
        onCancel={() => setConfirming(false)}
        onConfirm={() => del.mutate({ provider: provider.id })}
      />
    </Card>
  );
}

export function ProviderKeysView() {
  const trpc = useTRPC();
  const list = useQuery(trpc.console.llmKeys.list.queryOptions());
  return (
    <>
      <PageHeader
        title="Provider keys"
        description="Bring your own model-provider keys (BYOK). Calls that use them bill your provider account and 0 platform credits."
      />
      {list.isPending ? (
        <Spinner label="Loading provider keys" />
      ) : list.error ? (
        <ErrorBox message={friendlyMessage(list.error)} onRetry={() => list.refetch()} />
      ) : (
        <div className="grid grid-cols-1 gap-6 md:grid-cols-2">
          {PROVIDERS.map((p) => (
            <ProviderCard key={p.id} provider={p} stored={list.data.data.find((k) => k.provider === p.id)} />
          ))}
        </div>
      )}
    </>
  );
}
