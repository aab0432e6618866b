// A workflow run whose task step's task run waits for a human (on_awaiting_human pause) waits with it
// (docs/workflows.md "A task step that waits for a human"; DECISIONS.md "Workflows": statuses as runs,
// awaiting_human_reason, awaiting_step_id): GET shows awaiting_human with the task run's reason, the step and
// awaiting_run_id; the events carry status + awaiting_human (with task_run_id) and resumed; resuming the task
// run or answering the workflow run moves both on; a rejection fails it with APPROVAL_REJECTED. Test keys:
// sandbox task runs on a mock machine (#human pauses the task run for a human).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { readSse, testMachine, waitFor } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none", EXECUTOR_POLL_MS: "50" });
  acct = await s.account();
  machine = await testMachine(s, acct.test_key);
});
afterAll(() => s.stop());

const req = (method: string, p: string, body?: unknown) => call(s.url, method, p, { key: acct.test_key, body });
const adhoc = async (definition: unknown) => {
  const r = await req("POST", "/v1/workflows/runs", { definition, machine_id: machine });
  if (r.status !== 201) throw new Error(`start: ${r.status} ${r.text}`);
  return r.body.id as string;
};
const TERMINAL = ["succeeded", "failed", "cancelled", "timed_out"];
const waitRun = (id: string, ok: (b: any) => boolean, what: string, ms = 30_000) =>
  waitFor(what, async () => (await req("GET", `/v1/workflows/runs/${id}`)).body, ok, ms) as Promise<any>;
const waitStatus = (id: string, statuses = TERMINAL) =>
  waitRun(id, (b) => statuses.includes(b?.status), `workflow run ${id} ${statuses.join("|")}`);
const stepOf = (run: any, id: string) => run.steps.find((x: any) => x.id === id);
const task = (id: string, text: string) => ({ id, type: "task", task: text });

const oneHuman = {
  steps: [task("prep", "prepare #steps=1"), task("ask", "file it #steps=2 #human")],
  output: "{{ask.status}}",
};

describe("a task step whose task run waits for a human", () => {
  it("the workflow run waits with it (GET, events); resuming the task run moves both on", async () => {
    const id = await adhoc(oneHuman);
    const waiting = await waitStatus(id, ["awaiting_human"]);
    const child = stepOf(waiting, "ask").run_id;
    expect(child).toMatch(/^run_test_/);
    expect(waiting).toMatchObject({
      status: "awaiting_human",
      awaiting_step_id: "ask",
      awaiting_human_reason: "human_requested",
      awaiting_run_id: child,
    });
    expect(stepOf(waiting, "ask").status).toBe("awaiting_human");
    expect(stepOf(waiting, "prep")).toMatchObject({ status: "succeeded", run_id: expect.any(String) });
    expect((await req("GET", `/v1/runs/${child}`)).body).toMatchObject({
      status: "awaiting_human",
      awaiting_human_reason: "human_requested",
    });
    // the list shows it too, and its status filter finds it
    const listed = await req("GET", "/v1/workflows/runs?status=awaiting_human");
    expect(listed.body.data.map((r: any) => r.id)).toContain(id);

    // the events so far: status awaiting_human, then awaiting_human naming the step and the task run
    const live = await readSse(`${s.url}/v1/workflows/runs/${id}/events`, acct.test_key, {
      onFrame: (f) => f.event === "awaiting_human",
    });
    const i = live.frames.findIndex((f) => f.event === "awaiting_human");
    expect(live.frames[i - 1]).toMatchObject({ event: "status", data: { run_id: id, status: "awaiting_human" } });
    expect(live.frames[i]!.data).toEqual({ run_id: id, step_id: "ask", reason: "human_requested", task_run_id: child });

    // resuming the task run itself (POST /v1/runs/{id}/resume) resumes the workflow run in the same commit
    const r = await req("POST", `/v1/runs/${child}/resume`, { note: "checked by hand" });
    expect(r.status).toBe(200);
    const running = (await req("GET", `/v1/workflows/runs/${id}`)).body;
    expect(running).toMatchObject({ awaiting_step_id: null, awaiting_human_reason: null, awaiting_run_id: null });
    expect(["running", "succeeded"]).toContain(running.status);
    const done = await waitStatus(id);
    expect(done).toMatchObject({ status: "succeeded", output: "succeeded" });
    expect(stepOf(done, "ask")).toMatchObject({ status: "succeeded", output: { status: "succeeded", steps: 2 } });

    const all = await readSse(`${s.url}/v1/workflows/runs/${id}/events`, acct.test_key);
    const resumed = all.frames.find((f) => f.event === "resumed");
    expect(resumed?.data).toEqual({
      run_id: id,
      step_id: "ask",
      task_run_id: child,
      approved: true,
      note: "checked by hand",
    });
    const statuses = all.frames.filter((f) => f.event === "status").map((f) => f.data.status);
    expect(statuses).toEqual(["queued", "running", "awaiting_human", "running", "succeeded"]);
    expect(all.frames.at(-1)).toMatchObject({ event: "done", data: { status: "succeeded", run_id: id } });
  });

  it("answering the workflow run resumes its task run with the note; a second answer is 409", async () => {
    const id = await adhoc(oneHuman);
    const waiting = await waitStatus(id, ["awaiting_human"]);
    const child = waiting.awaiting_run_id;
    const r = await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true, note: "go ahead" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ awaiting_step_id: null, awaiting_run_id: null });
    expect(["running", "succeeded"]).toContain(r.body.status);
    const childEvents = await readSse(`${s.url}/v1/runs/${child}/events`, acct.test_key);
    expect(childEvents.frames.find((f) => f.event === "resumed")?.data).toEqual({ run_id: child, note: "go ahead" });
    expect((await waitStatus(id)).status).toBe("succeeded");
    envelope(await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true }), 409, "NOT_AWAITING_HUMAN");
  });

  it("a rejection cancels the task run and fails the workflow run with APPROVAL_REJECTED", async () => {
    const id = await adhoc(oneHuman);
    const waiting = await waitStatus(id, ["awaiting_human"]);
    const r = await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: false, note: "wrong account" });
    expect(r.status).toBe(200);
    const run = await waitStatus(id);
    expect(run).toMatchObject({
      status: "failed",
      error: { code: "APPROVAL_REJECTED", step_id: "ask" },
      awaiting_step_id: null,
      awaiting_run_id: null,
    });
    expect(run.error.message).toContain("wrong account");
    expect(stepOf(run, "ask").status).toBe("failed");
    expect((await req("GET", `/v1/runs/${waiting.awaiting_run_id}`)).body.status).toBe("cancelled");
  });

  it("a task run cancelled while it waits: the workflow run stops waiting and fails the step (STEP_FAILED)", async () => {
    const id = await adhoc(oneHuman);
    const waiting = await waitStatus(id, ["awaiting_human"]);
    expect((await req("POST", `/v1/runs/${waiting.awaiting_run_id}/cancel`)).status).toBe(200);
    const after = (await req("GET", `/v1/workflows/runs/${id}`)).body;
    expect(after.status).not.toBe("awaiting_human");
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "failed", error: { code: "STEP_FAILED", step_id: "ask" } });
  });

  it("parallel branches that both wait: the run waits until the last one is resumed", async () => {
    const id = await adhoc({
      steps: [
        {
          id: "both",
          type: "parallel",
          branches: [[task("a", "branch a #steps=1 #human")], [task("b", "branch b #steps=1 #human")]],
        },
      ],
    });
    const both = await waitRun(
      id,
      (b) => stepOf(b, "a")?.status === "awaiting_human" && stepOf(b, "b")?.status === "awaiting_human",
      "both branches waiting",
    );
    expect(both.status).toBe("awaiting_human");
    const first = both.awaiting_step_id as "a" | "b";
    const second = first === "a" ? "b" : "a";
    expect(both.awaiting_run_id).toBe(stepOf(both, first).run_id);
    // the first is resumed: the run still waits, now on the other branch's task run
    await req("POST", `/v1/runs/${stepOf(both, first).run_id}/resume`, {});
    const still = (await req("GET", `/v1/workflows/runs/${id}`)).body;
    expect(still).toMatchObject({
      status: "awaiting_human",
      awaiting_step_id: second,
      awaiting_run_id: stepOf(both, second).run_id,
      awaiting_human_reason: "human_requested",
    });
    // answering the workflow run answers the other one
    expect((await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true })).status).toBe(200);
    expect((await waitStatus(id)).status).toBe("succeeded");
  });
});
