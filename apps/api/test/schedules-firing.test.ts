// Schedules firing as durable functions (issue 14 "Firing"; SPEC.md "States and transitions / Schedule",
// "Schedules and triggers"; DECISIONS.md "Schedules and triggers"). The service's clock (CoreDeps.clock) is
// the one the embedded executor's durable sleeps read: a test moves it past next_run_at and the timer fires,
// no sleeping for minutes. Test keys: deterministic sandbox runs (#steps=N, #fail) on mock machines.
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { liveMockMachine, sleep, testMachine, waitFor } from "./runs-helpers.ts";

let db: TestDatabase;
let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;
let offsetMs = 0;
// machine metering stays out of the wallets these tests read (the clock jumps)
const ENV = { MACHINE_PROVIDER: "none", MACHINE_METER_INTERVAL_MS: "3600000" };
const serviceNow = () => new Date(Date.now() + offsetMs);

beforeAll(async () => {
  db = await createTestDatabase();
  s = await startTestServer(ENV, db);
  s.app.deps.clock.now = serviceNow;
  acct = await s.account({ tier: "enterprise", credits: 1000 });
  machine = await testMachine(s, acct.test_key);
}, 120_000);
afterAll(async () => {
  await s.stop();
  await db.drop();
});

const create = async (over: Record<string, unknown>) => {
  const r = await call(s.url, "POST", "/v1/schedules", {
    key: acct.test_key,
    body: { name: "job", machine_id: machine, task_prompt: "collect the report #steps=1", ...over },
  });
  if (r.status !== 201) throw new Error(`create: ${r.status} ${r.text}`);
  return r.body;
};
const history = (id: string, q = "") => call(s.url, "GET", `/v1/schedules/${id}/runs${q}`, { key: acct.test_key });
const schedule = async (id: string) => (await call(s.url, "GET", `/v1/schedules/${id}`, { key: acct.test_key })).body;
const settled = (h: { status: string }) => !["queued", "running"].includes(h.status);

describe("run now (SPEC: POST /v1/schedules/{id}/run)", () => {
  it("starts a task run with the task prompt on the schedule's machine and records a history entry", async () => {
    const sc = await create({ frequency: "daily", time: "03:00" });
    const r = await call(s.url, "POST", `/v1/schedules/${sc.id}/run`, { key: acct.test_key });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ object: "schedule.run", schedule_id: sc.id, trigger: "manual", status: "running" });
    expect(r.body.id).toMatch(/^srun_[0-9a-f]{24}$/);
    const run = (await call(s.url, "GET", `/v1/runs/${r.body.run_id}`, { key: acct.test_key })).body;
    expect(run).toMatchObject({ machine_id: machine, task: "collect the report #steps=1" });
    const done = await waitFor(
      "history settled",
      async () => (await history(sc.id)).body.data[0],
      (h) => settled(h),
    );
    expect(done).toMatchObject({ id: r.body.id, status: "completed", credits_charged: 0, error: null });
    expect(done.duration_seconds).toBeGreaterThanOrEqual(0);
    const after = await schedule(sc.id);
    expect(after).toMatchObject({ run_count: 1, consecutive_failures: 0 });
    expect(after.last_run_at).not.toBeNull();
    // one entry, by its id or by the task run's id; filters; bad and unknown ids
    const one = await call(s.url, "GET", `/v1/schedules/${sc.id}/runs/${r.body.run_id}`, { key: acct.test_key });
    expect(one.body.id).toBe(r.body.id);
    expect((await history(sc.id, "?status=completed&trigger=manual")).body.data).toHaveLength(1);
    expect((await history(sc.id, "?trigger=cron")).body.data).toHaveLength(0);
    envelope(await history(sc.id, "?status=done"), 400, "INVALID_STATUS_FILTER");
    envelope(await history(sc.id, "?limit=201"), 400, "INVALID_LIMIT");
    envelope(
      await call(s.url, "GET", `/v1/schedules/${sc.id}/runs/bad!id`, { key: acct.test_key }),
      400,
      "INVALID_RUN_ID",
    );
    envelope(
      await call(s.url, "GET", `/v1/schedules/${sc.id}/runs/srun_000000000000000000000000`, { key: acct.test_key }),
      404,
      "RUN_NOT_FOUND",
    );
    // history omits LLM attribution and credentials
    expect(Object.keys(one.body)).not.toContain("llm");
  });

  it("max_consecutive_failures failed runs in a row pause the schedule with that reason", async () => {
    const sc = await create({ frequency: "daily", task_prompt: "break #fail #steps=1", max_consecutive_failures: 2 });
    for (let i = 1; i <= 2; i++) {
      const r = await call(s.url, "POST", `/v1/schedules/${sc.id}/run`, { key: acct.test_key });
      expect(r.status).toBe(201);
      await waitFor(
        `failure ${i} settled`,
        async () => (await history(sc.id)).body.data[0],
        (h) => h.id === r.body.id && settled(h),
      );
    }
    const h = (await history(sc.id)).body.data;
    expect(h.map((x: { status: string }) => x.status)).toEqual(["failed", "failed"]);
    expect(h[0].error?.code).toBeTruthy();
    expect(await schedule(sc.id)).toMatchObject({
      status: "paused",
      paused_reason: "max_consecutive_failures",
      consecutive_failures: 2,
      next_run_at: null,
    });
  });
});

describe("timers (durable sleep until next_run_at, driven by the service clock)", () => {
  it("a cron schedule fires when its time comes, once, and re-arms for the next slot", async () => {
    const sc = await create({ frequency: "every_15_minutes" });
    const due = Date.parse(sc.next_run_at);
    expect((await history(sc.id)).body.data).toHaveLength(0);
    offsetMs += due - serviceNow().getTime() + 1000;
    const h = await waitFor(
      "cron fire",
      async () => (await history(sc.id)).body.data,
      (d) => d.length > 0 && d[0].run_id !== null,
    );
    expect(h[0]).toMatchObject({ trigger: "cron", scheduled_for: sc.next_run_at });
    expect(h[0].run_id).toMatch(/^run_test_/);
    const after = await schedule(sc.id);
    expect(Date.parse(after.next_run_at)).toBe(due + 15 * 60_000);
    await sleep(1500);
    expect((await history(sc.id)).body.data).toHaveLength(1); // fired once
  });

  it("a one-shot fires at run_at and pauses with one_shot_complete", async () => {
    const at = new Date(Math.ceil((serviceNow().getTime() + 120_000) / 1000) * 1000).toISOString();
    const sc = await create({ run_at: at });
    offsetMs += 121_000;
    const h = await waitFor(
      "one-shot fire",
      async () => (await history(sc.id)).body.data,
      (d) => d.length > 0,
    );
    expect(h[0]).toMatchObject({ trigger: "run_at", scheduled_for: at });
    expect(await schedule(sc.id)).toMatchObject({
      status: "paused",
      paused_reason: "one_shot_complete",
      next_run_at: null,
    });
    // resuming a one-shot whose time passed is refused
    envelope(await call(s.url, "POST", `/v1/schedules/${sc.id}/resume`, { key: acct.test_key }), 409, "INVALID_STATE");
  });

  it("a paused schedule does not fire; PATCH re-arms at the recomputed time", async () => {
    const sc = await create({ frequency: "hourly" });
    await call(s.url, "POST", `/v1/schedules/${sc.id}/pause`, { key: acct.test_key });
    offsetMs += Date.parse(sc.next_run_at) - serviceNow().getTime() + 1000;
    await sleep(1500);
    expect((await history(sc.id)).body.data).toHaveLength(0);
    await call(s.url, "POST", `/v1/schedules/${sc.id}/resume`, { key: acct.test_key });
    const p = await call(s.url, "PATCH", `/v1/schedules/${sc.id}`, {
      key: acct.test_key,
      body: { frequency: "every_15_minutes" },
    });
    offsetMs += Date.parse(p.body.next_run_at) - serviceNow().getTime() + 1000;
    const h = await waitFor(
      "fire after PATCH",
      async () => (await history(sc.id)).body.data,
      (d) => d.length > 0,
    );
    expect(h).toHaveLength(1);
    expect(h[0].scheduled_for).toBe(p.body.next_run_at);
    // the older generations' timers ended, none left sleeping: cancelled by a newer schedule/armed (cancelOn;
    // the timer that fired is cancelled by the re-arm it sent), or, when the newer generation was written
    // before their first step read it, completed with nothing to fire (timerTarget: null)
    const executor = s.app.deps.durable!.executor!;
    const listTimers = async () =>
      (await executor.listRuns({ functionId: "cua-schedule-timer", limit: 1000 })).filter(
        (r) => (r.event.data as { schedule_id?: string }).schedule_id === sc.id,
      );
    const gen = (r: { event: { data: unknown } }) => (r.event.data as { generation: number }).generation;
    const active = (r: { status: string }) => r.status === "queued" || r.status === "running";
    const timers = await waitFor("the older timers to end", listTimers, (t) => t.filter(active).length === 1);
    expect(timers.length).toBeGreaterThanOrEqual(3); // create, resume, PATCH (and the re-arm after the fire)
    const newest = Math.max(...timers.map(gen));
    expect(timers.filter(active).map(gen)).toEqual([newest]); // only the current generation's timer sleeps
    for (const r of timers.filter((x) => gen(x) < newest)) {
      expect(["cancelled", "completed"]).toContain(r.status);
      if (r.status === "completed") expect(r.output).toEqual({ fired: null });
    }
    expect((await history(sc.id)).body.data).toHaveLength(1); // and the schedule fired once
  });

  it("a cancelled run's entry is settled as cancelled by the sweeper and does not count as a failure", async () => {
    const sc = await create({ frequency: "daily", task_prompt: "slow #steps=50 #slow=200" });
    const r = await call(s.url, "POST", `/v1/schedules/${sc.id}/run`, { key: acct.test_key });
    await call(s.url, "POST", `/v1/runs/${r.body.run_id}/cancel`, { key: acct.test_key });
    offsetMs += 61_000; // the sweeper's next minute
    const h = await waitFor(
      "cancelled entry",
      async () => (await history(sc.id)).body.data[0],
      (x) => x.status === "cancelled",
      90_000,
    );
    expect(h.credits_charged).toBe(0);
    expect((await schedule(sc.id)).consecutive_failures).toBe(0);
  }, 120_000);
});

describe("credits (SPEC Schedules and triggers: 10/min, 20 minimum, 6 h cap; 20-credit gate on fires)", () => {
  it("a live managed run is metered; a timer fire below the gate pauses the schedule with insufficient_credits", async () => {
    const a = await s.account({ credits: 30 });
    const m = await liveMockMachine(s, a.account_id);
    const balance = async () =>
      (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: a.account_id } })).balanceCredits;
    const created = await call(s.url, "POST", "/v1/schedules", {
      key: a.live_key,
      body: { name: "live", machine_id: m, task_prompt: "press ctrl+s", frequency: "every_15_minutes" },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const now = await call(s.url, "POST", `/v1/schedules/${id}/run`, { key: a.live_key });
    expect(now.status).toBe(201);
    const h = await waitFor(
      "live run settled",
      async () => (await call(s.url, "GET", `/v1/schedules/${id}/runs`, { key: a.live_key })).body.data[0],
      (x) => x && !["queued", "running"].includes(x.status),
      60_000,
    );
    expect(["completed", "failed"]).toContain(h.status);
    // the execution costs the meter (20-credit minimum for a short run), whatever its steps already paid
    expect(h.credits_charged).toBe(20);
    expect(await balance()).toBe(10);
    const ledger = await s.app.deps.db.walletEntry.findMany({ where: { accountId: a.account_id } });
    expect(ledger.reduce((t, e) => t + e.delta, 0)).toBe(10);
    // the next timer fire finds 10 credits: no run, the schedule pauses (SPEC States: insufficient credits)
    const sc = (await call(s.url, "GET", `/v1/schedules/${id}`, { key: a.live_key })).body;
    offsetMs += Date.parse(sc.next_run_at) - serviceNow().getTime() + 1000;
    const fired = await waitFor(
      "gated fire",
      async () => (await call(s.url, "GET", `/v1/schedules/${id}/runs?trigger=cron`, { key: a.live_key })).body.data,
      (d) => d.length > 0 && d[0].status !== "queued",
    );
    expect(fired[0]).toMatchObject({ status: "insufficient_credits", run_id: null, credits_charged: 0 });
    expect(fired[0].error.code).toBe("INSUFFICIENT_CREDITS");
    const paused = (await call(s.url, "GET", `/v1/schedules/${id}`, { key: a.live_key })).body;
    expect(paused).toMatchObject({ status: "paused", paused_reason: "insufficient_credits", next_run_at: null });
    // run now answers the gate itself
    const e = envelope(
      await call(s.url, "POST", `/v1/schedules/${id}/run`, { key: a.live_key }),
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(e).toMatchObject({ required: 20, balance: 10 });
  }, 90_000);
});

describe("credits of an Unlimited account (SPEC Schedules and triggers: Unlimited bypasses the credit meter)", () => {
  it("a live managed execution is not metered; only the run's own steps are billed", async () => {
    const a = await s.account({ credits: 30, unlimited: true });
    const m = await liveMockMachine(s, a.account_id);
    const created = await call(s.url, "POST", "/v1/schedules", {
      key: a.live_key,
      body: { name: "unlimited", machine_id: m, task_prompt: "press ctrl+s", frequency: "every_15_minutes" },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const now = await call(s.url, "POST", `/v1/schedules/${id}/run`, { key: a.live_key });
    expect(now.status).toBe(201);
    const h = await waitFor(
      "unlimited run settled",
      async () => (await call(s.url, "GET", `/v1/schedules/${id}/runs`, { key: a.live_key })).body.data[0],
      (x) => x && !["queued", "running"].includes(x.status),
      60_000,
    );
    const run = await call(s.url, "GET", `/v1/runs/${h.run_id}`, { key: a.live_key });
    const steps = run.body.credits_charged as number;
    expect(steps).toBeLessThan(20); // a short run: the meter's 20-credit minimum would have charged more
    expect(h.credits_charged).toBe(steps);
    const ledger = await s.app.deps.db.walletEntry.findMany({ where: { accountId: a.account_id } });
    expect(ledger.some((e) => e.note?.startsWith(`schedule ${id}:`))).toBe(false); // no meter charge
    const balance = (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: a.account_id } })).balanceCredits;
    expect(balance).toBe(30 - steps);
    expect(ledger.reduce((t, e) => t + e.delta, 0)).toBe(balance);
  }, 90_000);
});

describe("GET /v1/billing/active (DECISIONS Compatibility amendments: schedules running now)", () => {
  it("lists a live managed execution in progress with its rate and what the meter has accrued", async () => {
    const a = await s.account({ credits: 100 });
    const m = await liveMockMachine(s, a.account_id);
    const sc = await call(s.url, "POST", "/v1/schedules", {
      key: a.live_key,
      body: { name: "nightly", machine_id: m, task_prompt: "t", frequency: "daily" },
    });
    // setup: an execution started 150 s ago whose run has not ended (a live run of that length is not
    // something a test can hold open on the mock machine)
    await s.app.deps.db.scheduleRun.create({
      data: {
        id: "srun_0000000000000000000000aa",
        scheduleId: sc.body.id,
        runId: "run_00000000000000000000beef",
        status: "running",
        trigger: "cron",
        executedAt: new Date(serviceNow().getTime() - 150_000),
      },
    });
    const r = await call(s.url, "GET", "/v1/billing/active", { key: a.live_key });
    expect(r.status).toBe(200);
    expect(r.body.schedules).toEqual([
      expect.objectContaining({
        schedule_id: sc.body.id,
        name: "nightly",
        schedule_run_id: "srun_0000000000000000000000aa",
        run_id: "run_00000000000000000000beef",
        rate_credits_per_hour: 600,
        accrued_credits: 30, // 3 started minutes x 10
      }),
    ]);
    expect(r.body.total_rate_credits_per_hour).toBeGreaterThanOrEqual(600);
    const t = await call(s.url, "GET", "/v1/billing/active", { key: a.test_key });
    expect(t.body.schedules).toEqual([]);
  });
});

describe("restart (issue 14: a fire due while the service was down fires once on start)", () => {
  it("missed slots collapse into one fire, recorded, after the next start", async () => {
    const sc = await create({ frequency: "every_15_minutes" });
    await s.stop(); // db is ours: it survives
    offsetMs += 61 * 60_000; // four slots pass while no service runs
    s = await startTestServer(ENV, db);
    s.app.deps.clock.now = serviceNow;
    const h = await waitFor(
      "fire after restart",
      async () => (await history(sc.id)).body.data,
      (d) => d.length > 0,
      60_000,
    );
    expect(h[0]).toMatchObject({ trigger: "cron", scheduled_for: sc.next_run_at });
    await sleep(2500);
    expect((await history(sc.id, "?trigger=cron")).body.data).toHaveLength(1);
    expect(Date.parse((await schedule(sc.id)).next_run_at)).toBeGreaterThan(serviceNow().getTime());
  }, 120_000);
});
