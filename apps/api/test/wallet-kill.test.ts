import { makePng } from "@cua/base/images/screenshot";
import { createAccount } from "@cua/core/accounts/create-account";
import { silentLogger, systemClock } from "@cua/core/deps";
import { ledgerSum } from "@cua/core/wallet/wallet";
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type OpenAIStandin,
  openaiReplies,
  startOpenAIStandin,
} from "../../../packages/engines/test/providers/standins/openai-standin.ts";
import { call, spawnService, stopChild, TEST_SECRETS_KEY } from "./helpers.ts";
import { waitFor } from "./runs-helpers.ts";

const MANAGED_KEY = "sk-managed-wallet-kill-0123456789";
const SHOT = makePng(320, 200, (x, y) => [(x * 5) % 256, (y * 3) % 256, 90, 255]).toString("base64");
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

function service() {
  const c = spawnService({
    DATABASE_URL: tdb.url,
    SECRETS_KEY: TEST_SECRETS_KEY,
    DATA_DIR: `/tmp/cua-wallet-kill-${process.pid}`,
    MANAGED_ENGINE: "openai",
    MANAGED_ENGINE_API_KEY: MANAGED_KEY,
    MANAGED_ENGINE_BASE_URL: `${standin.url}/v1`,
    MANAGED_ENGINE_MODEL: "gpt-5.4",
    PROVIDER_MAX_RETRIES: "0",
    MACHINE_PROVIDER: "none",
    MACHINE_METER_INTERVAL_MS: "3600000",
    // a short hold TTL so that the restarted process's sweeper may settle the dead one's holds at once
    WALLET_HOLD_TTL_SECONDS: "2",
    WALLET_SWEEP_INTERVAL_MS: "500",
    IDEMPOTENCY_PENDING_WINDOW_SECONDS: "1",
  });
  children.push(c);
  return c;
}

it("kill -9 with 8 holds in flight; the next start's sweeper releases them and the ledger balances", async () => {
  const deps = { db: tdb.db, clock: systemClock, logger: silentLogger, kek: Buffer.from(TEST_SECRETS_KEY, "hex") };
  const acct = await createAccount(deps, { name: "wallet-kill", tier: "enterprise", credits: 100 });
  const held = () => tdb.db.reservation.count({ where: { accountId: acct.account_id, status: "reserved" } });
  const balance = async () =>
    (await tdb.db.account.findUniqueOrThrow({ where: { id: acct.account_id } })).balanceCredits;
  for (let i = 0; i < 8; i++)
    standin.enqueue(openaiReplies.delay(60_000, openaiReplies.calls([{ type: "click", button: "left", x: 1, y: 2 }])));

  const a = service();
  const urlA = await a.url();
  const inFlight = Array.from({ length: 8 }, (_, i) =>
    call(urlA, "POST", "/v1/predict", {
      key: acct.live_key,
      body: { screenshot: SHOT, instruction: "click" },
      headers: { "Idempotency-Key": `killed-${i}` },
    }).catch((e: Error) => e),
  );
  await waitFor("8 holds", held, (n) => n === 8, 30_000);
  await waitFor(
    "8 engine calls",
    async () => standin.requests.length,
    (n) => n === 8,
    30_000,
  );

  // kill -9 of the server process itself (spawnService runs it as node --import tsx): no shutdown hook runs
  a.child.kill("SIGKILL");
  const answers = await Promise.all(inFlight);
  expect(answers.every((r) => r instanceof Error)).toBe(true); // the connections died unanswered
  expect(await held()).toBe(8);
  expect(await balance()).toBe(60); // 40 credits held by a process that no longer exists

  standin.reset();
  for (let i = 0; i < 2; i++) standin.enqueue(openaiReplies.calls([{ type: "click", button: "left", x: 1, y: 2 }]));
  const b = service();
  const urlB = await b.url();
  await waitFor("the sweeper to settle the dead process's holds", held, (n) => n === 0, 30_000);
  expect(await balance()).toBe(100);
  expect(await ledgerSum(deps, acct.account_id)).toBe(100);
  const releases = await tdb.db.walletEntry.count({ where: { accountId: acct.account_id, kind: "release" } });
  expect(releases).toBe(8); // each hold settled once, whatever the number of sweeps

  // the client retries a killed call with its Idempotency-Key (503/connection loss -> same key): once, 5 credits
  await new Promise((r) => setTimeout(r, 1100)); // the key's pending window (1 s here) lapses
  const retry = await call(urlB, "POST", "/v1/predict", {
    key: acct.live_key,
    body: { screenshot: SHOT, instruction: "click" },
    headers: { "Idempotency-Key": "killed-3" },
  });
  expect(retry.status).toBe(200);
  expect(retry.headers.get("x-credits-charged")).toBe("5");
  const again = await call(urlB, "POST", "/v1/predict", {
    key: acct.live_key,
    body: { screenshot: SHOT, instruction: "click" },
    headers: { "Idempotency-Key": "killed-3" },
  });
  expect(again.headers.get("x-service-idempotent-replay")).toBe("true");
  expect(await balance()).toBe(95);
  expect(await ledgerSum(deps, acct.account_id)).toBe(95);

  await stopChild(b.child, "SIGTERM");
  expect(b.child.exitCode).toBe(0);
}, 120_000);
