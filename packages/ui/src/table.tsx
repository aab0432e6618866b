import type { ReactNode } from "react";
import { cx, focusRing } from "./cx.ts";

export interface Column<T> {
  key: string;
  header: ReactNode;
  cell: (row: T) => ReactNode;
  className?: string;
}

/** A data table in a horizontally scrollable, keyboard-focusable region (narrow windows scroll, not squash). */
export function Table<T>({
  caption,
  columns,
  rows,
  rowKey,
  captionVisible = false,
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T) => string;
  captionVisible?: boolean;
}) {
  return (
    // scrolls sideways on narrow windows (Chromium makes scrollable regions keyboard-focusable itself)
    <div className={cx("overflow-x-auto rounded-lg border border-slate-200 dark:border-slate-800", focusRing)}>
      <table className="min-w-full divide-y divide-slate-200 text-left text-sm dark:divide-slate-800">
        <caption className={captionVisible ? "px-3 py-2 text-left font-medium" : "sr-only"}>{caption}</caption>
        <thead className="bg-slate-50 dark:bg-slate-900">
          <tr>
            {columns.map((c) => (
              <th
                key={c.key}
                scope="col"
                className={cx(
                  "whitespace-nowrap px-3 py-2 font-medium text-slate-700 dark:text-slate-300",
                  c.className,
                )}
              >
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100 dark:divide-slate-800">
          {rows.map((r) => (
            <tr key={rowKey(r)} className="align-top">
              {columns.map((c) => (
                <td key={c.key} className={cx("px-3 py-2", c.className)}>
                  {c.cell(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
