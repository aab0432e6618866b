// The console's run procedures over /trpc, black-box, with sandbox (test-mode) runs: create on a machine,
// the event stream as a tRPC subscription (server-sent events), resume with a note, cancel, isolation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, trpc } from "./console-helpers.ts";
import { startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
});
afterAll(() => s.stop());

async function waitForStatus(cookie: string, id: string, status: string, ms = 20_000) {
  const t0 = Date.now();
  for (;;) {
    const r = await trpc(s.url, "console.runs.get", { query: true, cookie, input: { id } });
    if (r.data?.status === status) return r.data;
    if (Date.now() - t0 > ms) throw new Error(`run ${id} is ${r.data?.status}, not ${status}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/**
 * Reads the subscription's SSE frames until the stream ends (or `until` matches), as the browser's EventSource
 * would; each frame keeps its tracked id (`_id`, the SSE `id:` line).
 */
async function readEvents(
  cookie: string,
  id: string,
  until?: (frames: any[]) => boolean,
  ms = 20_000,
  procedure = "console.runs.events",
) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  const r = await fetch(`${s.url}/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify({ id }))}`, {
    headers: { cookie },
    signal: ac.signal,
  });
  const frames: any[] = [];
  let ended = false;
  let buf = "";
  try {
    const reader = r.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      buf += new TextDecoder().decode(value);
      let i = buf.indexOf("\n\n");
      while (i >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block.split("\n").find((l) => l.startsWith("data: "));
        const event = block.split("\n").find((l) => l.startsWith("event: "));
        const sseId = block.split("\n").find((l) => l.startsWith("id: "));
        if (data && !event) frames.push({ ...JSON.parse(data.slice(6)), _id: sseId?.slice(4) ?? null });
        if (event === "event: return") ended = true;
        i = buf.indexOf("\n\n");
      }
      if (ended || until?.(frames)) break;
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return { status: r.status, type: r.headers.get("content-type"), frames, ended };
}

describe("console runs", () => {
  it("a run pauses for a human, streams its frames live, resumes with a note and succeeds", async () => {
    const { cookie } = await signUp(s.url);
    const m = (await trpc(s.url, "console.machines.provision", { input: { mode: "test" }, cookie })).data.machine;
    const c = await trpc(s.url, "console.runs.create", {
      input: { machine_id: m.id, task: "file the report #steps=3 #human" },
      cookie,
    });
    expect(c.status).toBe(200);
    expect(c.data).toMatchObject({ status: "queued", machine_id: m.id });
    expect(c.data.id).toMatch(/^run_test_/);
    const paused = await readEvents(cookie, c.data.id, (f) => f.some((x) => x.event === "awaiting_human"));
    expect(paused.status).toBe(200);
    expect(paused.type).toContain("text/event-stream");
    expect(paused.frames[0]).toMatchObject({ seq: 1, event: "status", data: { status: "queued" } });
    expect(paused.frames.find((f) => f.event === "awaiting_human").data.reason).toBe("human_requested");
    const run = await waitForStatus(cookie, c.data.id, "awaiting_human");
    expect(run.awaiting_human_reason).toBe("human_requested");
    const res = await trpc(s.url, "console.runs.resume", { input: { id: c.data.id, note: "approved" }, cookie });
    expect(res.status).toBe(200);
    expect(res.data.status).toBe("running");
    await waitForStatus(cookie, c.data.id, "succeeded");
    // after the end: the whole replay, then the stream closes by itself
    const all = await readEvents(cookie, c.data.id);
    expect(all.ended).toBe(true);
    // the same stream as GET /v1/runs/{id}/events: the terminal frame, then the final done frame
    // (DECISIONS.md "Compatibility amendments"), whose tracked id is the terminal's seq
    const terminal = all.frames.at(-2);
    expect(terminal).toMatchObject({ event: "terminal", data: { status: "succeeded" } });
    expect(all.frames.at(-1)).toMatchObject({
      seq: terminal.seq,
      event: "done",
      data: { status: "succeeded", run_id: c.data.id },
      _id: String(terminal.seq),
    });
    expect(all.frames.filter((f) => f.event === "done")).toHaveLength(1);
    expect(all.frames.some((f) => f.event === "status" && f.data.note === "approved")).toBe(true);
    const again = await trpc(s.url, "console.runs.resume", { input: { id: c.data.id }, cookie });
    expect(again.status).toBe(409);
    expect(again.error.code).toBe("NOT_AWAITING_HUMAN");
    const list = await trpc(s.url, "console.runs.list", {
      query: true,
      cookie,
      input: { status: "succeeded", mode: "test" },
    });
    expect(list.data.data.map((r: { id: string }) => r.id)).toEqual([c.data.id]);
  });

  it("cancel acts at once on a paused run; a terminal run cannot be cancelled again", async () => {
    const { cookie } = await signUp(s.url);
    const m = (await trpc(s.url, "console.machines.provision", { input: { mode: "test" }, cookie })).data.machine;
    const c = await trpc(s.url, "console.runs.create", {
      input: { machine_id: m.id, task: "x #steps=2 #human" },
      cookie,
    });
    await waitForStatus(cookie, c.data.id, "awaiting_human");
    const r = await trpc(s.url, "console.runs.cancel", { input: { id: c.data.id }, cookie });
    expect(r.data.status).toBe("cancelled");
    const again = await trpc(s.url, "console.runs.cancel", { input: { id: c.data.id }, cookie });
    expect(again.status).toBe(409);
    expect(again.error.code).toBe("INVALID_STATE");
  });

  it("another account's run is 404 RUN_NOT_FOUND, also for its event stream; bad ids are 400", async () => {
    const a = await signUp(s.url);
    const b = await signUp(s.url);
    const m = (await trpc(s.url, "console.machines.provision", { input: { mode: "test" }, cookie: a.cookie })).data
      .machine;
    const c = await trpc(s.url, "console.runs.create", {
      input: { machine_id: m.id, task: "x #steps=1" },
      cookie: a.cookie,
    });
    const other = await trpc(s.url, "console.runs.get", { query: true, cookie: b.cookie, input: { id: c.data.id } });
    expect(other.status).toBe(404);
    expect(other.error.code).toBe("RUN_NOT_FOUND");
    expect((await trpc(s.url, "console.runs.cancel", { input: { id: c.data.id }, cookie: b.cookie })).status).toBe(404);
    const ev = await readEvents(b.cookie, c.data.id, undefined, 5_000);
    expect(ev.frames).toEqual([]);
    const bad = await trpc(s.url, "console.runs.get", { query: true, cookie: a.cookie, input: { id: "bad id!" } });
    expect(bad.status).toBe(400);
    expect(bad.error.code).toBe("INVALID_RUN_ID");
    // a run on another account's machine: the machine is not found
    const foreign = await trpc(s.url, "console.runs.create", {
      input: { machine_id: m.id, task: "x" },
      cookie: b.cookie,
    });
    expect(foreign.status).toBe(404);
  });

  it("a workflow run's subscription is the SSE route's stream: the terminal frame, then done, then the end; nothing after it", async () => {
    const { cookie } = await signUp(s.url);
    const m = (await trpc(s.url, "console.machines.provision", { input: { mode: "test" }, cookie })).data.machine;
    const w = await trpc(s.url, "console.workflows.startAdHocRun", {
      input: {
        mode: "test",
        machine_id: m.id,
        definition: { steps: [{ id: "one", type: "task", task: "x #steps=1" }] },
      },
      cookie,
    });
    expect(w.status).toBe(200);
    const all = await readEvents(cookie, w.data.id, undefined, 30_000, "console.workflows.runEvents");
    expect(all.ended).toBe(true);
    const terminal = all.frames.at(-2);
    expect(terminal).toMatchObject({ event: "terminal", data: { status: "succeeded" } });
    expect(all.frames.at(-1)).toMatchObject({
      seq: terminal.seq,
      event: "done",
      data: { status: "succeeded", run_id: w.data.id },
      _id: String(terminal.seq),
    });
    // reconnecting after done (the tracked id is the terminal's seq) replays nothing and ends
    const r = await fetch(
      `${s.url}/trpc/console.workflows.runEvents?input=${encodeURIComponent(JSON.stringify({ id: w.data.id, lastEventId: String(terminal.seq) }))}`,
      { headers: { cookie }, signal: AbortSignal.timeout(10_000) },
    );
    const text = await r.text();
    expect(text).not.toContain('"event":"');
    expect(text).toContain("event: return");
  });
});
