import { cx } from "./cx.ts";

/** An animated ring with an accessible label (role="status"). */
export function Spinner({
  label = "Loading",
  className,
  inline = false,
}: {
  label?: string;
  className?: string;
  inline?: boolean;
}) {
  return (
    <span
      role="status"
      className={cx("inline-flex items-center gap-2 text-sm text-slate-600 dark:text-slate-300", className)}
    >
      <svg aria-hidden="true" viewBox="0 0 24 24" className="h-4 w-4 animate-spin motion-reduce:animate-none">
        <circle cx="12" cy="12" r="10" fill="none" stroke="currentColor" strokeOpacity="0.25" strokeWidth="4" />
        <path d="M22 12a10 10 0 0 0-10-10" fill="none" stroke="currentColor" strokeWidth="4" strokeLinecap="round" />
      </svg>
      <span className={inline ? "sr-only" : undefined}>{label}</span>
    </span>
  );
}
