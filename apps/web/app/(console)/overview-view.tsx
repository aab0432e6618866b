"use client";
import { BarChart } from "@cua/ui/bar-chart";
import { Card } from "@cua/ui/card";
import { EmptyState } from "@cua/ui/empty-state";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { PageHeader } from "@cua/ui/page-header";
import { Select } from "@cua/ui/select";
import { Spinner } from "@cua/ui/spinner";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { LedgerTable } from "../../components/ledger-table.tsx";
import { friendlyMessage } from "../../lib/errors.ts";
import { credits, currentPeriod, dollars } from "../../lib/format.ts";
import { useTRPC } from "../../lib/trpc.ts";

const linkClass = "font-medium text-indigo-700 underline dark:text-indigo-300";

function BalanceCard() {
  const trpc = useTRPC();
  const balance = useQuery(trpc.console.wallet.balance.queryOptions());
  return (
    <Card
      title="Wallet balance"
      actions={
        <Link className={linkClass} href="/wallet">
          Top up
        </Link>
      }
    >
      {balance.isPending ? (
        <Spinner />
      ) : balance.error ? (
        <ErrorBox message={friendlyMessage(balance.error)} onRetry={() => balance.refetch()} />
      ) : (
        <>
          <p className="text-3xl font-semibold tabular-nums text-slate-900 dark:text-slate-100" data-testid="balance">
            {credits(balance.data.balance_credits)}
          </p>
          <p className="mt-1 text-slate-500 dark:text-slate-400">
            {dollars(balance.data.balance_credits)} · 1 credit = $0.01
          </p>
          {balance.data.balance_credits === 0 && (
            <p
              role="status"
              className="mt-3 rounded-md bg-amber-50 p-2 text-amber-900 dark:bg-amber-950 dark:text-amber-100"
            >
              The wallet is empty: metered live calls (predict, ground, sessions, machines) answer 402
              INSUFFICIENT_CREDITS until you{" "}
              <Link className="underline" href="/wallet">
                top up
              </Link>
              . Test keys bill nothing.
            </p>
          )}
        </>
      )}
    </Card>
  );
}

function UsageCard() {
  const trpc = useTRPC();
  const [period, setPeriod] = useState(currentPeriod());
  const [mode, setMode] = useState<"live" | "test">("live");
  const [metric, setMetric] = useState<"requests" | "credits">("requests");
  const usage = useQuery(trpc.console.usage.get.queryOptions({ mode, period: period || undefined }));
  return (
    <Card title="Usage by endpoint">
      <div className="mb-4 grid grid-cols-1 gap-3 sm:grid-cols-3">
        <Field label="Month">
          <Input type="month" value={period} onChange={(e) => setPeriod(e.target.value)} max={currentPeriod()} />
        </Field>
        <Field label="Mode">
          <Select value={mode} onChange={(e) => setMode(e.target.value as "live" | "test")}>
            <option value="live">Live keys</option>
            <option value="test">Test keys</option>
          </Select>
        </Field>
        <Field label="Show">
          <Select value={metric} onChange={(e) => setMetric(e.target.value as "requests" | "credits")}>
            <option value="requests">Requests</option>
            <option value="credits">Credits charged</option>
          </Select>
        </Field>
      </div>
      {usage.isPending ? (
        <Spinner label="Loading usage" />
      ) : usage.error ? (
        <ErrorBox message={friendlyMessage(usage.error)} onRetry={() => usage.refetch()} />
      ) : usage.data.by_endpoint.length === 0 ? (
        <EmptyState title={`No ${mode} requests in ${usage.data.period}`}>
          Calls made with your {mode} API keys appear here, by endpoint.{" "}
          <Link className={linkClass} href="/keys">
            Create a key
          </Link>
          .
        </EmptyState>
      ) : (
        <>
          <p className="mb-3 text-slate-600 dark:text-slate-400" data-testid="usage-totals">
            {usage.data.requests.toLocaleString("en-US")} request{usage.data.requests === 1 ? "" : "s"} ·{" "}
            {credits(usage.data.credits_charged)} charged in {usage.data.period}
          </p>
          <BarChart
            title={`${metric === "requests" ? "Requests" : "Credits charged"} by endpoint, ${usage.data.period}, ${mode} mode`}
            unit={metric === "requests" ? ["request", "requests"] : ["credit", "credits"]}
            bars={[...usage.data.by_endpoint]
              .sort((a, b) => (metric === "requests" ? b.requests - a.requests : b.credits_charged - a.credits_charged))
              .map((e) => ({
                label: e.endpoint,
                value: metric === "requests" ? e.requests : e.credits_charged,
                detail:
                  metric === "requests"
                    ? credits(e.credits_charged)
                    : `${e.requests} request${e.requests === 1 ? "" : "s"}`,
              }))}
          />
        </>
      )}
    </Card>
  );
}

function RecentLedger() {
  const trpc = useTRPC();
  const ledger = useQuery(trpc.console.wallet.ledger.queryOptions({ limit: 5 }));
  return (
    <Card
      title="Recent wallet activity"
      actions={
        <Link className={linkClass} href="/wallet">
          Full ledger
        </Link>
      }
    >
      {ledger.isPending ? (
        <Spinner />
      ) : ledger.error ? (
        <ErrorBox message={friendlyMessage(ledger.error)} onRetry={() => ledger.refetch()} />
      ) : ledger.data.entries.length === 0 ? (
        <EmptyState title="No wallet activity yet">
          Top-ups and the charges of metered calls are listed here.
        </EmptyState>
      ) : (
        <LedgerTable rows={ledger.data.entries} caption="Recent wallet activity" />
      )}
    </Card>
  );
}

export function OverviewView() {
  return (
    <>
      <PageHeader title="Overview" description="Balance, this month's usage and the latest wallet activity." />
      <div className="grid grid-cols-1 gap-6 lg:grid-cols-3">
        <div className="lg:col-span-1">
          <BalanceCard />
        </div>
        <div className="lg:col-span-2">
          <UsageCard />
        </div>
        <div className="lg:col-span-3">
          <RecentLedger />
        </div>
      </div>
    </>
  );
}
