import type { ReactNode } from "react";

export function Card({ title, children }: { title: string; children: ReactNode }) {
  return (
    <section className="rounded-lg border border-slate-200 p-4 dark:border-slate-800">
      <h2 className="mb-2 font-medium">{title}</h2>
      <div className="text-sm text-slate-700 dark:text-slate-300">{children}</div>
    </section>
  );
}
