"use client";
import { AppShell, type LinkProps } from "@cua/ui/app-shell";
import { Button } from "@cua/ui/button";
import { ErrorBox } from "@cua/ui/error-box";
import { Spinner } from "@cua/ui/spinner";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter } from "next/navigation";
import type { ReactNode } from "react";
import { friendlyMessage, isUnauthenticated } from "../../lib/errors.ts";
import { useTRPC } from "../../lib/trpc.ts";

const NAV = [
  { href: "/", label: "Overview" },
  { href: "/machines", label: "Machines" },
  { href: "/runs", label: "Runs" },
  { href: "/workflows", label: "Workflows" },
  { href: "/schedules", label: "Schedules" },
  { href: "/wallet", label: "Wallet" },
  { href: "/keys", label: "API keys" },
  { href: "/provider-keys", label: "Provider keys" },
];

const NextLink = ({ href, children, ...rest }: LinkProps) => (
  <Link href={href} {...rest}>
    {children}
  </Link>
);

/** Signed-in pages: resolves the session (redirects to /sign-in without one) and draws the shell. */
export function ConsoleFrame({ children }: { children: ReactNode }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const pathname = usePathname();
  const me = useQuery(trpc.console.auth.me.queryOptions(undefined, { staleTime: 60_000 }));
  const signOut = useMutation(
    trpc.console.auth.signOut.mutationOptions({
      onSettled: () => {
        qc.clear();
        router.replace("/sign-in");
      },
    }),
  );

  if (me.isPending || (me.error && isUnauthenticated(me.error))) {
    return (
      <div className="flex min-h-screen items-center justify-center">
        <Spinner label={me.error ? "Redirecting to sign in" : "Loading the console"} />
      </div>
    );
  }
  if (me.error) {
    return (
      <main id="main" className="mx-auto max-w-lg p-6">
        <ErrorBox title="The console could not load" message={friendlyMessage(me.error)} onRetry={() => me.refetch()} />
      </main>
    );
  }
  return (
    <AppShell
      brand={
        <Link href="/" className="rounded focus-visible:outline-2 focus-visible:outline-indigo-600">
          Operator console{" "}
          <span className="font-normal text-slate-500 dark:text-slate-400">· {me.data.account_name}</span>
        </Link>
      }
      nav={NAV}
      currentPath={pathname}
      Link={NextLink}
      account={
        <>
          <span className="hidden truncate text-sm text-slate-600 sm:inline dark:text-slate-400" title={me.data.email}>
            {me.data.email}
          </span>
          <Button variant="secondary" size="sm" loading={signOut.isPending} onClick={() => signOut.mutate()}>
            Sign out
          </Button>
        </>
      }
    >
      {children}
    </AppShell>
  );
}
