// Secrets never reach the logs (issue 5 rules): the service runs as its own process at LOG_LEVEL=debug; a
// live BYOK run with a webhook_url goes from create to a delivered callback; the process output holds
// neither the provider key, nor the run's webhook secret, nor the API key.
import { createAccount } from "@cua/core/accounts/create-account";
import { silentLogger, systemClock } from "@cua/core/deps";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { MockMachineProvider } from "@cua/machines/mock-provider";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type OpenAIStandin,
  openaiReplies,
  startOpenAIStandin,
} from "../../../packages/engines/test/providers/standins/openai-standin.ts";
import { call, spawnService, stopChild, TEST_SECRETS_KEY } from "./helpers.ts";
import { callbackReceiver, waitFor } from "./runs-helpers.ts";

const BYOK_KEY = "sk-byok-secret-logs-0123456789abcdef";
let tdb: TestDatabase;
let standin: OpenAIStandin;
let svc: ReturnType<typeof spawnService> | null = null;

beforeAll(async () => {
  tdb = await createTestDatabase();
  standin = await startOpenAIStandin({ apiKey: BYOK_KEY });
});
afterAll(async () => {
  if (svc) await stopChild(svc.child, "SIGTERM");
  await standin?.close();
  await tdb?.drop();
});

it("a BYOK run with callbacks leaves no key or secret in the service's debug logs", async () => {
  const deps = { db: tdb.db, clock: systemClock, logger: silentLogger, kek: Buffer.from(TEST_SECRETS_KEY, "hex") };
  const acct = await createAccount(deps, { name: "logs", tier: "enterprise", credits: 100 });
  const machineId = crypto.randomUUID();
  const handle = await new MockMachineProvider().provision({ machineId, displayName: "logs" });
  await tdb.db.machine.create({
    data: {
      id: machineId,
      accountId: acct.account_id,
      mode: "live",
      kind: "managed",
      displayName: "logs",
      status: "running",
      provider: "mock",
      handle: handle as object,
    },
  });
  const rx = await callbackReceiver();
  svc = spawnService({
    DATABASE_URL: tdb.url,
    SECRETS_KEY: TEST_SECRETS_KEY,
    DATA_DIR: `/tmp/cua-logs-${process.pid}`,
    LOG_LEVEL: "debug",
    ALLOW_INSECURE_CALLBACKS: "1",
    OPENAI_BASE_URL: `${standin.url}/v1`,
    PROVIDER_MAX_RETRIES: "0",
    MACHINE_PROVIDER: "none",
    MACHINE_METER_INTERVAL_MS: "3600000",
  });
  const url = await svc.url();
  try {
    standin.enqueue(openaiReplies.calls([{ type: "keypress", keys: ["TAB"] }]));
    standin.enqueue(openaiReplies.text("Done."));
    const r = await call(url, "POST", "/v1/runs", {
      key: acct.live_key,
      body: { machine_id: machineId, task: "press tab", webhook_url: rx.url },
      headers: { "X-LLM-Provider": "openai", "X-LLM-Api-Key": BYOK_KEY, "Idempotency-Key": "logs-1" },
    });
    expect(r.status).toBe(201);
    const secret = r.body.webhook_secret as string;
    rx.secrets.set(r.body.id, secret);
    await waitFor(
      "the callback",
      async () => rx.received.filter((x) => x.json?.event === "run.succeeded"),
      (l) => l.length === 1,
      30_000,
    );
    expect(rx.received[0]!.signatureValid).toBe(true);
    await call(url, "GET", `/v1/runs/${r.body.id}`, { key: acct.live_key });
    const out = svc.output();
    expect(out.length).toBeGreaterThan(0);
    expect(out).toContain(r.body.id); // the logs do name the run
    expect(out).not.toContain(BYOK_KEY);
    expect(out).not.toContain(secret);
    expect(out).not.toContain(secret.slice(6));
    expect(out).not.toContain(acct.live_key);
  } finally {
    await rx.close();
  }
}, 90_000);
