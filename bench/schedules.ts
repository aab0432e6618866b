// Issue 14 benchmark: schedules on the embedded executor (the API in this process, PostgreSQL).
//   npm run bench -- schedules            (or npx tsx bench/schedules.ts; SCHEDULES_BENCH_N=1000 by default)
// 1. Fire accuracy: N schedules due in the same minute (test mode, one mock machine); each fire is claimed by
//    its durable timer and starts a sandbox run. Prints the lag actual fire - scheduled slot, p50/p99/max, and
//    how long the whole minute's fires took. The schedules are written straight into the table (a test key
//    holds 10 through the API) and armed through the same port the API uses.
// 2. Webhook fires accepted per second: signed deliveries with distinct bodies, 16 at a time, over 10 webhook
//    triggers (600 per minute each), for 10 seconds; each accepted fire starts a run.
import { createHmac } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAccount } from "@cua/core/accounts/create-account";
import { createTestDatabase, prepareTemplate } from "@cua/db/testing";
import { createApp } from "../apps/api/src/app.ts";
import { loadEnv } from "../apps/api/src/env.ts";
import { percentile } from "./lib.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 50), p99: percentile(s, 99), max: s.at(-1) ?? 0 };
};

async function json(url: string, method: string, key: string, body?: unknown): Promise<any> {
  const r = await fetch(url, {
    method,
    headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const t = await r.json();
  if (r.status >= 300) throw new Error(`${method} ${url}: ${r.status} ${JSON.stringify(t)}`);
  return t;
}

export async function benchSchedules(): Promise<void> {
  const N = Number(process.env.SCHEDULES_BENCH_N ?? 1000);
  await prepareTemplate();
  const db = await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cua-bench-sched-"));
  const app = await createApp(
    loadEnv({
      DATABASE_URL: db.url,
      PORT: "0",
      LOG_LEVEL: "error",
      SECRETS_KEY: "01".repeat(32),
      RATE_LIMIT_SCALE: "1000",
      DATA_DIR: dataDir,
      MACHINE_PROVIDER: "none",
    }),
  );
  await app.server.listen({ port: 0, host: "127.0.0.1" });
  const addr = app.server.server.address();
  const base = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  try {
    const acct = await createAccount(app.deps, { name: "bench", tier: "enterprise", credits: 0 });
    const key = acct.test_key;
    const machine = (
      await json(`${base}/v1/machines`, "POST", keyOrThrow(key), { display_name: "b", os_type: "linux" })
    ).machine.id as string;
    const apiKey = await app.deps.db.apiKey.findFirstOrThrow({ where: { accountId: acct.account_id, mode: "test" } });

    // --- 0. fire lag while run steps hold every work slot (issue 16: timers have a lane of their own) ---
    {
      // armed first (their timers are sleeping when the runs start), due once every work slot is in a step
      const busy = Number(process.env.SCHEDULES_BENCH_BUSY_RUNS ?? 24); // more than EXECUTOR_CONCURRENCY (16)
      const at = new Date(Math.ceil((Date.now() + 9000) / 1000) * 1000);
      const few = Array.from({ length: 20 }, (_, i) => ({
        id: `sch_test_${(0xb000 + i).toString(16).padStart(24, "0")}`,
        accountId: acct.account_id,
        mode: "test" as const,
        apiKeyId: apiKey.id,
        name: `busy ${i}`,
        machineId: machine,
        taskPrompt: "bench #steps=1",
        frequency: "custom",
        cron: "0 0 1 1 *",
        nextRunAt: at,
      }));
      await app.deps.db.schedule.createMany({ data: few });
      await Promise.all(few.map((r) => app.deps.schedules.jobs.armed(r.id, 0)));
      await sleep(3000);
      for (let i = 0; i < busy; i++)
        await json(`${base}/v1/runs`, "POST", keyOrThrow(key), {
          machine_id: machine,
          task: "busy #steps=3 #slow=4000",
        });
      await sleep(Math.max(0, at.getTime() - Date.now() - 100));
      const sleeping = await app.deps.db.executorQueueItem.count({ where: { kind: "sleep", runAt: at } });
      let n = 0;
      for (let waited = 0; n < few.length && waited < 120_000; waited += 200) {
        n = await app.deps.db.scheduleRun.count({ where: { scheduleId: { in: few.map((f) => f.id) } } });
        if (n < few.length) await sleep(200);
      }
      const got = await app.deps.db.scheduleRun.findMany({
        where: { scheduleId: { in: few.map((f) => f.id) } },
        select: { executedAt: true },
      });
      const l = stats(got.map((e) => e.executedAt.getTime() - at.getTime()));
      console.log(
        `schedules: 20 fires due while ${busy} runs in 4 s engine steps hold the work slots: ${sleeping}/20 timers asleep at the slot, ${l.n}/20 fired, lag p50 ${l.p50} ms, p99 ${l.p99} ms, max ${l.max} ms`,
      );
      await app.deps.db.schedule.updateMany({
        where: { id: { in: few.map((f) => f.id) } },
        data: { status: "paused", nextRunAt: null, generation: { increment: 1 } },
      });
      if (process.env.SCHEDULES_BENCH_N === "0") return;
    }

    // --- 1. fire accuracy ---------------------------------------------------------------------------
    const now = Date.now();
    const slot = new Date(Math.ceil((now + 30_000) / 60_000) * 60_000); // the next minute at least 30 s away
    const rows = Array.from({ length: N }, (_, i) => ({
      id: `sch_test_${i.toString(16).padStart(24, "0")}`,
      accountId: acct.account_id,
      mode: "test" as const,
      apiKeyId: apiKey.id,
      name: `bench ${i}`,
      machineId: machine,
      taskPrompt: "bench #steps=1",
      frequency: "custom",
      cron: "* * * * *",
      nextRunAt: slot,
    }));
    await app.deps.db.schedule.createMany({ data: rows });
    const armStart = Date.now();
    // 10 at a time: arming is setup, not measured (100 at once overran the pool's 3 s connection wait on a
    // loaded host)
    for (let i = 0; i < rows.length; i += 10)
      await Promise.all(rows.slice(i, i + 10).map((r) => app.deps.schedules.jobs.armed(r.id, 0)));
    console.log(`schedules: ${N} armed in ${Date.now() - armStart} ms; due ${slot.toISOString()}`);
    await sleep(Math.max(0, slot.getTime() - Date.now()));
    let fired = 0;
    for (let waited = 0; fired < N && waited < 10 * 60_000; waited += 1000) {
      fired = await app.deps.db.scheduleRun.count({ where: { trigger: "cron", scheduledFor: slot } });
      if (fired < N) await sleep(1000);
    }
    const entries = await app.deps.db.scheduleRun.findMany({
      where: { trigger: "cron", scheduledFor: slot },
      select: { executedAt: true },
    });
    const lag = stats(entries.map((e) => e.executedAt.getTime() - slot.getTime()));
    console.log(
      `schedules: fire accuracy, ${lag.n}/${N} fired: lag p50 ${lag.p50} ms, p99 ${lag.p99} ms, max ${lag.max} ms (actual fire - scheduled minute)`,
    );
    if (N === 1000)
      console.log(
        `schedules: baseline (before timers had a lane of their own, docs/benchmarks.md): p50 8.9 s, p99 16.2 s`,
      );
    // stop them: the next minute would fire the same N again
    await app.deps.db.schedule.updateMany({
      where: { accountId: acct.account_id },
      data: { status: "paused", nextRunAt: null, generation: { increment: 1 } },
    });

    // --- 2. webhook fires per second ----------------------------------------------------------------
    const hooks: { url: string; secret: string }[] = [];
    const live = await app.deps.db.schedule.findMany({ where: { accountId: acct.account_id }, take: 10 });
    for (const s of live) {
      await app.deps.db.schedule.update({ where: { id: s.id }, data: { status: "active" } });
      const t = await json(`${base}/v1/schedules/${s.id}/triggers`, "POST", key, {
        kind: "webhook",
        rate_limit_per_minute: 600,
      });
      hooks.push({ url: t.webhook_url, secret: t.webhook_secret });
    }
    const until = Date.now() + 10_000;
    let ok = 0;
    let other = 0;
    let n = 0;
    const worker = async () => {
      while (Date.now() < until) {
        const h = hooks[n % hooks.length]!;
        const body = JSON.stringify({ n: n++ });
        const t = Math.floor(Date.now() / 1000);
        const v1 = createHmac("sha256", h.secret).update(`${t}.`).update(body).digest("hex");
        const r = await fetch(h.url, {
          method: "POST",
          headers: { "content-type": "application/json", "service-signature": `t=${t},v1=${v1}` },
          body,
        });
        await r.arrayBuffer();
        if (r.status === 200) ok++;
        else other++;
      }
    };
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 16 }, worker));
    const secs = (Date.now() - t0) / 1000;
    console.log(
      `schedules: webhook fires accepted ${(ok / secs).toFixed(1)}/s (${ok} in ${secs.toFixed(1)} s, 16 concurrent, ${other} refused)`,
    );
  } finally {
    await app.close();
    await db.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

function keyOrThrow(k: string | undefined): string {
  if (!k) throw new Error("no key");
  return k;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchSchedules();
