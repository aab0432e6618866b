// The console's typed tRPC client: TanStack Query options for every procedure of the API's router.
// Only the router's *type* comes from apps/api; requests go to /trpc on this origin (proxied to the API).
// Subscriptions (a run's event stream) travel as server-sent events; everything else in batched requests.
import type { AppRouter } from "@cua/api/router";
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

export function makeTrpcClient() {
  return createTRPCClient<AppRouter>({
    links: [
      splitLink({
        condition: (op) => op.type === "subscription",
        true: httpSubscriptionLink({ url: "/trpc" }),
        false: httpBatchLink({
          url: "/trpc",
          fetch: (url, init) => fetch(url, { ...init, credentials: "same-origin" }),
        }),
      }),
    ],
  });
}
