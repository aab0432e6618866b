import { Badge, type BadgeTone } from "@cua/ui/badge";
import { Table } from "@cua/ui/table";
import { dateTime } from "../lib/format.ts";

export interface LedgerRow {
  id: string;
  kind: string;
  delta: number;
  amount: number;
  balance_after: number;
  reservation_id: string | null;
  request_id: string | null;
  note: string | null;
  created_at: string;
}

const TONE: Record<string, BadgeTone> = {
  topup: "green",
  reserve: "amber",
  capture: "violet",
  release: "blue",
  refund: "blue",
};

export const KIND_LABEL: Record<string, string> = {
  topup: "Top-up",
  reserve: "Reserve",
  capture: "Capture",
  release: "Release",
  refund: "Refund",
};

export function LedgerTable({ rows, caption }: { rows: LedgerRow[]; caption: string }) {
  return (
    <Table
      caption={caption}
      rows={rows}
      rowKey={(r) => r.id}
      columns={[
        {
          key: "time",
          header: "Time",
          cell: (r) => <span className="whitespace-nowrap">{dateTime(r.created_at)}</span>,
        },
        {
          key: "kind",
          header: "Kind",
          cell: (r) => <Badge tone={TONE[r.kind] ?? "neutral"}>{KIND_LABEL[r.kind] ?? r.kind}</Badge>,
        },
        {
          key: "delta",
          header: "Change",
          className: "text-right tabular-nums",
          cell: (r) => (
            <span
              className={
                r.delta > 0
                  ? "text-green-700 dark:text-green-400"
                  : r.delta < 0
                    ? "text-red-700 dark:text-red-400"
                    : undefined
              }
            >
              {r.delta > 0 ? "+" : ""}
              {r.delta.toLocaleString("en-US")}
              {r.kind === "capture" && (
                <span className="text-slate-500"> ({r.amount.toLocaleString("en-US")} charged)</span>
              )}
            </span>
          ),
        },
        {
          key: "balance",
          header: "Balance after",
          className: "text-right tabular-nums",
          cell: (r) => r.balance_after.toLocaleString("en-US"),
        },
        {
          key: "detail",
          header: "Detail",
          cell: (r) => (
            <span className="block min-w-48 break-words text-slate-600 dark:text-slate-400">
              {r.note ??
                (r.request_id ? (
                  <code className="text-xs">{r.request_id}</code>
                ) : r.reservation_id ? (
                  <code className="text-xs">{r.reservation_id}</code>
                ) : (
                  ""
                ))}
            </span>
          ),
        },
      ]}
    />
  );
}
