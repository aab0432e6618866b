import { Badge, type BadgeTone } from "@cua/ui/badge";

const TONE: Record<string, BadgeTone> = {
  provisioning: "blue",
  running: "green",
  stopped: "neutral",
  suspended: "amber",
  terminated: "neutral",
  error: "red",
};

export function MachineStatus({ status, reason }: { status: string; reason?: string | null }) {
  return (
    <span className="inline-flex items-center gap-1.5" data-testid="machine-status">
      {status === "provisioning" && (
        <svg
          aria-hidden="true"
          viewBox="0 0 24 24"
          className="h-3.5 w-3.5 animate-spin text-sky-600 motion-reduce:animate-none"
        >
          <circle cx="12" cy="12" r="10" fill="none" stroke="currentColor" strokeOpacity="0.3" strokeWidth="4" />
          <path d="M22 12a10 10 0 0 0-10-10" fill="none" stroke="currentColor" strokeWidth="4" />
        </svg>
      )}
      <Badge tone={TONE[status] ?? "neutral"}>{status}</Badge>
      {reason && <span className="text-xs text-slate-500">{reason.replaceAll("_", " ")}</span>}
    </span>
  );
}
