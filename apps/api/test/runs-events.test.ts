// GET /v1/runs/{id}/events (SPEC.md "Events" 1; DECISIONS.md "Runs"): persisted frames with a monotonic
// seq per run, ordered replay after Last-Event-ID or ?after=, `: ping` heartbeats, durable terminal
// frames, and (DECISIONS.md "Compatibility amendments") a final id-less `done` frame {status, run_id} after the
// terminal frame, then the close, through the real server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { createRun, readSse, type SseFrame, testMachine, waitRun } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;

beforeAll(async () => {
  s = await startTestServer({ RUN_SSE_HEARTBEAT_MS: "100", MACHINE_PROVIDER: "none" });
  acct = await s.account();
  machine = await testMachine(s, acct.test_key);
});
afterAll(() => s.stop());

/** The stream split into its persisted frames (with ids) and the final `done` frames (no id). */
const stream = async (id: string, opts: Parameters<typeof readSse>[2] = {}, query = "", server = s) => {
  const r = await readSse(`${server.url}/v1/runs/${id}/events${query}`, acct.test_key, opts);
  const done = r.frames.filter((f) => f.event === "done");
  for (const d of done)
    expect(d).toEqual({ id: null, event: "done", data: { status: expect.any(String), run_id: id } });
  if (done.length > 0) expect(r.frames.at(-1)!.event).toBe("done"); // done is the very last frame
  return { ...r, frames: r.frames.filter((f) => f.event !== "done"), done };
};

function expectContiguous(frames: SseFrame[], from = 1) {
  expect(frames.map((f) => f.id)).toEqual(frames.map((_, i) => from + i));
}

describe("the live stream", () => {
  it("delivers every frame in seq order while the run goes, then closes after the terminal frame", async () => {
    const id = (
      await createRun(s, acct.test_key, { machine_id: machine, task: "type 'abc' then press enter #steps=4 #slow=150" })
    ).body.id;
    const r = await stream(id);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/event-stream");
    expect(r.headers.get("x-service-request-id")).toMatch(/^req_/);
    expect(r.closed).toBe(true);
    expectContiguous(r.frames);
    expect(r.frames.map((f) => f.event)).toEqual([
      "status", // queued
      "status", // running
      ...["step", "billing", "step", "billing", "step", "billing", "step", "billing"],
      "status", // succeeded
      "terminal",
    ]);
    expect(r.frames.at(-1)!.data).toEqual({
      run_id: id,
      status: "succeeded",
      result: {
        passed: true,
        status: "succeeded",
        summary: "Sandbox: done.",
        verdict: "pass",
        reasoning: "Sandbox: done.",
        steps: 4,
      },
      error: null,
    });
    expect(r.done).toEqual([{ id: null, event: "done", data: { status: "succeeded", run_id: id } }]);
    expect(r.frames[2]!.data).toMatchObject({
      run_id: id,
      step: 1,
      action: { action_type: "type_text", params: { text: "abc" } },
    });
    expect(r.frames[3]!.data).toEqual({ run_id: id, step: 1, credits_charged: 0, total_credits_charged: 0 });
    // the run resource agrees (it is authoritative)
    expect((await call(s.url, "GET", `/v1/runs/${id}`, { key: acct.test_key })).body.status).toBe("succeeded");
  });

  it("heartbeats (`: ping`) keep a waiting stream alive; frames resume when the run does", async () => {
    const id = (await createRun(s, acct.test_key, { machine_id: machine, task: "#human #steps=2" })).body.id;
    await waitRun(s, acct.test_key, id, ["awaiting_human"]);
    let resumed = false;
    const r = await stream(id, {
      onFrame: (f) => {
        if (f.event === "awaiting_human" && !resumed) {
          resumed = true;
          setTimeout(
            () => void call(s.url, "POST", `/v1/runs/${id}/resume`, { key: acct.test_key, body: { note: "ok" } }),
            600,
          );
        }
        return undefined;
      },
    });
    expect(r.closed).toBe(true);
    expect(r.comments.filter((c) => c === "ping").length).toBeGreaterThanOrEqual(3);
    expectContiguous(r.frames);
    const names = r.frames.map((f) => `${f.event}:${f.data.status ?? f.data.step ?? f.data.reason}`);
    expect(names).toContain("awaiting_human:human_requested");
    expect(r.frames.find((f) => f.event === "status" && f.data.note === "ok")).toBeDefined();
    // DECISIONS.md "Compatibility amendments": `resumed` with the note after a resume
    expect(r.frames.find((f) => f.event === "resumed")?.data).toEqual({ run_id: id, note: "ok" });
    expect(r.frames.at(-1)!.event).toBe("terminal");
    expect(r.done).toHaveLength(1);
  });
});

describe("replay", () => {
  let id: string;
  let all: SseFrame[];
  beforeAll(async () => {
    id = (await createRun(s, acct.test_key, { machine_id: machine, task: "#steps=3" })).body.id;
    await waitRun(s, acct.test_key, id, ["succeeded"]);
    all = (await stream(id)).frames;
  });

  it("after the end: the whole replay, then done, then the close", () => {
    expect(all).toHaveLength(10);
    expectContiguous(all);
    expect(all.at(-1)!.event).toBe("terminal");
  });

  it("?after=<seq> and Last-Event-ID: <seq> replay in order after the cursor", async () => {
    const a = await stream(id, {}, "?after=4");
    expect(a.closed).toBe(true);
    expect(a.frames).toEqual(all.slice(4));
    const b = await stream(id, { headers: { "Last-Event-ID": "7" } });
    expect(b.frames).toEqual(all.slice(7));
    const c = await stream(id, {}, "?after=0");
    expect(c.frames).toEqual(all);
  });

  it("a cursor at or past the terminal frame (reconnecting after done) gets no frames and an immediate close", async () => {
    const t0 = Date.now();
    const r = await stream(id, {}, "?after=10");
    expect(r.closed).toBe(true);
    expect(r.frames).toEqual([]);
    expect(r.done).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect((await stream(id, { headers: { "Last-Event-ID": "99" } })).frames).toEqual([]);
  });

  it("a client that reconnects with the last id it saw misses nothing and gets nothing twice", async () => {
    const run2 = (await createRun(s, acct.test_key, { machine_id: machine, task: "#steps=6 #slow=100" })).body.id;
    const first = await stream(run2, { onFrame: (_f, got) => got.length >= 4 });
    expect(first.closed).toBe(false);
    const last = first.frames.at(-1)!.id!;
    const rest = await stream(run2, { headers: { "Last-Event-ID": String(last) } });
    expect(rest.closed).toBe(true);
    const joined = [...first.frames, ...rest.frames];
    expectContiguous(joined);
    expect(joined.at(-1)!.event).toBe("terminal");
  });
});

describe("errors (JSON envelope before the stream starts)", () => {
  it("400 INVALID_RUN_ID, 404 RUN_NOT_FOUND (unknown, another account's), 400 INVALID_CURSOR", async () => {
    const id = (await createRun(s, acct.test_key, { machine_id: machine, task: "#steps=1" })).body.id;
    envelope(await call(s.url, "GET", "/v1/runs/bad.id/events", { key: acct.test_key }), 400, "INVALID_RUN_ID");
    envelope(await call(s.url, "GET", "/v1/runs/run_test_0123/events", { key: acct.test_key }), 404, "RUN_NOT_FOUND");
    const other = await s.account();
    envelope(await call(s.url, "GET", `/v1/runs/${id}/events`, { key: other.test_key }), 404, "RUN_NOT_FOUND");
    envelope(await call(s.url, "GET", `/v1/runs/${id}/events`, { key: acct.live_key }), 404, "RUN_NOT_FOUND");
    envelope(
      await call(s.url, "GET", `/v1/runs/${id}/events?after=abc`, { key: acct.test_key }),
      400,
      "INVALID_CURSOR",
    );
    envelope(
      await call(s.url, "GET", `/v1/runs/${id}/events`, { key: acct.test_key, headers: { "Last-Event-ID": "-1" } }),
      400,
      "INVALID_CURSOR",
    );
  });
});

describe("several API processes on one database", () => {
  it("a stream served by another process sees the frames the first one writes", async () => {
    const b = await startTestServer({ RUN_EVENTS_POLL_MS: "100", MACHINE_PROVIDER: "none" }, s.db);
    try {
      const id = (await createRun(s, acct.test_key, { machine_id: machine, task: "#steps=3 #slow=200" })).body.id;
      const r = await stream(id, {}, "", b);
      expect(r.closed).toBe(true);
      expectContiguous(r.frames);
      expect(r.frames.at(-1)).toMatchObject({ event: "terminal", data: { status: "succeeded" } });
    } finally {
      await b.stop();
    }
  });
});
