"use client";
import { type ComponentType, type ReactNode, useEffect, useId, useState } from "react";
import { cx, focusRing } from "./cx.ts";

export interface NavItem {
  href: string;
  label: string;
}

export interface LinkProps {
  href: string;
  className?: string;
  children: ReactNode;
  "aria-current"?: "page";
  onClick?: () => void;
}

const PlainLink = ({ children, ...rest }: LinkProps) => <a {...rest}>{children}</a>;

/**
 * The console frame: a skip link, a header with the product name and the account menu, and the navigation
 * (a sidebar on wide windows, a disclosure behind a Menu button on narrow ones).
 */
export function AppShell({
  brand,
  nav,
  currentPath,
  account,
  children,
  Link = PlainLink,
}: {
  brand: ReactNode;
  nav: NavItem[];
  currentPath: string;
  account?: ReactNode;
  children: ReactNode;
  Link?: ComponentType<LinkProps>;
}) {
  const [open, setOpen] = useState(false);
  const navId = useId();
  // biome-ignore lint/correctness/useExhaustiveDependencies: close the narrow menu whenever the page changes
  useEffect(() => setOpen(false), [currentPath]);
  const isCurrent = (href: string) =>
    href === "/" ? currentPath === "/" : currentPath === href || currentPath.startsWith(`${href}/`);
  return (
    <div className="min-h-screen">
      <a
        href="#main"
        className="sr-only z-50 rounded bg-white px-3 py-2 text-sm font-medium text-indigo-700 focus:not-sr-only focus:fixed focus:left-2 focus:top-2"
      >
        Skip to content
      </a>
      <header className="sticky top-0 z-40 border-b border-slate-200 bg-white/95 backdrop-blur dark:border-slate-800 dark:bg-slate-950/95">
        <div className="mx-auto flex max-w-6xl items-center gap-3 px-4 py-3">
          <button
            type="button"
            className={cx(
              "rounded-md border border-slate-300 px-2.5 py-1 text-sm md:hidden dark:border-slate-600",
              focusRing,
            )}
            aria-expanded={open}
            aria-controls={navId}
            onClick={() => setOpen((o) => !o)}
          >
            Menu
          </button>
          <div className="min-w-0 flex-1 truncate font-semibold">{brand}</div>
          {account && <div className="flex min-w-0 items-center gap-2">{account}</div>}
        </div>
      </header>
      <div className="mx-auto flex max-w-6xl flex-col md:flex-row">
        <nav
          id={navId}
          aria-label="Main"
          className={cx(
            "border-b border-slate-200 px-4 py-3 md:block md:w-52 md:shrink-0 md:border-b-0 md:border-r md:py-6 dark:border-slate-800",
            open ? "block" : "hidden",
          )}
        >
          <ul className="space-y-1">
            {nav.map((n) => (
              <li key={n.href}>
                <Link
                  href={n.href}
                  aria-current={isCurrent(n.href) ? "page" : undefined}
                  className={cx(
                    "block rounded-md px-3 py-2 text-sm",
                    isCurrent(n.href)
                      ? "bg-indigo-50 font-medium text-indigo-700 dark:bg-indigo-950 dark:text-indigo-200"
                      : "text-slate-700 hover:bg-slate-100 dark:text-slate-300 dark:hover:bg-slate-800",
                    focusRing,
                  )}
                >
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1} className="min-w-0 flex-1 px-4 py-6 outline-none md:px-8">
          {children}
        </main>
      </div>
    </div>
  );
}
