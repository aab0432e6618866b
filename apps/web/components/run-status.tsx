import { Badge, type BadgeTone } from "@cua/ui/badge";

const TONE: Record<string, BadgeTone> = {
  queued: "neutral",
  running: "blue",
  awaiting_human: "amber",
  succeeded: "green",
  failed: "red",
  cancelled: "neutral",
  timed_out: "red",
};

export function RunStatus({ status }: { status: string }) {
  return (
    <span data-testid="run-status">
      <Badge tone={TONE[status] ?? "neutral"}>{status.replace("_", " ")}</Badge>
    </span>
  );
}
