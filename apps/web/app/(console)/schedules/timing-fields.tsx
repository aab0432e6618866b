"use client";
// The timing part of a schedule's form (create and edit): frequency preset or custom cron, time, IANA time
// zone, day of week/month or a one-shot local time, and the preview of the next fires computed in the
// browser by core's own rules (lib/schedule-preview.ts; docs/schedules.md "When a schedule fires").
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { Select } from "@cua/ui/select";
import { Spinner } from "@cua/ui/spinner";
import { Table } from "@cua/ui/table";
import { useEffect, useMemo, useState } from "react";
import { inZone, type Preview, type PreviewInput, previewFires } from "../../../lib/schedule-preview.ts";

export const FREQUENCIES = [
  ["every_15_minutes", "Every 15 minutes"],
  ["every_30_minutes", "Every 30 minutes"],
  ["hourly", "Hourly"],
  ["every_6_hours", "Every 6 hours"],
  ["every_12_hours", "Every 12 hours"],
  ["daily", "Daily"],
  ["weekly", "Weekly"],
  ["monthly", "Monthly"],
  ["custom", "Custom cron"],
  ["one_shot", "Once (run_at)"],
] as const;
const MONTH_DAYS = Array.from({ length: 31 }, (_, i) => String(i + 1));
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
export const textarea =
  "block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm focus-visible:outline-2 focus-visible:outline-indigo-600 dark:border-slate-600 dark:bg-slate-900";

function zones(): string[] {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch {
    return ["UTC"];
  }
}

/** The browser's "now", read after hydration and refreshed every 30 s (null on the server). */
export function useNow(): Date | null {
  const [now, setNow] = useState<Date | null>(null);
  useEffect(() => {
    setNow(new Date());
    const t = setInterval(() => setNow(new Date()), 30_000);
    return () => clearInterval(t);
  }, []);
  return now;
}

export function usePreview(p: PreviewInput, now: Date | null): Preview | null {
  return useMemo(() => (now ? previewFires(p, now) : null), [p, now]);
}

/** The timing inputs; `idPrefix` keeps the zone list's id unique when two forms share a page. */
export function TimingInputs({
  p,
  onChange,
  idPrefix,
}: {
  p: PreviewInput;
  onChange: (next: PreviewInput) => void;
  idPrefix: string;
}) {
  const zoneList = useMemo(zones, []);
  const set = (k: keyof PreviewInput) => (e: { target: { value: string } }) => onChange({ ...p, [k]: e.target.value });
  const f = p.frequency;
  const listId = `${idPrefix}-zones`;
  return (
    <>
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-3">
        <Field label="Frequency">
          <Select value={f} onChange={set("frequency")}>
            {FREQUENCIES.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </Select>
        </Field>
        <Field label="Time zone" hint="IANA name; everything below is evaluated in it.">
          <Input value={p.timezone} onChange={set("timezone")} list={listId} required />
        </Field>
        {f === "custom" && (
          <Field label="Cron" hint="5 fields (minute hour day month weekday) or 6 (seconds first).">
            <Input value={p.cron} onChange={set("cron")} placeholder="30 7 * * 1-5" required />
          </Field>
        )}
        {(f === "daily" || f === "weekly" || f === "monthly") && (
          <Field label="Time" hint="HH:MM in the time zone.">
            <Input type="time" value={p.time} onChange={set("time")} required />
          </Field>
        )}
        {f === "weekly" && (
          <Field label="Day of week">
            <Select value={p.day_of_week} onChange={set("day_of_week")}>
              {DAYS.map((d, i) => (
                <option key={d} value={String(i)}>
                  {d}
                </option>
              ))}
            </Select>
          </Field>
        )}
        {f === "monthly" && (
          <Field label="Day of month" hint="31 fires only in months that have one.">
            <Select value={p.day_of_month} onChange={set("day_of_month")}>
              {MONTH_DAYS.map((d) => (
                <option key={d} value={d}>
                  {d}
                </option>
              ))}
            </Select>
          </Field>
        )}
        {f === "one_shot" && (
          <Field label="Run at" hint="A local date and time in the time zone; fires once, then the schedule pauses.">
            <Input type="datetime-local" value={p.run_at} onChange={set("run_at")} required />
          </Field>
        )}
      </div>
      <datalist id={listId}>
        {zoneList.map((z) => (
          <option key={z} value={z} />
        ))}
      </datalist>
    </>
  );
}

/** The effective cron and the next fires in the schedule's zone and the viewer's (or the problem). */
export function FirePreview({ preview, zone, viewer }: { preview: Preview | null; zone: string; viewer: string }) {
  return (
    <section
      aria-label="Next fire times"
      className="rounded-md border border-slate-200 p-3 text-sm dark:border-slate-800"
    >
      <h3 className="mb-2 font-medium">Next fire times</h3>
      {!preview ? (
        <Spinner label="Computing" />
      ) : !preview.ok ? (
        <p className="text-red-700 dark:text-red-300" data-testid="preview-problem">
          {preview.problem}
        </p>
      ) : (
        <>
          {preview.cron && (
            <p className="mb-2 text-slate-600 dark:text-slate-400">
              cron <code data-testid="preview-cron">{preview.cron}</code>
            </p>
          )}
          <Table
            caption="Next fire times"
            rows={preview.fires}
            rowKey={(d) => d.toISOString()}
            columns={[
              { key: "n", header: "#", cell: (d) => preview.fires.indexOf(d) + 1 },
              { key: "zone", header: `In ${zone}`, cell: (d) => inZone(d, zone) },
              { key: "viewer", header: `Your time (${viewer})`, cell: (d) => inZone(d, viewer) },
            ]}
          />
        </>
      )}
    </section>
  );
}

/** The schedule's task prompt (the create and edit forms). */
export function TaskPromptField({
  value,
  onChange,
  hint,
}: {
  value: string;
  onChange: (v: string) => void;
  hint: string;
}) {
  return (
    <Field label="Task prompt" hint={hint}>
      <textarea
        value={value}
        onChange={(e) => onChange(e.target.value)}
        rows={3}
        required
        maxLength={16000}
        className={textarea}
      />
    </Field>
  );
}
