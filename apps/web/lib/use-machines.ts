"use client";
// Machines of both modes: the console's machines.list is GET /v1/machines in one mode at a time.
import { useQuery } from "@tanstack/react-query";
import { newestFirst } from "./modes.ts";
import { useTRPC } from "./trpc.ts";

export function useMachinesOfBothModes(status: string | undefined, pollMs?: (provisioning: boolean) => number) {
  const trpc = useTRPC();
  const opts = (mode: "live" | "test") => ({
    ...trpc.console.machines.list.queryOptions({ mode, status, limit: "200" }),
    ...(pollMs
      ? {
          refetchInterval: (q: { state: { data?: { data: { status: string }[] } } }) =>
            pollMs(Boolean(q.state.data?.data.some((m) => m.status === "provisioning"))),
        }
      : {}),
  });
  const live = useQuery(opts("live"));
  const test = useQuery(opts("test"));
  return {
    isPending: live.isPending || test.isPending,
    error: live.error ?? test.error,
    machines: newestFirst(live.data?.data, test.data?.data),
    refetch: () => Promise.all([live.refetch(), test.refetch()]),
  };
}
