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
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { KIND_LABEL, LedgerTable } from "../../../components/ledger-table.tsx";
import { errorInfo, friendlyMessage } from "../../../lib/errors.ts";
import { credits, dollars } from "../../../lib/format.ts";
import { useTRPC } from "../../../lib/trpc.ts";

type Kind = "topup" | "reserve" | "capture" | "release" | "refund";

function TopUpForm() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [amount, setAmount] = useState("");
  const [note, setNote] = useState("");
  const [done, setDone] = useState<string | null>(null);
  const topUp = useMutation(
    trpc.console.wallet.topUp.mutationOptions({
      onSuccess: async (r) => {
        setDone(`Added ${credits(r.credits)}. The balance is now ${credits(r.balance_credits)}.`);
        setAmount("");
        setNote("");
        await qc.invalidateQueries({ queryKey: trpc.console.wallet.pathKey() });
        await qc.invalidateQueries({ queryKey: trpc.console.usage.pathKey() });
      },
    }),
  );
  const n = Number(amount);
  const valid = amount !== "" && Number.isInteger(n) && n >= 1 && n <= 10_000_000;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    if (valid) topUp.mutate({ credits: n, note: note.trim() || undefined });
  };
  const err = topUp.error ? errorInfo(topUp.error) : null;
  return (
    <form onSubmit={submit} className="space-y-3" aria-label="Top up">
      <Field
        label="Credits to add"
        hint={
          valid
            ? `${dollars(n)}. Recorded in the ledger under your email.`
            : "A whole number from 1 to 10,000,000 (1 credit = $0.01)."
        }
        error={amount !== "" && !valid ? "Enter a whole number from 1 to 10,000,000." : undefined}
      >
        <Input
          inputMode="numeric"
          name="credits"
          value={amount}
          onChange={(e) => setAmount(e.target.value.trim())}
          placeholder="1000"
        />
      </Field>
      <Field label="Note (optional)">
        <Input
          name="note"
          maxLength={200}
          value={note}
          onChange={(e) => setNote(e.target.value)}
          placeholder="e.g. invoice 2026-11"
        />
      </Field>
      <Button type="submit" loading={topUp.isPending} disabled={!valid}>
        Top up
      </Button>
      {err && <ErrorBox title="Top-up failed" message={friendlyMessage(topUp.error)} code={err.code} />}
      {done && (
        <p role="status" className="text-sm text-green-700 dark:text-green-400">
          {done}
        </p>
      )}
    </form>
  );
}

function Ledger() {
  const trpc = useTRPC();
  const [kind, setKind] = useState<Kind | "">("");
  const ledger = useInfiniteQuery(
    trpc.console.wallet.ledger.infiniteQueryOptions(
      { limit: 25, kind: kind || undefined },
      { getNextPageParam: (last) => last.next_cursor ?? undefined },
    ),
  );
  const rows = ledger.data?.pages.flatMap((p) => p.entries) ?? [];
  return (
    <Card title="Ledger">
      <div className="mb-4 max-w-xs">
        <Field label="Kind">
          <Select value={kind} onChange={(e) => setKind(e.target.value as Kind | "")}>
            <option value="">All entries</option>
            {Object.entries(KIND_LABEL).map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </Select>
        </Field>
      </div>
      {ledger.isPending ? (
        <Spinner label="Loading the ledger" />
      ) : ledger.error ? (
        <ErrorBox message={friendlyMessage(ledger.error)} onRetry={() => ledger.refetch()} />
      ) : rows.length === 0 ? (
        <EmptyState title={kind ? `No ${KIND_LABEL[kind]?.toLowerCase()} entries` : "The ledger is empty"}>
          Every top-up, reservation, capture, release and refund is recorded here.
        </EmptyState>
      ) : (
        <>
          <LedgerTable rows={rows} caption="Wallet ledger, newest first" />
          <div className="mt-3 flex items-center gap-3">
            {ledger.hasNextPage ? (
              <Button variant="secondary" onClick={() => ledger.fetchNextPage()} loading={ledger.isFetchingNextPage}>
                Load older entries
              </Button>
            ) : (
              <span className="text-sm text-slate-500">
                {rows.length === 1 ? "The only entry is shown." : `All ${rows.length} entries shown.`}
              </span>
            )}
          </div>
        </>
      )}
    </Card>
  );
}

export function WalletView() {
  const trpc = useTRPC();
  const balance = useQuery(trpc.console.wallet.balance.queryOptions());
  return (
    <>
      <PageHeader
        title="Wallet"
        description="The prepaid balance every live metered call draws from, and its append-only ledger."
      />
      <div className="grid grid-cols-1 gap-6 lg:grid-cols-3">
        <Card title="Balance">
          {balance.isPending ? (
            <Spinner />
          ) : balance.error ? (
            <ErrorBox message={friendlyMessage(balance.error)} onRetry={() => balance.refetch()} />
          ) : (
            <>
              <p
                className="text-3xl font-semibold tabular-nums text-slate-900 dark:text-slate-100"
                data-testid="balance"
              >
                {credits(balance.data.balance_credits)}
              </p>
              <p className="mt-1 text-slate-500 dark:text-slate-400">{dollars(balance.data.balance_credits)}</p>
            </>
          )}
        </Card>
        <div className="lg:col-span-2">
          <Card title="Top up (operator action)">
            <TopUpForm />
          </Card>
        </div>
        <div className="lg:col-span-3">
          <Ledger />
        </div>
      </div>
    </>
  );
}
