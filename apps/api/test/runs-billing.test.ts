// Billing of live runs (SPEC.md "Runs": 5 credits per step for v3/v4/v5, 8 for v1, charged after each
// step completes, idempotent per step; "wallet cannot pay a step" -> failed WALLET_EXHAUSTED; DECISIONS
// "Runs": budget_cents -> BUDGET_EXCEEDED; BYOK bills 0 and its key snapshot is scrubbed at the terminal
// transition). Live runs use the managed engine (the built-in local engine) on a live-mode machine served
// by the mock provider, so credits are observable without a real desktop; BYOK uses the OpenAI stand-in.
import { ledgerSum } from "@cua/core/wallet/wallet";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type OpenAIStandin,
  openaiReplies,
  startOpenAIStandin,
} from "../../../packages/engines/test/providers/standins/openai-standin.ts";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { createRun, liveMockMachine, readSse, sleep, waitFor, waitRun } from "./runs-helpers.ts";

const BYOK_KEY = "sk-byok-runs-0123456789abcdefXYZ";
let s: TestServer;
let byok: OpenAIStandin;

beforeAll(async () => {
  byok = await startOpenAIStandin({ apiKey: BYOK_KEY });
  s = await startTestServer({
    OPENAI_BASE_URL: `${byok.url}/v1`,
    PROVIDER_MAX_RETRIES: "0",
    PROVIDER_TIMEOUT_MS: "5000",
    MACHINE_PROVIDER: "none",
    MACHINE_METER_INTERVAL_MS: "3600000", // keep machine metering out of these wallets
  });
});
afterAll(async () => {
  await s.stop();
  await byok.close();
});
beforeEach(() => byok.reset());

async function account(credits: number) {
  const a = await s.account({ credits });
  return { ...a, machine: await liveMockMachine(s, a.account_id) };
}
const balance = async (accountId: string) =>
  (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: accountId } })).balanceCredits;
const holds = (accountId: string, status: string) =>
  s.app.deps.db.reservation.findMany({
    where: { accountId, status, requestId: { startsWith: "run:" } },
    orderBy: { createdAt: "asc" },
  });

/**
 * The last step's hold is captured right after the commit that made the run terminal (its credits left the
 * balance when they were reserved, so the balance is final already): waits until no hold is left reserved.
 */
const lastCapture = (accountId: string) =>
  waitFor(
    "the last step's capture",
    () => holds(accountId, "reserved"),
    (h) => h.length === 0,
    10_000,
  );

describe("managed engine: billing per completed step", () => {
  it("5 credits per step (v5), captured once per step, frames and usage agree with the wallet", async () => {
    const a = await account(100);
    const r = await createRun(s, a.live_key, { machine_id: a.machine, task: "press tab; press enter" });
    expect(r.status).toBe(201);
    expect(r.headers.get("x-service-test-mode")).toBeNull();
    expect(r.body).toMatchObject({
      id: expect.stringMatching(/^run_[0-9a-f]{24}$/),
      llm: { provider: "managed", model: "svc-cua-local", billed_to: "platform" },
    });
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    // tab, enter, then done: three completed steps
    expect(done).toMatchObject({ status: "succeeded", step_count: 3, usage: { credits_charged: 15, cost_cents: 15 } });
    expect(await balance(a.account_id)).toBe(85);
    expect(await ledgerSum(s.app.deps, a.account_id)).toBe(85);
    await lastCapture(a.account_id);
    const captured = await holds(a.account_id, "captured");
    expect(captured.map((h) => [h.requestId, h.amount])).toEqual(
      [1, 2, 3].map((n) => [`run:${r.body.id}:step:${n}`, 5]),
    );
    // GET /v1/usage counts the steps' credits (they come from no request of the caller's)
    const u = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
    expect(u.body.by_endpoint).toContainEqual({ endpoint: "POST /v1/runs (step)", requests: 0, credits_charged: 15 });
    expect(u.body.credits_charged).toBe(15);
    expect(await holds(a.account_id, "reserved")).toEqual([]);
    const billing = (await readSse(`${s.url}/v1/runs/${r.body.id}/events`, a.live_key)).frames.filter(
      (f) => f.event === "billing",
    );
    expect(billing.map((f) => [f.data.step, f.data.credits_charged, f.data.total_credits_charged])).toEqual([
      [1, 5, 5],
      [2, 5, 10],
      [3, 5, 15],
    ]);
  });

  it("8 credits per step with cua_version v1", async () => {
    const a = await account(100);
    const r = await createRun(s, a.live_key, { machine_id: a.machine, task: "press tab", cua_version: "v1" });
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({ status: "succeeded", step_count: 2, usage: { credits_charged: 16 } });
    expect(await balance(a.account_id)).toBe(84);
  });

  it("creating a run needs one step's price in the wallet: 402 INSUFFICIENT_CREDITS with required and balance", async () => {
    const a = await account(4);
    const e = envelope(
      await createRun(s, a.live_key, { machine_id: a.machine, task: "press tab" }),
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(e).toMatchObject({ required: 5, balance: 4, type: "billing_error" });
    const b = await account(7);
    expect(
      envelope(
        await createRun(s, b.live_key, { machine_id: b.machine, task: "press tab", cua_version: "v1" }),
        402,
        "INSUFFICIENT_CREDITS",
      ),
    ).toMatchObject({ required: 8, balance: 7 });
    expect(await s.app.deps.db.run.count({ where: { accountId: { in: [a.account_id, b.account_id] } } })).toBe(0);
    // test keys bill nothing: no gate
    expect((await call(s.url, "GET", "/v1/runs", { key: a.test_key })).status).toBe(200);
  });

  it("a wallet that cannot pay the next step fails the run with WALLET_EXHAUSTED; nothing is overdrawn", async () => {
    const a = await account(12);
    const r = await createRun(s, a.live_key, {
      machine_id: a.machine,
      task: "press tab; press tab; press tab; press tab",
    });
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({
      status: "failed",
      step_count: 2,
      usage: { credits_charged: 10 },
      error: { code: "WALLET_EXHAUSTED", required: 5, balance: 2 },
    });
    expect(await balance(a.account_id)).toBe(2);
    expect(await ledgerSum(s.app.deps, a.account_id)).toBe(2);
    await lastCapture(a.account_id);
  });

  it("budget_cents: the step that would push cost_cents past the budget is not run (BUDGET_EXCEEDED)", async () => {
    const a = await account(100);
    const r = await createRun(s, a.live_key, {
      machine_id: a.machine,
      task: "press tab; press tab; press tab; press tab",
      budget_cents: 12,
    });
    expect(r.body.budget_cents).toBe(12);
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({
      status: "failed",
      step_count: 2,
      usage: { credits_charged: 10, cost_cents: 10 },
      error: { code: "BUDGET_EXCEEDED" },
    });
    expect(await balance(a.account_id)).toBe(90);
  });

  it("a live run on a stopped machine is 409 INVALID_STATE at create; a run whose machine stops fails with MACHINE_NOT_RUNNING", async () => {
    const a = await s.account({ credits: 100 });
    const stopped = await liveMockMachine(s, a.account_id, "stopped");
    expect(
      envelope(await createRun(s, a.live_key, { machine_id: stopped, task: "press tab" }), 409, "INVALID_STATE")
        .current_state,
    ).toBe("stopped");
    const m = await liveMockMachine(s, a.account_id);
    const r = await createRun(s, a.live_key, {
      machine_id: m,
      task: "wait 1 second; wait 1 second; wait 1 second; wait 1 second",
    });
    await waitFor(
      "a step",
      () => call(s.url, "GET", `/v1/runs/${r.body.id}`, { key: a.live_key }),
      (x) => x.body.step_count >= 1,
    );
    await s.app.deps.db.machine.update({ where: { id: m }, data: { status: "stopped" } });
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({ status: "failed", error: { code: "MACHINE_NOT_RUNNING", current_state: "stopped" } });
    expect(done.usage.credits_charged).toBe(done.step_count * 5);
    expect(await balance(a.account_id)).toBe(100 - done.step_count * 5);
  });
});

describe("BYOK: the provider bills the caller; the key snapshot lives only while the run does", () => {
  it("a stored key: 0 platform credits, the provider sees the caller's key, the snapshot is encrypted and scrubbed at the end", async () => {
    const a = await account(100);
    expect(
      (await call(s.url, "PUT", "/v1/llm/keys/openai", { key: a.live_key, body: { api_key: BYOK_KEY } })).status,
    ).toBe(200);
    byok.enqueue(openaiReplies.delay(800, openaiReplies.calls([{ type: "keypress", keys: ["TAB"] }])));
    byok.enqueue(openaiReplies.text("The task is complete."));
    const r = await createRun(
      s,
      a.live_key,
      { machine_id: a.machine, task: "press tab" },
      { "X-LLM-Provider": "openai" },
    );
    expect(r.status).toBe(201);
    expect(r.body.llm).toMatchObject({ provider: "openai", billed_to: "provider" });
    const row = await s.app.deps.db.run.findUniqueOrThrow({ where: { id: r.body.id } });
    expect(row.llmKeySealed).not.toBeNull();
    expect(Buffer.from(row.llmKeySealed!).toString("latin1")).not.toContain(BYOK_KEY);
    // deleting the stored key does not revoke the run's snapshot
    expect((await call(s.url, "DELETE", "/v1/llm/keys/openai", { key: a.live_key })).status).toBe(200);
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({ status: "succeeded", step_count: 2, usage: { credits_charged: 0, cost_cents: 0 } });
    expect(byok.requests.length).toBe(2);
    expect(byok.requests.every((q) => q.headers.authorization === `Bearer ${BYOK_KEY}`)).toBe(true);
    expect(await balance(a.account_id)).toBe(100);
    expect((await s.app.deps.db.run.findUniqueOrThrow({ where: { id: r.body.id } })).llmKeySealed).toBeNull();
    const stream = await readSse(`${s.url}/v1/runs/${r.body.id}/events`, a.live_key);
    expect(JSON.stringify(stream.frames)).not.toContain(BYOK_KEY);
    expect(JSON.stringify(done)).not.toContain(BYOK_KEY);
  });

  it("X-LLM-Api-Key on a live key works without a stored key; no key at all is 422 LLM_KEY_NOT_CONFIGURED", async () => {
    const a = await account(100);
    envelope(
      await createRun(s, a.live_key, { machine_id: a.machine, task: "press tab" }, { "X-LLM-Provider": "openai" }),
      422,
      "LLM_KEY_NOT_CONFIGURED",
    );
    envelope(
      await createRun(s, a.live_key, { machine_id: a.machine, task: "press tab" }, { "X-LLM-Provider": "mistral" }),
      422,
      "LLM_PROVIDER_UNSUPPORTED",
    );
    byok.enqueue(openaiReplies.text("Done."));
    const r = await createRun(
      s,
      a.live_key,
      { machine_id: a.machine, task: "press tab" },
      { "X-LLM-Provider": "openai", "X-LLM-Api-Key": BYOK_KEY },
    );
    expect(r.status).toBe(201);
    expect(r.text).not.toContain(BYOK_KEY);
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({ status: "succeeded", usage: { credits_charged: 0 } });
    expect((await s.app.deps.db.run.findUniqueOrThrow({ where: { id: r.body.id } })).llmKeySealed).toBeNull();
  });

  it("a provider safety check pauses the run for a human; a resume continues it", async () => {
    const a = await account(100);
    byok.enqueue(
      openaiReplies.safety(
        [{ type: "keypress", keys: ["ENTER"] }],
        [{ id: "sc_1", code: "malicious_instructions", message: "Confirm before submitting." }],
      ),
    );
    byok.enqueue(openaiReplies.text("Done."));
    const r = await createRun(
      s,
      a.live_key,
      { machine_id: a.machine, task: "submit the form" },
      { "X-LLM-Provider": "openai", "X-LLM-Api-Key": BYOK_KEY },
    );
    const paused = await waitRun(s, a.live_key, r.body.id, ["awaiting_human", "failed", "succeeded"]);
    expect(paused).toMatchObject({
      status: "awaiting_human",
      awaiting_human_reason: "safety_check: Confirm before submitting.",
      step_count: 0,
    });
    expect((await s.app.deps.db.run.findUniqueOrThrow({ where: { id: r.body.id } })).llmKeySealed).not.toBeNull();
    await call(s.url, "POST", `/v1/runs/${r.body.id}/resume`, { key: a.live_key, body: { note: "confirmed" } });
    const done = await waitRun(s, a.live_key, r.body.id, ["succeeded", "failed"]);
    expect(done).toMatchObject({ status: "succeeded", step_count: 1 });
    await sleep(10);
  });
});
