// Issue 10 benchmark: the wallet under load. Bursts of concurrent billed POST /v1/predict (live key, the
// managed engine played by the OpenAI stand-in answering after 50 ms) against the API as its own process,
// with its database pool at the default 10 connections and at 3. Prints the answers per status and the
// ledger check once the hold sweeper has run:
//   lost credits = (credits that left the wallet) - (sum of X-Credits-Charged of the 200 answers)
// which must be 0, with no hold left `reserved` and the balance equal to the ledger's sum.
//   npm run bench -- wallet
import { makePng } from "@cua/base/images/screenshot";
import { openaiReplies, startOpenAIStandin } from "../packages/engines/test/providers/standins/openai-standin.ts";
import { startBenchService } from "./lib.ts";

const MANAGED_KEY = "sk-bench-wallet-0123456789abcdef";
const SHOT = makePng(320, 200, (x, y) => [(x * 7) % 256, (y * 3) % 256, 120, 255]).toString("base64");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function burst(opts: { pool: number; calls: number; credits: number }) {
  const standin = await startOpenAIStandin({ apiKey: MANAGED_KEY });
  const svc = await startBenchService({
    credits: opts.credits,
    ready: /API listening on (http:\/\/\S+)/,
    env: {
      MANAGED_ENGINE: "openai",
      MANAGED_ENGINE_API_KEY: MANAGED_KEY,
      MANAGED_ENGINE_BASE_URL: `${standin.url}/v1`,
      MANAGED_ENGINE_MODEL: "gpt-5.4",
      PROVIDER_MAX_RETRIES: "0",
      DATABASE_POOL_SIZE: String(opts.pool),
      WALLET_HOLD_TTL_SECONDS: "3",
      WALLET_SWEEP_INTERVAL_MS: "1000",
    },
  });
  const db = svc.db.db;
  const accountId = svc.account.account_id;
  try {
    for (let i = 0; i < opts.calls; i++)
      standin.enqueue(openaiReplies.delay(50, openaiReplies.calls([{ type: "click", button: "left", x: 1, y: 2 }])));
    const t0 = performance.now();
    const answers = await Promise.all(
      Array.from({ length: opts.calls }, async (_, i) => {
        const r = await fetch(`${svc.url}/v1/predict`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-api-key": svc.account.live_key,
            "idempotency-key": `bench-${i}`,
          },
          body: JSON.stringify({ screenshot: SHOT, instruction: "click the button" }),
        });
        const text = await r.text();
        let code = "";
        try {
          code = JSON.parse(text)?.error?.code ?? "";
        } catch {}
        return { status: r.status, code, charged: Number(r.headers.get("x-credits-charged") ?? 0) };
      }),
    );
    const wall = performance.now() - t0;
    const by = new Map<string, number>();
    for (const a of answers)
      by.set(`${a.status}${a.code ? ` ${a.code}` : ""}`, (by.get(`${a.status}${a.code ? ` ${a.code}` : ""}`) ?? 0) + 1);
    // let the sweeper settle any hold an unconfirmed settlement left (hold TTL 3 s, sweep every 1 s)
    let reserved = 0;
    for (let i = 0; i < 40; i++) {
      reserved = await db.reservation.count({ where: { accountId, status: "reserved" } });
      if (reserved === 0) break;
      await sleep(250);
    }
    const balance = (await db.account.findUniqueOrThrow({ where: { id: accountId } })).balanceCredits;
    const ledger = (await db.walletEntry.aggregate({ where: { accountId }, _sum: { delta: true } }))._sum.delta ?? 0;
    const charged = answers.filter((a) => a.status === 200).reduce((n, a) => n + a.charged, 0);
    console.log(
      `\n== ${opts.calls} concurrent billed POST /v1/predict, database pool ${opts.pool}, wallet ${opts.credits} credits ==`,
    );
    console.log(`answered in ${(wall / 1000).toFixed(2)} s`);
    for (const [k, n] of [...by.entries()].sort()) console.log(`  ${k.padEnd(32)} ${String(n).padStart(5)}`);
    console.log(
      `charged (sum of X-Credits-Charged) ${charged}, left the wallet ${opts.credits - balance}, ledger sum ${ledger}, balance ${balance}`,
    );
    console.log(`holds left reserved: ${reserved}`);
    console.log(`lost credits: ${opts.credits - balance - charged}`);
    const fivehundreds = answers.filter((a) => a.status >= 500 && a.status !== 503).length;
    if (fivehundreds || reserved || opts.credits - balance !== charged || ledger !== balance) process.exitCode = 1;
  } finally {
    await svc.stop();
    await standin.close();
  }
}

export async function benchWallet() {
  await burst({ pool: 10, calls: 200, credits: 5000 });
  await burst({ pool: 10, calls: 400, credits: 5000 });
  await burst({ pool: 3, calls: 400, credits: 1500 });
}
