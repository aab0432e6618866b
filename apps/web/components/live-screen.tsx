"use client";
import { Button } from "@cua/ui/button";
import { ErrorBox } from "@cua/ui/error-box";
import { Spinner } from "@cua/ui/spinner";
import { keepPreviousData, useMutation, useQuery } from "@tanstack/react-query";
import { type MouseEvent, useState } from "react";
import { friendlyMessage } from "../lib/errors.ts";
import { useTRPC } from "../lib/trpc.ts";

/** The machine's screen, captured again every second while shown; a click on it clicks the machine there. */
export function LiveScreen({ id, name, onActed }: { id: string; name: string; onActed?: () => void }) {
  const trpc = useTRPC();
  const [paused, setPaused] = useState(false);
  const shot = useQuery({
    ...trpc.console.machines.screenshot.queryOptions({ id }),
    refetchInterval: paused ? false : 1000,
    refetchIntervalInBackground: false,
    placeholderData: keepPreviousData,
    staleTime: 0,
    retry: false,
  });
  const click = useMutation(trpc.console.machines.action.mutationOptions({ onSuccess: () => onActed?.() }));
  const onClick = (e: MouseEvent<HTMLImageElement>) => {
    if (!shot.data) return;
    const r = e.currentTarget.getBoundingClientRect();
    const x = Math.round(((e.clientX - r.left) / r.width) * shot.data.width);
    const y = Math.round(((e.clientY - r.top) / r.height) * shot.data.height);
    click.mutate({ id, command: "click", parameters: { x, y } });
  };
  return (
    <div>
      <div className="mb-2 flex flex-wrap items-center gap-3 text-sm">
        <Button variant="secondary" size="sm" onClick={() => setPaused((p) => !p)} aria-pressed={paused}>
          {paused ? "Resume live view" : "Pause live view"}
        </Button>
        <span className="text-slate-500" aria-live="off">
          {shot.data
            ? `Captured ${new Date(shot.data.captured_at).toLocaleTimeString("en-US")} · ${shot.data.width}×${shot.data.height}`
            : ""}
        </span>
        {shot.isFetching && <Spinner inline label="Refreshing" />}
      </div>
      {shot.isPending ? (
        <Spinner label="Capturing the screen" />
      ) : shot.error && !shot.data ? (
        <ErrorBox title="No screenshot" message={friendlyMessage(shot.error)} onRetry={() => shot.refetch()} />
      ) : shot.data ? (
        // biome-ignore lint/a11y/useKeyWithClickEvents: pointer convenience; the action form below does the same by keyboard
        // biome-ignore lint/performance/noImgElement: a data: URL refreshed every second; nothing for next/image to optimize
        <img
          src={`data:${shot.data.mime_type};base64,${shot.data.image_b64}`}
          alt={`Live screen of ${name}`}
          data-testid="live-screen"
          data-captured-at={shot.data.captured_at}
          width={shot.data.width}
          height={shot.data.height}
          onClick={onClick}
          className="h-auto w-full cursor-crosshair rounded border border-slate-300 bg-black dark:border-slate-700"
        />
      ) : null}
      {click.error && <ErrorBox title="The click failed" message={friendlyMessage(click.error)} />}
    </div>
  );
}
