// Crash safety of task runs (issue 5 "Done when"): the API process is killed with SIGKILL (kill -9)
// while a live run's step is in flight (its engine call is under way, its hold on the wallet taken);
// a second process on the same database takes the run over and finishes it, with every step executed
// and billed exactly once. The managed engine is the OpenAI stand-in, answering each step after 1.5 s.

import fs from "node:fs";
import { createAccount } from "@cua/core/accounts/create-account";
import { silentLogger, systemClock } from "@cua/core/deps";
import { ledgerSum } from "@cua/core/wallet/wallet";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { MockMachineProvider } from "@cua/machines/mock-provider";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type OpenAIStandin,
  openaiReplies,
  startOpenAIStandin,
} from "../../../packages/engines/test/providers/standins/openai-standin.ts";
import { call, spawnService, stopChild, TEST_SECRETS_KEY } from "./helpers.ts";
import { waitFor } from "./runs-helpers.ts";

const MANAGED_KEY = "sk-managed-kill-0123456789abcdef";
let tdb: TestDatabase;
let standin: OpenAIStandin;
const children: ReturnType<typeof spawnService>[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  standin = await startOpenAIStandin({ apiKey: MANAGED_KEY });
});
afterAll(async () => {
  for (const c of children) {
    if (c.child.exitCode !== null || c.child.signalCode !== null) continue;
    c.child.kill("SIGKILL");
  }
  await standin?.close();
  await tdb?.drop();
});

/** kill -9 of the server process itself (and its launcher), with no chance to shut down. */
async function kill9(c: ReturnType<typeof spawnService>): Promise<number> {
  const server = [c.child.pid!]; // spawnService runs the server itself (node --import tsx, no launcher)
  c.child.kill("SIGKILL");
  await new Promise((r) =>
    c.child.exitCode === null && c.child.signalCode === null ? c.child.once("exit", r) : r(null),
  );
  await waitFor(
    "the server process to die",
    async () => fs.existsSync(`/proc/${server[0]}`),
    (alive) => !alive,
    5000,
  );
  return server[0]!;
}

function service() {
  const c = spawnService({
    DATABASE_URL: tdb.url,
    SECRETS_KEY: TEST_SECRETS_KEY,
    DATA_DIR: `/tmp/cua-kill-${process.pid}`,
    MANAGED_ENGINE: "openai",
    MANAGED_ENGINE_API_KEY: MANAGED_KEY,
    MANAGED_ENGINE_BASE_URL: `${standin.url}/v1`,
    MANAGED_ENGINE_MODEL: "gpt-5.4",
    PROVIDER_MAX_RETRIES: "0",
    MACHINE_PROVIDER: "none",
    MACHINE_METER_INTERVAL_MS: "3600000",
    EXECUTOR_LEASE_MS: "1500",
    EXECUTOR_POLL_MS: "50",
  });
  children.push(c);
  return c;
}

it("kill -9 during a step; the restarted service finishes the run, every step executed and billed once", async () => {
  const deps = { db: tdb.db, clock: systemClock, logger: silentLogger, kek: Buffer.from(TEST_SECRETS_KEY, "hex") };
  const acct = await createAccount(deps, { name: "kill", tier: "enterprise", credits: 1000 });
  const machineId = crypto.randomUUID();
  const handle = await new MockMachineProvider().provision({ machineId, displayName: "kill" });
  await tdb.db.machine.create({
    data: {
      id: machineId,
      accountId: acct.account_id,
      mode: "live",
      kind: "managed",
      displayName: "kill",
      status: "running",
      provider: "mock",
      handle: handle as object,
    },
  });
  // seven slow clicks, then "done"
  for (let i = 0; i < 7; i++)
    standin.enqueue(
      openaiReplies.delay(1500, openaiReplies.calls([{ type: "click", button: "left", x: 100 + 40 * i, y: 200 }])),
    );
  for (let i = 0; i < 3; i++) standin.enqueue(openaiReplies.text("The task is complete."));

  const a = service();
  const urlA = await a.url();
  const created = await call(urlA, "POST", "/v1/runs", {
    key: acct.live_key,
    body: { machine_id: machineId, task: "click through the wizard" },
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;

  // the third engine call is under way: steps 1 and 2 are committed, step 3 holds its reservation
  await waitFor(
    "the third engine call",
    async () => standin.requests.length,
    (n) => n >= 3,
    30_000,
  );
  await new Promise((r) => setTimeout(r, 300));
  await kill9(a);
  const mid = await tdb.db.run.findUniqueOrThrow({ where: { id } });
  expect(mid).toMatchObject({ status: "running", stepCount: 2, creditsCharged: 10 });
  const held = await tdb.db.reservation.findMany({ where: { accountId: acct.account_id, status: "reserved" } });
  expect(held.map((h) => h.requestId)).toEqual([`run:${id}:step:3`]);

  const b = service();
  const urlB = await b.url();
  const done = await waitFor(
    "the run to finish",
    async () => (await call(urlB, "GET", `/v1/runs/${id}`, { key: acct.live_key })).body,
    (r) => ["succeeded", "failed", "cancelled", "timed_out"].includes(r.status),
    60_000,
  );
  expect(done.status).toBe("succeeded");
  const n = done.step_count as number;
  // the answer taken by the killed process's engine call was lost with it: six clicks and the done step,
  // one engine call more than steps
  expect(n).toBe(7);
  expect(standin.requests.length).toBe(n + 1);

  // every step executed once ...
  const steps = await tdb.db.runStep.findMany({ where: { runId: id }, orderBy: { step: "asc" } });
  expect(steps.map((s) => [s.step, s.phase])).toEqual(Array.from({ length: n }, (_, i) => [i + 1, "committed"]));
  expect(
    steps
      .filter((s) => s.actions && (s.actions as any[])[0]?.action_type === "click")
      .every((s) => s.execAttempts === 1),
  ).toBe(true);
  // ... and billed once
  expect(done.usage.credits_charged).toBe(5 * n);
  // the last step's hold is captured right after the commit that made the run terminal: wait for it
  // (its credits left the balance when they were reserved, so the balance is already final)
  for (let i = 0; i < 50; i++) {
    if ((await tdb.db.reservation.count({ where: { accountId: acct.account_id, status: "reserved" } })) === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const captured = await tdb.db.reservation.findMany({ where: { accountId: acct.account_id, status: "captured" } });
  expect(captured.map((h) => h.requestId).sort()).toEqual(
    Array.from({ length: n }, (_, i) => `run:${id}:step:${i + 1}`).sort(),
  );
  expect(await tdb.db.reservation.count({ where: { accountId: acct.account_id, status: "reserved" } })).toBe(0);
  const balance = (await tdb.db.account.findUniqueOrThrow({ where: { id: acct.account_id } })).balanceCredits;
  expect(balance).toBe(1000 - 5 * n);
  expect(await ledgerSum(deps, acct.account_id)).toBe(balance);
  // the event log is gap-free and holds each step once
  const events = await tdb.db.runEvent.findMany({ where: { runId: id }, orderBy: { seq: "asc" } });
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.event === "step").map((e) => (e.data as any).step)).toEqual(
    Array.from({ length: n }, (_, i) => i + 1),
  );
  expect(events.filter((e) => e.event === "billing").map((e) => (e.data as any).step)).toEqual(
    Array.from({ length: n }, (_, i) => i + 1),
  );
  expect(events.filter((e) => e.event === "terminal")).toHaveLength(1);

  await stopChild(b.child, "SIGTERM");
  expect(b.child.exitCode).toBe(0);
}, 120_000);
