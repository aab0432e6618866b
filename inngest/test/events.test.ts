// The event catalogue (inngest/src/events.ts): the code that sends an event and the function that
// receives it share one typed definition. A misspelled name or wrong data fails to compile (each
// expect-error directive below fails `npm run typecheck` if its line compiles) and, for callers that
// get around the compiler, fails validation before anything is sent. docs/executor.md "Events".
import type { RunsDeps } from "@cua/core/runs/ports";
import { Inngest } from "inngest";
import { describe, expect, test } from "vitest";
import {
  type AppEvent,
  appEvents,
  EventValidationError,
  runCallback,
  runResumed,
  runStarted,
  sendAppEvents,
  validateAppEvent,
  type WireEvent,
} from "../src/events.ts";
import { createRunFunctions } from "../src/functions/runs.ts";
import { InngestRunJobs } from "../src/run-jobs.ts";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

function collectingSink() {
  const sent: WireEvent[] = [];
  return { sent, sink: { send: async (events: WireEvent[]) => void sent.push(...events) } };
}

/** Every event name a function's config refers to: triggers and cancelOn. */
function namesReceived(): Set<string> {
  const client = new Inngest({ id: "events-test", logger: quiet });
  const names = new Set<string>();
  for (const fn of createRunFunctions(client, {} as RunsDeps)) {
    const opts = (fn as unknown as { opts: { triggers?: { event?: unknown }[]; cancelOn?: { event: unknown }[] } })
      .opts;
    for (const t of [...(opts.triggers ?? []), ...(opts.cancelOn ?? [])]) {
      if (t.event === undefined) continue; // cron
      // a function refers to the definition object itself, never to a name written as a string
      expect(Object.values(appEvents)).toContain(t.event);
      names.add((t.event as { name: string }).name);
    }
  }
  return names;
}

describe("event catalogue", () => {
  test("a misspelled event name fails to compile and fails validation", async () => {
    // @ts-expect-error "run/startd" is not an event of the catalogue
    const typo: AppEvent = { name: "run/startd", data: { run_id: "run_1" } };
    await expect(validateAppEvent(typo)).rejects.toThrow(EventValidationError);
    await expect(validateAppEvent(typo)).rejects.toThrow('unknown event "run/startd"');
    // @ts-expect-error a misspelled definition does not exist either
    expect(() => appEvents.runStartd.create({ run_id: "run_1" })).toThrow();
  });

  test("data that does not match the event's schema fails to compile and fails validation", async () => {
    // @ts-expect-error run_id must be a string
    const wrongType = runStarted.create({ run_id: 42 });
    await expect(validateAppEvent(wrongType)).rejects.toThrow(/run\/started" has invalid data: run_id/);
    // @ts-expect-error run/callback carries a delivery_id, not a run_id
    const wrongField = runCallback.create({ run_id: "run_1" });
    await expect(validateAppEvent(wrongField)).rejects.toThrow(/delivery_id/);
    await expect(validateAppEvent(runStarted.create({ run_id: "" }))).rejects.toThrow(/run_id/);
  });

  test("a valid event reaches the sink as plain JSON with its idempotency id", async () => {
    const { sent, sink } = collectingSink();
    await sendAppEvents(sink, runResumed.create({ run_id: "run_1", note: null }, { id: "run-resumed-run_1-1" }));
    expect(sent).toEqual([{ name: "run/resumed", data: { run_id: "run_1", note: null }, id: "run-resumed-run_1-1" }]);
    expect(JSON.parse(JSON.stringify(sent))).toEqual(sent);
  });

  test("an invalid event among several sends nothing", async () => {
    const { sent, sink } = collectingSink();
    const bad = { name: "run/cancelled", data: {} } as unknown as AppEvent;
    await expect(sendAppEvents(sink, runStarted.create({ run_id: "run_1" }), bad)).rejects.toThrow(
      EventValidationError,
    );
    expect(sent).toEqual([]);
  });

  test("every event the run use cases send is one a run function receives, with a stable idempotency id", async () => {
    const { sent, sink } = collectingSink();
    const jobs = new InngestRunJobs();
    await expect(jobs.started("run_1")).rejects.toThrow("not started");
    jobs.sink = sink;
    await jobs.started("run_1");
    await jobs.resumed("run_1", 2, "go on");
    await jobs.cancelled("run_1");
    await jobs.callback("dlv_1");
    expect(sent.map((e) => [e.name, e.id])).toEqual([
      ["run/started", "run-started-run_1"],
      ["run/resumed", "run-resumed-run_1-2"],
      ["run/cancelled", "run-cancelled-run_1"],
      ["run/callback", "run-callback-dlv_1"],
    ]);
    const received = namesReceived();
    // run/resumed is received by step.waitForEvent inside run-task, not by a trigger
    for (const e of sent) if (e.name !== runResumed.name) expect(received).toContain(e.name);
  });

  test("the SDK's own check (run by client.send and step.sendEvent) uses the same schema", async () => {
    await expect(runStarted.create({ run_id: "run_1" }).validate()).resolves.toBeUndefined();
    const forged = runStarted.create({ run_id: 7 as unknown as string });
    await expect(forged.validate()).rejects.toThrow();
  });
});
