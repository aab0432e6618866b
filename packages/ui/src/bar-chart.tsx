import { cx } from "./cx.ts";

export interface Bar {
  label: string;
  value: number;
  /** text after the value, e.g. "12 requests · 60 credits" */
  detail?: string;
}

/**
 * Horizontal SVG bars, one row per item, scaled to the largest value. Labels and values are text, so the
 * chart reads the same to a screen reader and fits narrow windows (labels wrap, bars scale).
 */
export function BarChart({
  title,
  bars,
  unit,
  className,
}: {
  title: string;
  bars: Bar[];
  /** unit after each value, singular and plural */
  unit: [string, string];
  className?: string;
}) {
  const max = Math.max(1, ...bars.map((b) => b.value));
  return (
    <figure className={cx("w-full", className)} aria-label={title}>
      <figcaption className="sr-only">{title}</figcaption>
      <ul className="space-y-3">
        {bars.map((b) => {
          const pct = (b.value / max) * 100;
          return (
            <li key={b.label}>
              <div className="flex flex-wrap items-baseline justify-between gap-x-3 text-sm">
                <span className="break-all font-mono text-xs text-slate-700 dark:text-slate-300">{b.label}</span>
                <span className="whitespace-nowrap tabular-nums text-slate-900 dark:text-slate-100">
                  {b.value.toLocaleString("en-US")} {b.value === 1 ? unit[0] : unit[1]}
                  {b.detail && <span className="text-slate-500 dark:text-slate-400"> · {b.detail}</span>}
                </span>
              </div>
              <svg
                aria-hidden="true"
                className="mt-1 h-3 w-full overflow-visible"
                preserveAspectRatio="none"
                viewBox="0 0 100 12"
              >
                <rect x="0" y="0" width="100" height="12" rx="2" className="fill-slate-100 dark:fill-slate-800" />
                <rect
                  data-testid="bar"
                  x="0"
                  y="0"
                  width={Math.max(pct, b.value > 0 ? 1 : 0)}
                  height="12"
                  rx="2"
                  className="fill-indigo-500"
                />
              </svg>
            </li>
          );
        })}
      </ul>
    </figure>
  );
}
