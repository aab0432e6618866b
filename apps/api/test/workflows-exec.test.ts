// Workflow execution through the real server and the embedded durable executor (SPEC.md "Workflows",
// "Workflow run", "Events" 6; DECISIONS.md "Workflows" and its Compatibility amendment: step types, the
// thirteen condition ops, templating, guards -> GUARD_EXCEEDED, resume {approved, note}, events with the run
// stream's framing plus step_started/step_finished). Test keys: task steps start sandbox task runs on a
// mock machine, driven by directives in the task text (#steps=N, #fail, #human).
// biome-ignore-all lint/suspicious/noThenProperty: `then` is the DSL's field of an if step
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

const req = (method: string, p: string, body?: unknown, key = acct.test_key) => call(s.url, method, p, { key, body });
const task = (id: string, text = "work #steps=1", extra: Record<string, unknown> = {}) => ({
  id,
  type: "task",
  task: text,
  ...extra,
});
const adhoc = async (definition: unknown, extra: Record<string, unknown> = {}) => {
  const r = await req("POST", "/v1/workflows/runs", { definition, machine_id: machine, ...extra });
  if (r.status !== 201) throw new Error(`start: ${r.status} ${r.text}`);
  return r.body.id as string;
};
const TERMINAL = ["succeeded", "failed", "cancelled", "timed_out"];
const waitStatus = (id: string, statuses = TERMINAL, ms = 60_000) =>
  waitFor(
    `workflow run ${id} ${statuses.join("|")}`,
    async () => (await req("GET", `/v1/workflows/runs/${id}`)).body,
    (b: any) => statuses.includes(b?.status),
    ms,
  ).then((b: any) => b);
const stepOf = (run: any, id: string) => run.steps.find((x: any) => x.id === id);

describe("step types", () => {
  it("task: starts a real task run, binds {status, passed, result, run_id, steps, error}; save_as, templates", async () => {
    const id = await adhoc(
      {
        steps: [
          task("login", "log in as {{inputs.user}} #steps=2", { save_as: "session" }),
          task("export", "export for {{vars.session.run_id}} #steps=1"),
          {
            id: "check",
            type: "assert",
            condition: {
              op: "and",
              conditions: [
                { op: "eq", left: "{{login.passed}}", right: true },
                { op: "eq", left: "{{session.steps}}", right: 2 },
                { op: "eq", left: "{{export.status}}", right: "succeeded" },
              ],
            },
          },
        ],
        output: { first: "{{login.run_id}}", steps: "{{login.steps}}", text: "user={{inputs.user}}" },
      },
      { inputs: { user: "ada" } },
    );
    const run = await waitStatus(id);
    expect(run.status).toBe("succeeded");
    const login = stepOf(run, "login");
    expect(login).toMatchObject({ status: "succeeded", output: { status: "succeeded", passed: true, steps: 2 } });
    expect(login.run_id).toMatch(/^run_test_/);
    expect(run.output).toEqual({ first: login.run_id, steps: 2, text: "user=ada" });
    // the child is a real task run with the rendered task, billed as a run (0 credits for a test key)
    const child = await req("GET", `/v1/runs/${login.run_id}`);
    expect(child.body).toMatchObject({ status: "succeeded", task: "log in as ada #steps=2", step_count: 2 });
    expect(child.body.metadata).toMatchObject({ workflow_run_id: id, workflow_step_id: "login" });
    const exportChild = await req("GET", `/v1/runs/${stepOf(run, "export").run_id}`);
    expect(exportChild.body.task).toBe(`export for ${login.run_id} #steps=1`);
  });

  it("task: a failed task run fails the workflow with STEP_FAILED", async () => {
    const id = await adhoc({ steps: [task("t", "nope #steps=1 #fail"), { id: "after", type: "succeed" }] });
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "failed", error: { code: "STEP_FAILED", step_id: "t" } });
    expect(stepOf(run, "t").output).toMatchObject({ status: "failed", passed: false });
    expect(stepOf(run, "after").status).toBe("pending");
  });

  it("assert: a false condition fails with ASSERTION_FAILED and the rendered message", async () => {
    const id = await adhoc(
      {
        steps: [
          {
            id: "a",
            type: "assert",
            condition: { op: "gt", left: "{{inputs.n}}", right: 5 },
            message: "n was {{inputs.n}}",
          },
        ],
      },
      { inputs: { n: 3 } },
    );
    const run = await waitStatus(id);
    expect(run).toMatchObject({
      status: "failed",
      error: { code: "ASSERTION_FAILED", message: "n was 3", step_id: "a" },
    });
  });

  it("if: takes then or else by the condition", async () => {
    const def = {
      steps: [
        {
          id: "branch",
          type: "if",
          condition: { op: "gte", left: "{{inputs.total}}", right: 10000 },
          then: [{ id: "big", type: "succeed", output: "big" }],
          else: [{ id: "small", type: "succeed", output: "small" }],
        },
      ],
    };
    const a = await waitStatus(await adhoc(def, { inputs: { total: 12000 } }));
    const b = await waitStatus(await adhoc(def, { inputs: { total: 5 } }));
    expect([a.status, a.output, b.status, b.output]).toEqual(["succeeded", "big", "succeeded", "small"]);
    // the branch not taken is skipped
    expect([stepOf(a, "small").status, stepOf(a, "big").status]).toEqual(["skipped", "succeeded"]);
    expect([stepOf(b, "big").status, stepOf(b, "small").status]).toEqual(["skipped", "succeeded"]);
  });

  it("loop: count (from a template) and while; iterations_used counts them", async () => {
    const id = await adhoc(
      {
        steps: [
          {
            id: "l",
            type: "loop",
            count: "{{inputs.n}}",
            body: [{ id: "tick", type: "assert", condition: { op: "truthy", value: true } }],
          },
          { id: "check", type: "assert", condition: { op: "eq", left: "{{l.iterations}}", right: 3 } },
        ],
      },
      { inputs: { n: 3 } },
    );
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "succeeded", iterations_used: 3 });
    expect(stepOf(run, "l").output).toEqual({ iterations: 3 });
    // a while loop that never ends stops at its max_iterations (GUARD_EXCEEDED)
    const w = await waitStatus(
      await adhoc(
        {
          steps: [
            {
              id: "w",
              type: "loop",
              while: { op: "exists", value: "{{inputs.x}}" },
              max_iterations: 2,
              body: [{ id: "b", type: "assert", condition: { op: "truthy", value: 1 } }],
            },
          ],
        },
        { inputs: { x: 1 } },
      ),
    );
    expect(w).toMatchObject({ status: "failed", error: { code: "GUARD_EXCEEDED", step_id: "w" }, iterations_used: 2 });
  });

  it("retry: retries a failing body up to max_attempts, then fails", async () => {
    const id = await adhoc({
      steps: [{ id: "r", type: "retry", max_attempts: 3, body: [task("flaky", "try #steps=1 #fail")] }],
    });
    const run = await waitStatus(id);
    expect(run).toMatchObject({
      status: "failed",
      error: { code: "STEP_FAILED", step_id: "flaky" },
      iterations_used: 2,
    });
    const children = await s.app.deps.db.run.findMany({
      where: { task: "try #steps=1 #fail", metadata: { path: ["workflow_run_id"], equals: id } },
    });
    expect(children).toHaveLength(3);
    const ok = await waitStatus(
      await adhoc({ steps: [{ id: "r", type: "retry", max_attempts: 2, body: [task("fine")] }] }),
    );
    expect(ok).toMatchObject({ status: "succeeded" });
    expect(stepOf(ok, "r").output).toEqual({ attempts: 1 });
  });

  it("parallel: branches run concurrently (their task runs overlap)", async () => {
    const id = await adhoc({
      steps: [
        {
          id: "p",
          type: "parallel",
          branches: [[task("a", "left #steps=3 #slow=300")], [task("b", "right #steps=3 #slow=300")]],
        },
        {
          id: "both",
          type: "assert",
          condition: {
            op: "and",
            conditions: [
              { op: "truthy", value: "{{a.passed}}" },
              { op: "truthy", value: "{{b.passed}}" },
            ],
          },
        },
      ],
    });
    const run = await waitStatus(id);
    expect(run.status).toBe("succeeded");
    const a = await s.app.deps.db.run.findUniqueOrThrow({ where: { id: stepOf(run, "a").run_id } });
    const b = await s.app.deps.db.run.findUniqueOrThrow({ where: { id: stepOf(run, "b").run_id } });
    // overlap: each child started before the other finished
    expect(a.startedAt!.getTime()).toBeLessThan(b.finishedAt!.getTime());
    expect(b.startedAt!.getTime()).toBeLessThan(a.finishedAt!.getTime());
    expect(stepOf(run, "p").output).toEqual({ branches: 2 });
  });

  it("succeed ends the run early with its output; fail ends it with WORKFLOW_FAILED", async () => {
    const a = await waitStatus(
      await adhoc(
        {
          steps: [
            { id: "s", type: "succeed", output: { n: "{{inputs.n}}" } },
            { id: "never", type: "fail" },
          ],
        },
        { inputs: { n: 7 } },
      ),
    );
    expect(a).toMatchObject({ status: "succeeded", output: { n: 7 } });
    expect(stepOf(a, "never").status).toBe("pending");
    const b = await waitStatus(
      await adhoc({ steps: [{ id: "f", type: "fail", message: "stop {{inputs.why}}" }] }, { inputs: { why: "here" } }),
    );
    expect(b).toMatchObject({
      status: "failed",
      error: { code: "WORKFLOW_FAILED", message: "stop here", step_id: "f" },
    });
  });
});

describe("condition ops end to end", () => {
  const cases: Array<[string, unknown, boolean]> = [
    ["eq", { op: "eq", left: "{{inputs.a}}", right: 1 }, true],
    ["ne", { op: "ne", left: "{{inputs.a}}", right: 1 }, false],
    ["lt", { op: "lt", left: "{{inputs.a}}", right: 2 }, true],
    ["gt", { op: "gt", left: "{{inputs.a}}", right: 2 }, false],
    ["lte", { op: "lte", left: "{{inputs.a}}", right: 1 }, true],
    ["gte", { op: "gte", left: "{{inputs.a}}", right: 2 }, false],
    ["contains", { op: "contains", left: "{{inputs.list}}", right: "x" }, true],
    ["truthy", { op: "truthy", value: "{{inputs.list}}" }, true],
    ["falsy", { op: "falsy", value: "{{inputs.a}}" }, false],
    ["exists", { op: "exists", value: "{{inputs.none}}" }, false],
    [
      "and",
      {
        op: "and",
        conditions: [
          { op: "truthy", value: 1 },
          { op: "eq", left: "{{inputs.a}}", right: 1 },
        ],
      },
      true,
    ],
    [
      "or",
      {
        op: "or",
        conditions: [
          { op: "falsy", value: 1 },
          { op: "exists", value: "{{inputs.none}}" },
        ],
      },
      false,
    ],
    ["not", { op: "not", condition: { op: "exists", value: "{{inputs.none}}" } }, true],
  ];
  it("each of the thirteen ops decides an if step", async () => {
    const ids = await Promise.all(
      cases.map(([, condition]) =>
        adhoc(
          {
            steps: [
              {
                id: "c",
                type: "if",
                condition,
                then: [{ id: "yes", type: "succeed", output: true }],
                else: [{ id: "no", type: "succeed", output: false }],
              },
            ],
          },
          { inputs: { a: 1, list: ["x", "y"] } },
        ),
      ),
    );
    const runs = await Promise.all(ids.map((id) => waitStatus(id)));
    expect(runs.map((r, i) => [cases[i]![0], r.status, r.output])).toEqual(
      cases.map(([op, , expected]) => [op, "succeeded", expected]),
    );
  });
});

describe("sweeper", () => {
  it("a queued run whose start event was lost is started by the sweeper (the event id keeps it single)", async () => {
    const { sweepWorkflows } = await import("@cua/core/workflows/sweep-workflows");
    const deps = s.app.deps;
    const jobs = deps.workflows.jobs;
    const lost: string[] = [];
    const started = jobs.started.bind(jobs);
    // the start event of the next run is lost (the send fails after the commit)
    jobs.started = async (id: string) => {
      lost.push(id);
      throw new Error("event sink down");
    };
    let id: string;
    try {
      id = await adhoc({ steps: [{ id: "s", type: "succeed", output: "swept" }] });
    } finally {
      jobs.started = started;
    }
    expect(lost).toEqual([id]);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await req("GET", `/v1/workflows/runs/${id}`)).body.status).toBe("queued");
    const swept = await sweepWorkflows(deps, 0);
    expect(swept.runs).toBeGreaterThanOrEqual(1);
    await sweepWorkflows(deps, 0); // twice: the event id starts it once
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "succeeded", output: "swept" });
    const events = await deps.db.workflowRunEvent.findMany({ where: { runId: id, event: "terminal" } });
    expect(events).toHaveLength(1);
  });
});

describe("human approval, cancel, guards, version pinning, events", () => {
  const approvalDef = {
    steps: [
      task("prep", "prepare #steps=1"),
      { id: "ok", type: "human_approval", message: "Approve {{prep.run_id}}?" },
      { id: "done", type: "succeed", output: "{{ok.note}}" },
    ],
  };

  it("approval approved: awaiting_human with the message, then resume {approved: true, note} continues", async () => {
    const id = await adhoc(approvalDef);
    const waiting = await waitStatus(id, ["awaiting_human"]);
    expect(waiting.awaiting_step_id).toBe("ok");
    expect(waiting.awaiting_human_reason).toBe(`Approve ${stepOf(waiting, "prep").run_id}?`);
    expect(stepOf(waiting, "ok").status).toBe("awaiting_human");
    const r = await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true, note: "looks good" });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("running");
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "succeeded", output: "looks good" });
    expect(stepOf(run, "ok")).toMatchObject({ status: "succeeded", output: { approved: true, note: "looks good" } });
    envelope(await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true }), 409, "NOT_AWAITING_HUMAN");
  });

  it("approval rejected: the run fails with APPROVAL_REJECTED", async () => {
    const id = await adhoc(approvalDef);
    await waitStatus(id, ["awaiting_human"]);
    expect((await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: false, note: "no" })).status).toBe(200);
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "failed", error: { code: "APPROVAL_REJECTED", step_id: "ok" } });
  });

  it("racing answers: exactly one wins, the others get 409 RESUME_CONFLICT or NOT_AWAITING_HUMAN (DECISIONS Precise answers)", async () => {
    const id = await adhoc({
      steps: [
        { id: "h", type: "human_approval" },
        { id: "s", type: "succeed", output: "{{h.approved}}" },
      ],
    });
    await waitStatus(id, ["awaiting_human"]);
    const answers = await Promise.all(
      [true, false, true, false].map((approved) => req("POST", `/v1/workflows/runs/${id}/resume`, { approved })),
    );
    const won = answers.filter((r) => r.status === 200);
    expect(won).toHaveLength(1);
    for (const r of answers.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(409);
      expect(["RESUME_CONFLICT", "NOT_AWAITING_HUMAN"]).toContain(r.body.error.code);
    }
    const run = await waitStatus(id);
    const approved = answers.indexOf(won[0]!) % 2 === 0; // the even requests approve
    expect(run.status).toBe(approved ? "succeeded" : "failed");
  });

  it("approval timeout_seconds: nobody answers -> APPROVAL_TIMEOUT", async () => {
    const id = await adhoc({ steps: [{ id: "h", type: "human_approval", timeout_seconds: 1 }] });
    const run = await waitStatus(id);
    expect(run).toMatchObject({ status: "failed", error: { code: "APPROVAL_TIMEOUT", step_id: "h" } });
  });

  it("cancel during a child run cancels the child; a second cancel is 409 INVALID_STATE", async () => {
    const id = await adhoc({ steps: [task("long", "long work #steps=50 #slow=200")] });
    const child = await waitFor(
      "child run",
      async () => (await req("GET", `/v1/workflows/runs/${id}`)).body,
      (b: any) => Boolean(stepOf(b, "long")?.run_id),
    ).then((b: any) => stepOf(b, "long").run_id as string);
    await waitFor(
      "child running",
      async () => (await req("GET", `/v1/runs/${child}`)).body.status,
      (st) => st === "running",
    );
    const c = await req("POST", `/v1/workflows/runs/${id}/cancel`);
    expect(c.status).toBe(200);
    expect(c.body.status).toBe("cancelled");
    expect((await req("GET", `/v1/runs/${child}`)).body.status).toBe("cancelled");
    envelope(await req("POST", `/v1/workflows/runs/${id}/cancel`), 409, "INVALID_STATE");
    await new Promise((r) => setTimeout(r, 1500));
    expect((await req("GET", `/v1/workflows/runs/${id}`)).body.status).toBe("cancelled");
  });

  it("guards: max_iterations and deadline_seconds fail the run with GUARD_EXCEEDED", async () => {
    const loop = await waitStatus(
      await adhoc(
        {
          steps: [
            {
              id: "l",
              type: "loop",
              count: 5,
              body: [{ id: "x", type: "assert", condition: { op: "truthy", value: 1 } }],
            },
          ],
        },
        { max_iterations: 3 },
      ),
    );
    expect(loop).toMatchObject({
      status: "failed",
      error: { code: "GUARD_EXCEEDED", step_id: "l" },
      iterations_used: 3,
    });
    const late = await waitStatus(
      await adhoc(
        { steps: [task("slow", "slow #steps=30 #slow=200"), { id: "after", type: "succeed" }] },
        { deadline_seconds: 2 },
      ),
    );
    expect(late).toMatchObject({ status: "failed", error: { code: "GUARD_EXCEEDED" } });
    expect(stepOf(late, "after").status).toBe("pending");
  });

  it("deadline_seconds bounds a pending approval (GUARD_EXCEEDED); a loop count that is not an integer fails the step", async () => {
    const waiting = await waitStatus(
      await adhoc({ steps: [{ id: "h", type: "human_approval" }] }, { deadline_seconds: 1 }),
    );
    expect(waiting).toMatchObject({ status: "failed", error: { code: "GUARD_EXCEEDED", step_id: "h" } });
    const bad = await waitStatus(
      await adhoc(
        { steps: [{ id: "l", type: "loop", count: "{{inputs.n}}", body: [{ id: "x", type: "succeed" }] }] },
        { inputs: { n: "many" } },
      ),
    );
    expect(bad).toMatchObject({ status: "failed", error: { code: "STEP_FAILED", step_id: "l" } });
    expect(stepOf(bad, "l").status).toBe("failed");
  });

  it("version pinning: a run keeps the version it started with after an update", async () => {
    const w = await req("POST", "/v1/workflows", {
      name: "pinned",
      definition: {
        steps: [
          { id: "h", type: "human_approval" },
          { id: "v", type: "succeed", output: "v1" },
        ],
      },
    });
    const r1 = await req("POST", `/v1/workflows/${w.body.id}/runs`, {});
    await waitStatus(r1.body.id, ["awaiting_human"]);
    await req("PUT", `/v1/workflows/${w.body.id}`, {
      definition: { steps: [{ id: "v", type: "succeed", output: "v2" }] },
    });
    const r2 = await req("POST", `/v1/workflows/${w.body.id}/runs`, {});
    expect(r2.body.workflow_version).toBe(2);
    await req("POST", `/v1/workflows/runs/${r1.body.id}/resume`, { approved: true });
    const [a, b] = await Promise.all([waitStatus(r1.body.id), waitStatus(r2.body.id)]);
    expect([a.workflow_version, a.output, b.workflow_version, b.output]).toEqual([1, "v1", 2, "v2"]);
  });

  it("events: SSE with ids, step_started/step_finished, awaiting_human, resumed, terminal, then done; replay after a cursor", async () => {
    const id = await adhoc(approvalDef);
    await waitStatus(id, ["awaiting_human"]);
    await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true, note: "n" });
    const read = await readSse(`${s.url}/v1/workflows/runs/${id}/events`, acct.test_key, { ms: 30_000 });
    expect(read.status).toBe(200);
    expect(read.closed).toBe(true);
    const names = read.frames.map((f) => f.event);
    expect(names[0]).toBe("status");
    expect(names).toEqual(
      expect.arrayContaining(["step_started", "step_finished", "awaiting_human", "resumed", "terminal"]),
    );
    expect(names.at(-2)).toBe("terminal");
    expect(read.frames.at(-1)).toMatchObject({ id: null, event: "done", data: { status: "succeeded", run_id: id } });
    const ids = read.frames.filter((f) => f.id !== null).map((f) => f.id!);
    expect(ids).toEqual(ids.map((_, i) => i + 1));
    const started = read.frames.find((f) => f.event === "step_started" && f.data.step_id === "prep");
    expect(started?.data).toMatchObject({ run_id: id, type: "task" });
    // replay after a cursor
    const after = await readSse(`${s.url}/v1/workflows/runs/${id}/events`, acct.test_key, {
      headers: { "Last-Event-ID": String(ids.at(-3)) },
    });
    expect(after.frames.map((f) => f.id)).toEqual([ids.at(-2), ids.at(-1), null]);
    // after done: nothing
    const none = await readSse(`${s.url}/v1/workflows/runs/${id}/events?after=${ids.at(-1)}`, acct.test_key);
    expect([none.status, none.frames.length, none.closed]).toEqual([200, 0, true]);
    const bad = await readSse(`${s.url}/v1/workflows/runs/${id}/events?after=x`, acct.test_key);
    expect([bad.status, bad.error?.error?.code]).toEqual([400, "INVALID_CURSOR"]);
    const unknown = await readSse(`${s.url}/v1/workflows/runs/wfr_test_zz/events`, acct.test_key);
    expect([unknown.status, unknown.error?.error?.code]).toEqual([404, "WORKFLOW_RUN_NOT_FOUND"]);
  });
});
