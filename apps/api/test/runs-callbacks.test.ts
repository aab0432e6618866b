// Run callbacks (SPEC.md "Events" 2, "Authentication" 8; DECISIONS.md "Runs"): run.awaiting_human and the
// terminal events, POSTed to webhook_url, signed with the per-run webhook_secret (Service-Signature),
// a stable delivery id (body.id, Service-Delivery-Id), at most three recorded attempts with backoff, the
// delivery history on the run. The receiver is a local HTTP server (ALLOW_INSECURE_CALLBACKS=1).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { call, startTestServer, type TestServer } from "./helpers.ts";
import { callbackReceiver, createRun, getRun, sleep, testMachine, verify, waitFor, waitRun } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;
let rx: Awaited<ReturnType<typeof callbackReceiver>>;

beforeAll(async () => {
  s = await startTestServer({
    ALLOW_INSECURE_CALLBACKS: "1",
    RUN_CALLBACK_BACKOFF_SECONDS: "1,2",
    RUN_CALLBACK_TIMEOUT_MS: "2000",
    MACHINE_PROVIDER: "none",
  });
  acct = await s.account();
  machine = await testMachine(s, acct.test_key);
  rx = await callbackReceiver();
});
afterAll(async () => {
  await s.stop();
  await rx.close();
});
beforeEach(() => rx.failNext(0));

async function start(task: string, extra: Record<string, unknown> = {}, url = rx.url) {
  const r = await createRun(s, acct.test_key, { machine_id: machine, task, webhook_url: url, ...extra });
  expect(r.status).toBe(201);
  rx.secrets.set(r.body.id, r.body.webhook_secret);
  return r.body as { id: string; webhook_secret: string };
}

const receivedFor = (id: string) => rx.received.filter((x) => x.json?.data?.run?.id === id);

describe("terminal callbacks", () => {
  it("run.succeeded: signed with the run's secret, the delivery id in body and header, recorded on the run", async () => {
    const run = await start("#steps=2");
    await waitRun(s, acct.test_key, run.id, ["succeeded"]);
    const [got] = await waitFor(
      "the callback",
      async () => receivedFor(run.id),
      (l) => l.length >= 1,
    );
    expect(got!.signatureValid).toBe(true);
    expect(got!.headers["content-type"]).toBe("application/json");
    expect(got!.json).toMatchObject({
      event: "run.succeeded",
      data: { run: { id: run.id, status: "succeeded", step_count: 2, webhook_secret: null } },
    });
    expect(got!.json.id).toMatch(/^dlv_[0-9a-f]{24}$/);
    expect(got!.headers["service-delivery-id"]).toBe(got!.json.id);
    expect(Date.parse(got!.json.created_at)).not.toBeNaN();
    // the signature covers "<t>.<raw body>" with this run's secret, nothing else
    expect(verify(`whsec_${"0".repeat(64)}`, got!.body, String(got!.headers["service-signature"]))).toBe(false);
    expect(verify(run.webhook_secret, `${got!.body} `, String(got!.headers["service-signature"]))).toBe(false);
    const rec = await waitFor(
      "the delivery record",
      () => getRun(s, acct.test_key, run.id),
      (r) => r.body.callbacks[0]?.status === "delivered",
    );
    expect(rec.body.callbacks).toEqual([
      {
        id: got!.json.id,
        event: "run.succeeded",
        status: "delivered",
        attempts: [
          { attempt: 1, at: expect.any(String), status_code: 200, error: null, duration_ms: expect.any(Number) },
        ],
        created_at: expect.any(String),
        delivered_at: expect.any(String),
      },
    ]);
    expect(receivedFor(run.id)).toHaveLength(1);
  });

  it("run.failed, run.cancelled and run.timed_out", async () => {
    const failed = await start("#fail #steps=1");
    const timed = await start("#timeout");
    const cancelled = await start("#human");
    await waitRun(s, acct.test_key, cancelled.id, ["awaiting_human"]);
    await call(s.url, "POST", `/v1/runs/${cancelled.id}/cancel`, { key: acct.test_key });
    for (const [run, event] of [
      [failed, "run.failed"],
      [timed, "run.timed_out"],
      [cancelled, "run.cancelled"],
    ] as const) {
      const got = await waitFor(
        event,
        async () => receivedFor(run.id).filter((x) => x.json.event === event),
        (l) => l.length >= 1,
      );
      expect(got[0]!.signatureValid).toBe(true);
      expect(got[0]!.json.data.run.status).toBe(event.slice(4));
    }
  });

  it("run.awaiting_human when the run pauses, then the terminal callback after the resume", async () => {
    const run = await start("#human #steps=2");
    await waitRun(s, acct.test_key, run.id, ["awaiting_human"]);
    const paused = await waitFor(
      "run.awaiting_human",
      async () => receivedFor(run.id),
      (l) => l.length >= 1,
    );
    expect(paused[0]!.json).toMatchObject({
      event: "run.awaiting_human",
      data: { run: { status: "awaiting_human", awaiting_human_reason: "human_requested" } },
    });
    await call(s.url, "POST", `/v1/runs/${run.id}/resume`, { key: acct.test_key, body: {} });
    const both = await waitFor(
      "run.succeeded",
      async () => receivedFor(run.id),
      (l) => l.length >= 2,
    );
    expect(both.map((x) => x.json.event)).toEqual(["run.awaiting_human", "run.succeeded"]);
    expect(new Set(both.map((x) => x.json.id)).size).toBe(2);
    expect(both.every((x) => x.signatureValid)).toBe(true);
  });
});

describe("retries", () => {
  it("a failing receiver gets up to three attempts with backoff, all with the same delivery id", async () => {
    rx.failNext(2, 503);
    const run = await start("#steps=1");
    const got = await waitFor(
      "three attempts",
      async () => receivedFor(run.id),
      (l) => l.length >= 3,
      20_000,
    );
    expect(new Set(got.map((x) => x.json.id)).size).toBe(1);
    expect(new Set(got.map((x) => x.headers["service-delivery-id"])).size).toBe(1);
    expect(got.every((x) => x.body === got[0]!.body)).toBe(true);
    expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(900);
    expect(got[2]!.at - got[1]!.at).toBeGreaterThanOrEqual(1900);
    const rec = await waitFor(
      "delivered",
      () => getRun(s, acct.test_key, run.id),
      (r) => r.body.callbacks[0]?.status === "delivered",
    );
    expect(rec.body.callbacks[0].attempts.map((a: any) => [a.attempt, a.status_code])).toEqual([
      [1, 503],
      [2, 503],
      [3, 200],
    ]);
    expect(rec.body.callbacks[0].attempts[0].error).toBe("HTTP 503");
  }, 30_000);

  it("after three failed attempts the delivery is failed and never tried again", async () => {
    rx.failNext(100, 500);
    const run = await start("#steps=1");
    const rec = await waitFor(
      "failed",
      () => getRun(s, acct.test_key, run.id),
      (r) => r.body.callbacks[0]?.status === "failed",
      20_000,
    );
    expect(rec.body.callbacks[0].attempts).toHaveLength(3);
    await sleep(3000);
    expect(receivedFor(run.id)).toHaveLength(3);
    rx.failNext(0);
  }, 30_000);

  it("an unreachable receiver: attempts are recorded with the connection error", async () => {
    const dead = http.createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const run = await start("#steps=1", {}, `http://127.0.0.1:${port}/gone`);
    const rec = await waitFor(
      "failed",
      () => getRun(s, acct.test_key, run.id),
      (r) => r.body.callbacks[0]?.status === "failed",
      20_000,
    );
    for (const a of rec.body.callbacks[0].attempts) {
      expect(a.status_code).toBeNull();
      expect(a.error).toMatch(/ECONNREFUSED/);
    }
  }, 30_000);
});
