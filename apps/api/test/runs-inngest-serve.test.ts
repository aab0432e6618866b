// Production mode (docs/runs.md "Where the functions run"): with INNGEST_SIGNING_KEY / INNGEST_BASE_URL
// the API serves the run functions at /api/inngest through the SDK's Fastify adapter for a real Inngest
// server, and does not start the embedded executor. (No Inngest server runs here: these tests check the
// served endpoint and that requests without a valid signature are refused.)
import { canonicalJson, signBody } from "@cua/executor/signing";
import { runStarted } from "@cua/inngest/events";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./helpers.ts";
import { createRun, testMachine } from "./runs-helpers.ts";

const SIGNING_KEY = `signkey-prod-${"ab".repeat(32)}`;
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    INNGEST_SIGNING_KEY: SIGNING_KEY,
    INNGEST_EVENT_KEY: "test-event-key",
    INNGEST_BASE_URL: "http://127.0.0.1:9", // nothing listens: sending events fails, runs stay queued
    MACHINE_PROVIDER: "none",
  });
});
afterAll(() => s.stop());

it("serves the functions at /api/inngest (the SDK's handler) and does not start the embedded executor", async () => {
  expect(s.app.deps.durable?.mode).toBe("inngest");
  expect(s.app.deps.durable?.executor).toBeNull();
  // unsigned introspection: the SDK itself answers 401 in cloud mode
  const r = await fetch(`${s.url}/api/inngest`);
  expect(r.status).toBe(401);
  expect(r.headers.get("x-inngest-sdk-handled")).toBe("true");
  // a signed in-band sync, as the Inngest server makes it: the four run functions
  const body = { url: `${s.url}/api/inngest` };
  const text = canonicalJson(body);
  const sync = await fetch(`${s.url}/api/inngest`, {
    method: "PUT",
    headers: {
      "content-type": "application/json",
      "x-inngest-sync-kind": "in_band",
      "x-inngest-signature": signBody(text, SIGNING_KEY, Math.floor(Date.now() / 1000)),
    },
    body: text,
  });
  expect(sync.status).toBe(200);
  const app = (await sync.json()) as { app_id: string; functions: { id: string; triggers: unknown[] }[] };
  expect(app.app_id).toBe("cua");
  expect(app.functions.map((f) => f.id).sort()).toEqual([
    "cua-run-callback",
    "cua-run-deadline",
    "cua-run-sweeper",
    "cua-run-task",
    "cua-schedule-settle",
    "cua-schedule-sweeper",
    "cua-schedule-timer",
    "cua-workflow-callback",
    "cua-workflow-run",
    "cua-workflow-sweeper",
  ]);
  // a wrong key is refused
  const forged = await fetch(`${s.url}/api/inngest`, {
    method: "PUT",
    headers: {
      "content-type": "application/json",
      "x-inngest-sync-kind": "in_band",
      "x-inngest-signature": signBody(text, `signkey-prod-${"cd".repeat(32)}`, Math.floor(Date.now() / 1000)),
    },
    body: text,
  });
  expect(forged.status).toBe(401);
});

it("refuses calls without a valid signature", async () => {
  const r = await fetch(`${s.url}/api/inngest?fnId=cua-run-task&stepId=step`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-inngest-signature": "t=1&s=00" },
    body: JSON.stringify({
      event: { name: runStarted.name, data: { run_id: "x" } },
      events: [],
      steps: {},
      ctx: { run_id: "r", attempt: 0 },
    }),
  });
  expect(r.status).toBeGreaterThanOrEqual(400);
  expect(r.status).toBeLessThan(600);
});

it("a run is recorded (queued) even when the Inngest server cannot be reached; its function runs nowhere here", async () => {
  const a = await s.account();
  const m = await testMachine(s, a.test_key);
  const c = await createRun(s, a.test_key, { machine_id: m, task: "#steps=1" });
  expect(c.status).toBe(201);
  await new Promise((r) => setTimeout(r, 500));
  expect((await s.app.deps.db.run.findUniqueOrThrow({ where: { id: c.body.id } })).status).toBe("queued");
  expect(await s.app.deps.db.executorRun.count()).toBe(0);
});
