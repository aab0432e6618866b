import { Badge } from "@cua/ui/badge";

/** A schedule's state (active or paused, with the reason it paused). */
export function ScheduleStatus({ status, reason }: { status: string; reason?: string | null }) {
  return (
    <span data-testid="schedule-status" className="inline-flex items-center gap-1">
      <Badge tone={status === "active" ? "green" : "amber"}>{status}</Badge>
      {status === "paused" && reason && (
        <span className="text-xs text-slate-500 dark:text-slate-400">{reason.replaceAll("_", " ")}</span>
      )}
    </span>
  );
}

/** next_run_at in the schedule's zone and, below it, in the viewer's. */
export function TwoZones({ at, zone, viewer }: { at: string | null; zone: string; viewer: string }) {
  if (!at) return <span className="text-slate-500">none</span>;
  const fmt = (tz: string) =>
    new Date(at).toLocaleString("en-US", {
      timeZone: tz,
      weekday: "short",
      month: "short",
      day: "numeric",
      hour: "2-digit",
      minute: "2-digit",
      timeZoneName: "short",
    });
  return (
    <span className="whitespace-nowrap">
      <span className="block">{fmt(zone)}</span>
      {viewer !== zone && <span className="block text-xs text-slate-500 dark:text-slate-400">{fmt(viewer)} (you)</span>}
    </span>
  );
}
