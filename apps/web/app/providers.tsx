"use client";
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { type ReactNode, useState } from "react";
import { isUnauthenticated, shouldRetry } from "../lib/errors.ts";
import { makeTrpcClient, TRPCProvider } from "../lib/trpc.ts";

/** A session that ends while a page is open sends the operator to the sign-in page. */
function onAuthError(e: unknown) {
  if (!isUnauthenticated(e) || typeof window === "undefined") return;
  const here = window.location.pathname;
  if (here === "/sign-in" || here === "/sign-up") return;
  window.location.assign(`/sign-in?next=${encodeURIComponent(here + window.location.search)}`);
}

export function Providers({ children }: { children: ReactNode }) {
  const [queryClient] = useState(
    () =>
      new QueryClient({
        queryCache: new QueryCache({ onError: onAuthError }),
        mutationCache: new MutationCache({ onError: onAuthError }),
        defaultOptions: { queries: { retry: shouldRetry, staleTime: 5_000, refetchOnWindowFocus: true } },
      }),
  );
  const [trpcClient] = useState(makeTrpcClient);
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </QueryClientProvider>
  );
}
