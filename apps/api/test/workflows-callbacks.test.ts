// Workflow run callbacks (docs/workflows.md "Callbacks"; shaped and signed like task-run callbacks, SPEC.md
// "Events" 2, DECISIONS.md "Runs"): workflow.awaiting_human when an approval opens or a task step's task run
// waits for a human, then the terminal event;
// signed with the run's webhook_secret, a delivery id stable across attempts, at most three attempts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestServer, type TestServer } from "./helpers.ts";
import { callbackReceiver, testMachine, verify, waitFor } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let hook: Awaited<ReturnType<typeof callbackReceiver>>;

beforeAll(async () => {
  s = await startTestServer({
    MACHINE_PROVIDER: "none",
    ALLOW_INSECURE_CALLBACKS: "1",
    RUN_CALLBACK_BACKOFF_SECONDS: "1,1",
    RUN_CALLBACK_TIMEOUT_MS: "2000",
    EXECUTOR_POLL_MS: "50",
  });
  acct = await s.account();
  hook = await callbackReceiver();
});
afterAll(async () => {
  await s.stop();
  await hook.close();
});

const req = (method: string, p: string, body?: unknown) => call(s.url, method, p, { key: acct.test_key, body });
const of = (id: string) => hook.received.filter((r) => r.json?.workflow_run_id === id);

describe("workflow callbacks", () => {
  it("awaiting_human then succeeded, signed with the run's webhook_secret", async () => {
    const r = await req("POST", "/v1/workflows/runs", {
      definition: {
        steps: [
          { id: "ok", type: "human_approval", message: "go?" },
          { id: "s", type: "succeed", output: 1 },
        ],
      },
      webhook_url: hook.url,
    });
    expect(r.status).toBe(201);
    const { id, webhook_secret: secret } = r.body;
    await waitFor(
      "awaiting_human callback",
      async () => of(id).length,
      (n) => n >= 1,
    );
    const first = of(id)[0]!;
    expect(first.json).toMatchObject({
      event: "workflow.awaiting_human",
      workflow_run_id: id,
      status: "awaiting_human",
      reason: "go?",
      step_id: "ok",
      data: { workflow_run: { id, object: "workflow.run", status: "awaiting_human", webhook_secret: null } },
    });
    expect(first.json.id).toMatch(/^dlv_[0-9a-f]{24}$/);
    expect(first.headers["service-delivery-id"]).toBe(first.json.id);
    expect(verify(secret, first.body, String(first.headers["service-signature"]))).toBe(true);
    expect(verify("whsec_wrong", first.body, String(first.headers["service-signature"]))).toBe(false);

    await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true });
    await waitFor(
      "terminal callback",
      async () => of(id).length,
      (n) => n >= 2,
    );
    const last = of(id)[1]!;
    expect(last.json).toMatchObject({
      event: "workflow.succeeded",
      status: "succeeded",
      data: { workflow_run: { status: "succeeded", output: 1 } },
    });
    expect(verify(secret, last.body, String(last.headers["service-signature"]))).toBe(true);
    // the receiver has the request before the sender records its answer: wait for the record
    const rows = await waitFor(
      "deliveries recorded",
      async () =>
        (await s.app.deps.db.workflowCallbackDelivery.findMany({ where: { runId: id } }))
          .map((d) => [d.event, d.status, d.attemptCount])
          .sort(),
      (r) => r.every((d) => d[1] !== "pending"),
    );
    expect(rows).toEqual([
      ["workflow.awaiting_human", "delivered", 1],
      ["workflow.succeeded", "delivered", 1],
    ]);
  });

  it("a failing receiver is retried with the same delivery id (three attempts at most); cancel sends workflow.cancelled", async () => {
    hook.failNext(2);
    const r = await req("POST", "/v1/workflows/runs", {
      definition: { steps: [{ id: "f", type: "fail", message: "no" }] },
      webhook_url: hook.url,
    });
    const id = r.body.id;
    await waitFor(
      "three attempts",
      async () => of(id).length,
      (n) => n >= 3,
      20_000,
    );
    const ids = new Set(of(id).map((x) => x.json.id));
    expect(ids.size).toBe(1);
    expect(of(id)[0]!.json).toMatchObject({ event: "workflow.failed", status: "failed" });
    const row = await waitFor(
      "delivered",
      () => s.app.deps.db.workflowCallbackDelivery.findFirstOrThrow({ where: { runId: id } }),
      (d) => d.status === "delivered",
    );
    expect(row.attemptCount).toBe(3);

    const c = await req("POST", "/v1/workflows/runs", {
      definition: { steps: [{ id: "h", type: "human_approval" }] },
      webhook_url: hook.url,
    });
    await waitFor(
      "awaiting",
      async () => of(c.body.id).length,
      (n) => n >= 1,
    );
    await req("POST", `/v1/workflows/runs/${c.body.id}/cancel`);
    await waitFor(
      "cancelled callback",
      async () => of(c.body.id).map((x) => x.json.event),
      (e) => e.includes("workflow.cancelled"),
    );
  });

  it("a task step whose task run waits for a human: workflow.awaiting_human with the task run's reason, at once", async () => {
    const machine = await testMachine(s, acct.test_key);
    const r = await req("POST", "/v1/workflows/runs", {
      definition: { steps: [{ id: "file", type: "task", task: "file it #steps=1 #human" }] },
      machine_id: machine,
      webhook_url: hook.url,
    });
    expect(r.status).toBe(201);
    const { id, webhook_secret: secret } = r.body;
    // sent when the task run pauses (not only by the sweeper a minute later)
    await waitFor(
      "awaiting_human callback",
      async () => of(id).length,
      (n) => n >= 1,
      10_000,
    );
    const first = of(id)[0]!;
    const run = (await req("GET", `/v1/workflows/runs/${id}`)).body;
    expect(first.json).toMatchObject({
      event: "workflow.awaiting_human",
      workflow_run_id: id,
      status: "awaiting_human",
      reason: "human_requested",
      step_id: "file",
      data: { workflow_run: { id, status: "awaiting_human", awaiting_run_id: run.awaiting_run_id } },
    });
    expect(verify(secret, first.body, String(first.headers["service-signature"]))).toBe(true);
    await req("POST", `/v1/workflows/runs/${id}/resume`, { approved: true });
    await waitFor(
      "succeeded callback",
      async () => of(id).map((x) => x.json.event),
      (e) => e.includes("workflow.succeeded"),
    );
    expect(of(id).filter((x) => x.json.event === "workflow.awaiting_human")).toHaveLength(1);
  });
});
