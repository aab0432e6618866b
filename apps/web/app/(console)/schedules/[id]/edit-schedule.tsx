"use client";
// Editing a schedule: name, task prompt, machine (of the schedule's mode), timing (frequency or cron, time,
// time zone, days, one-shot time) and enabled. Saving sends PATCH /v1/schedules/{id} (console.schedules.update)
// with the fields that changed, then pause or resume when "enabled" changed: the same operations as /v1, so
// the server's rules (422 for a bad cron or zone, a field the frequency does not take, another mode's
// machine) are the ones the operator meets, shown in their words.
import { Button } from "@cua/ui/button";
import { ErrorBox } from "@cua/ui/error-box";
import { Field } from "@cua/ui/field";
import { Input } from "@cua/ui/input";
import { Select } from "@cua/ui/select";
import { Spinner } from "@cua/ui/spinner";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useMemo, useState } from "react";
import { errorInfo, friendlyMessage } from "../../../../lib/errors.ts";
import { type PreviewInput, previewInputOf, timingOf } from "../../../../lib/schedule-preview.ts";
import { useTRPC, useTRPCClient } from "../../../../lib/trpc.ts";
import { useMachinesOfBothModes } from "../../../../lib/use-machines.ts";
import { FirePreview, TaskPromptField, TimingInputs, useNow, usePreview } from "../timing-fields.tsx";

export interface EditableSchedule {
  id: string;
  name: string;
  task_prompt: string;
  machine_id: string;
  frequency: string | null;
  cron: string | null;
  time: string | null;
  timezone: string;
  day_of_week: number | null;
  day_of_month: number | null;
  run_at: string | null;
  status: string;
  is_test: boolean;
}

const timingKey = (p: PreviewInput) => JSON.stringify({ ...timingOf(p), timezone: p.timezone });

export function EditScheduleForm({
  schedule: s,
  viewer,
  onDone,
}: {
  schedule: EditableSchedule;
  viewer: string;
  onDone: () => void;
}) {
  const trpc = useTRPC();
  const client = useTRPCClient();
  const qc = useQueryClient();
  const machines = useMachinesOfBothModes(undefined);
  const initial = useMemo(() => previewInputOf(s), [s]);
  const [name, setName] = useState(s.name);
  const [task, setTask] = useState(s.task_prompt);
  const [machineId, setMachineId] = useState(s.machine_id);
  const [enabled, setEnabled] = useState(s.status === "active");
  const [p, setP] = useState<PreviewInput>(initial);
  const now = useNow();
  const preview = usePreview(p, now);

  const patch: Record<string, unknown> = {};
  if (name !== s.name) patch.name = name;
  if (task !== s.task_prompt) patch.task_prompt = task;
  if (machineId !== s.machine_id) patch.machine_id = machineId;
  // a new frequency (or run_at) replaces the whole timing, so the timing goes as a whole when any part changed
  if (timingKey(p) !== timingKey(initial)) Object.assign(patch, timingOf(p), { timezone: p.timezone });
  const toggle = enabled !== (s.status === "active");
  const changed = Object.keys(patch).length > 0 || toggle;

  const save = useMutation({
    mutationFn: async () => {
      if (Object.keys(patch).length > 0) await client.console.schedules.update.mutate({ id: s.id, ...patch });
      if (toggle) {
        if (enabled) await client.console.schedules.resume.mutate({ id: s.id });
        else await client.console.schedules.pause.mutate({ id: s.id });
      }
    },
    onSettled: () => qc.invalidateQueries({ queryKey: trpc.console.schedules.pathKey() }),
    onSuccess: onDone,
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const sameMode = machines.machines.filter((m) => m.is_test === s.is_test);
  const err = save.error ? errorInfo(save.error) : null;
  return (
    <form onSubmit={submit} className="space-y-4" aria-label="Edit the schedule">
      <div className="grid grid-cols-1 gap-4 sm:grid-cols-2">
        <Field label="Name">
          <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </Field>
        <Field label="Machine" hint={`A ${s.is_test ? "test" : "live"} machine: a schedule keeps its mode.`}>
          {machines.isPending ? (
            <Spinner label="Loading machines" />
          ) : (
            <Select value={machineId} onChange={(e) => setMachineId(e.target.value)}>
              {!sameMode.some((m) => m.id === s.machine_id) && <option value={s.machine_id}>{s.machine_id}</option>}
              {sameMode.map((m) => (
                <option key={m.id} value={m.id}>
                  {`${m.display_name || m.id} · ${m.status}`}
                </option>
              ))}
            </Select>
          )}
        </Field>
      </div>
      <TaskPromptField value={task} onChange={setTask} hint="What each fire asks the agent." />
      <TimingInputs p={p} onChange={setP} idPrefix="edit" />
      <FirePreview preview={preview} zone={p.timezone} viewer={viewer} />
      <label className="flex items-center gap-2 text-sm">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
        Enabled (fires on time; unchecked pauses the schedule)
      </label>
      {err && <ErrorBox title="The schedule was not saved" message={friendlyMessage(save.error)} code={err.code} />}
      <div className="flex flex-wrap gap-2">
        <Button type="submit" loading={save.isPending} disabled={!changed || !name.trim() || !task.trim()}>
          Save changes
        </Button>
        <Button type="button" variant="secondary" onClick={onDone} disabled={save.isPending}>
          Cancel
        </Button>
      </div>
    </form>
  );
}
