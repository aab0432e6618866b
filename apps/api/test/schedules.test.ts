// Schedules through the real server (SPEC.md "Schedule", "States and transitions / Schedule", "Schedules and
// triggers", "Errors", "Limits"; DECISIONS.md "Tiers and numeric limits", "Schedules and triggers" and the
// Compatibility amendments). Time is the service's clock (CoreDeps.clock, which the embedded executor's
// durable sleeps also read): tests move it forward instead of sleeping for minutes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, startTestServer, type TestServer } from "./helpers.ts";
import { liveMockMachine, testMachine } from "./runs-helpers.ts";

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let machine: string;
/** the service's clock may run ahead of real time */
const offsetMs = 0;

const serviceNow = () => new Date(Date.now() + offsetMs);

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  s.app.deps.clock.now = serviceNow;
  acct = await s.account({ tier: "enterprise", credits: 1000 });
  machine = await testMachine(s, acct.test_key);
}, 120_000);
afterAll(() => s.stop());

const base = (over: Record<string, unknown> = {}) => ({
  name: "invoices",
  machine_id: machine,
  task_prompt: "download the invoices #steps=1",
  ...over,
});
const create = (body: Record<string, unknown>, key = acct.test_key, headers: Record<string, string> = {}) =>
  call(s.url, "POST", "/v1/schedules", { key, body, headers });
const get = (id: string, key = acct.test_key) => call(s.url, "GET", `/v1/schedules/${id}`, { key });

/** the wall clock of an instant in a zone, "YYYY-MM-DD HH:MM" (Intl, independent of croner) */
function local(zone: string, iso: string): string {
  const p = new Intl.DateTimeFormat("en-CA", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  }).formatToParts(new Date(iso));
  const g = (t: string) => p.find((x) => x.type === t)!.value;
  return `${g("year")}-${g("month")}-${g("day")} ${g("hour")}:${g("minute")}`;
}

describe("health (DECISIONS Compatibility amendments: GET /v1/schedules/health, /v1/triggers/health, no key)", () => {
  it("answers {status, service, api_version, time} without a key", async () => {
    for (const [path, service] of [
      ["/v1/schedules/health", "schedules"],
      ["/v1/triggers/health", "triggers"],
    ]) {
      const r = await call(s.url, "GET", path!);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: "ok", service, api_version: "v1" });
      expect(Date.parse(r.body.time)).toBeGreaterThan(0);
    }
  });
});

describe("create (SPEC Schedules and triggers: presets, time, timezone, run_at)", () => {
  it("daily at 07:30 Europe/Berlin: 201, cron mapped, next_run_at is the next 07:30 in Berlin", async () => {
    const r = await create(base({ frequency: "daily", time: "07:30", timezone: "Europe/Berlin" }));
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      object: "schedule",
      frequency: "daily",
      cron: "30 7 * * *",
      timezone: "Europe/Berlin",
      status: "active",
      enabled: true,
      paused_reason: null,
      max_consecutive_failures: 5,
      consecutive_failures: 0,
      run_count: 0,
      llm_provider: "managed",
      is_test: true,
    });
    expect(r.body.id).toMatch(/^sch_test_[0-9a-f]{24}$/);
    expect(r.body.request_id).toBe(r.headers.get("x-service-request-id"));
    const next = r.body.next_run_at as string;
    expect(local("Europe/Berlin", next).slice(11)).toBe("07:30");
    const ahead = Date.parse(next) - serviceNow().getTime();
    expect(ahead).toBeGreaterThan(0);
    expect(ahead).toBeLessThanOrEqual(25 * 3600_000);
    expect((await get(r.body.id)).body.next_run_at).toBe(next);
  });

  it("weekly on Friday 18:05 in Asia/Kolkata (+05:30); custom 6-field cron; one-shot run_at", async () => {
    const w = await create(base({ frequency: "weekly", time: "18:05", day_of_week: 5, timezone: "Asia/Kolkata" }));
    expect(w.body.cron).toBe("5 18 * * 5");
    const d = new Date(w.body.next_run_at);
    expect(local("Asia/Kolkata", w.body.next_run_at).slice(11)).toBe("18:05");
    expect(new Intl.DateTimeFormat("en-US", { timeZone: "Asia/Kolkata", weekday: "long" }).format(d)).toBe("Friday");
    expect((d.getUTCHours() * 60 + d.getUTCMinutes()) % 60).toBe(35); // 18:05 IST = 12:35 UTC
    const c = await create(base({ frequency: "custom", cron: "30 0 9 * * *" }));
    expect(c.status).toBe(201);
    expect(c.body.next_run_at).toMatch(/T09:00:30\.000Z$/);
    const at = new Date(serviceNow().getTime() + 3 * 86400_000).toISOString();
    const o = await create(base({ run_at: at }));
    expect(o.body).toMatchObject({ frequency: null, cron: null, run_at: at, next_run_at: at });
    for (const id of [w.body.id, c.body.id, o.body.id])
      await call(s.url, "DELETE", `/v1/schedules/${id}`, { key: acct.test_key });
  });

  it("refuses inconsistent timing with 422 VALIDATION_ERROR naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ frequency: "daily", run_at: new Date(Date.now() + offsetMs + 3600_000).toISOString() }, "body.run_at"],
      [{}, "body.frequency"],
      [{ frequency: "custom" }, "body.cron"],
      [{ frequency: "custom", cron: "* * * *" }, "body.cron"],
      [{ frequency: "hourly", time: "07:00" }, "body.time"],
      [{ frequency: "daily", timezone: "Mars/Olympus" }, "body.timezone"],
      [{ run_at: new Date(serviceNow().getTime() - 5 * 60_000).toISOString() }, "body.run_at"],
      [{ frequency: "monthly", day_of_month: 32 }, "body.day_of_month"],
      [{ frequency: "daily", max_consecutive_failures: 51 }, "body.max_consecutive_failures"],
      [{ frequency: "daily", colour: "red" }, "body"],
    ];
    for (const [over, path] of cases) {
      const e = envelope(await create(base(over)), 422, "VALIDATION_ERROR");
      expect(JSON.stringify(e.details), JSON.stringify(over)).toContain(path);
    }
  });

  it("machine: malformed 400 INVALID_MACHINE_ID, unknown 404 MACHINE_NOT_FOUND", async () => {
    envelope(await create(base({ frequency: "hourly", machine_id: "nope" })), 400, "INVALID_MACHINE_ID");
    envelope(
      await create(base({ frequency: "hourly", machine_id: "mch_test_00112233445566778899aabb" })),
      404,
      "MACHINE_NOT_FOUND",
    );
  });

  it("BYOK intent on a test key: 422 LLM_PROVIDER_UNSUPPORTED (SPEC Authentication 4)", async () => {
    envelope(
      await create(base({ frequency: "hourly", llm: { provider: "anthropic" } })),
      422,
      "LLM_PROVIDER_UNSUPPORTED",
    );
    envelope(
      await create(base({ frequency: "hourly" }), acct.test_key, { "X-LLM-Provider": "openai" }),
      422,
      "LLM_PROVIDER_UNSUPPORTED",
    );
  });

  it("scopes: schedules:write to create, schedules:read to list (403 INSUFFICIENT_SCOPE)", async () => {
    const k = await call(s.url, "POST", "/v1/keys", { key: acct.test_key, body: { scopes: ["schedules:read"] } });
    const e = envelope(await create(base({ frequency: "hourly" }), k.body.key), 403, "INSUFFICIENT_SCOPE");
    expect(e.required_scope).toBe("schedules:write");
    expect((await call(s.url, "GET", "/v1/schedules", { key: k.body.key })).status).toBe(200);
  });
});

describe("ids, get, list (SPEC Errors; DECISIONS Compatibility amendments: lists, *_NOT_FOUND)", () => {
  it("400 INVALID_SCHEDULE_ID for a malformed id, 404 SCHEDULE_NOT_FOUND for an unknown or other-mode one", async () => {
    envelope(await get("not-an-id"), 400, "INVALID_SCHEDULE_ID");
    envelope(await get("sch_test_00112233445566778899aabb"), 404, "SCHEDULE_NOT_FOUND");
    const r = await create(base({ frequency: "hourly" }));
    envelope(await get(r.body.id, acct.live_key), 404, "SCHEDULE_NOT_FOUND"); // mode-isolated
    const other = await s.account();
    envelope(await get(r.body.id, other.test_key), 404, "SCHEDULE_NOT_FOUND"); // account-isolated
    await call(s.url, "DELETE", `/v1/schedules/${r.body.id}`, { key: acct.test_key });
  });

  it("lists newest first in pages with cursors, filters by status; bad limit/status/cursor are 400", async () => {
    const a = await s.account();
    const m = await testMachine(s, a.test_key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await create({ ...base({ frequency: "hourly", machine_id: m }), name: `s${i}` }, a.test_key)).body.id);
    await call(s.url, "POST", `/v1/schedules/${ids[1]}/pause`, { key: a.test_key });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await call(s.url, "GET", `/v1/schedules?limit=2${cursor ? `&cursor=${cursor}` : ""}`, {
        key: a.test_key,
      });
      expect(r.body).toMatchObject({ object: "list", request_id: r.headers.get("x-service-request-id") });
      expect(r.body.schedules).toEqual(r.body.data);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.map((x: { id: string }) => x.id));
      cursor = r.body.next_cursor;
      expect(r.body.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    const paused = await call(s.url, "GET", "/v1/schedules?status=paused", { key: a.test_key });
    expect(paused.body.data.map((x: { id: string }) => x.id)).toEqual([ids[1]]);
    const e1 = envelope(await call(s.url, "GET", "/v1/schedules?limit=0", { key: a.test_key }), 400, "INVALID_LIMIT");
    expect(e1).toMatchObject({ min: 1, max: 200 });
    const e2 = envelope(
      await call(s.url, "GET", "/v1/schedules?status=sleeping", { key: a.test_key }),
      400,
      "INVALID_STATUS_FILTER",
    );
    expect(e2.valid_options).toEqual(["active", "paused"]);
    envelope(await call(s.url, "GET", "/v1/schedules?cursor=zzz", { key: a.test_key }), 400, "INVALID_CURSOR");
  });
});

describe("PATCH, pause, resume, delete (SPEC States and transitions / Schedule)", () => {
  it("PATCH: {} is 400 EMPTY_UPDATE; timing changes recompute next_run_at; the LLM preference is immutable", async () => {
    const r = await create(base({ frequency: "daily", time: "07:30", timezone: "America/New_York" }));
    const id = r.body.id;
    envelope(await call(s.url, "PATCH", `/v1/schedules/${id}`, { key: acct.test_key, body: {} }), 400, "EMPTY_UPDATE");
    const p = await call(s.url, "PATCH", `/v1/schedules/${id}`, {
      key: acct.test_key,
      body: { time: "22:15", name: "late" },
    });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({
      name: "late",
      cron: "15 22 * * *",
      frequency: "daily",
      timezone: "America/New_York",
    });
    expect(local("America/New_York", p.body.next_run_at).slice(11)).toBe("22:15");
    const z = await call(s.url, "PATCH", `/v1/schedules/${id}`, {
      key: acct.test_key,
      body: { timezone: "Asia/Kolkata" },
    });
    expect(local("Asia/Kolkata", z.body.next_run_at).slice(11)).toBe("22:15");
    const w = await call(s.url, "PATCH", `/v1/schedules/${id}`, {
      key: acct.test_key,
      body: { frequency: "every_30_minutes" },
    });
    expect(w.body).toMatchObject({ cron: "*/30 * * * *", time: null });
    expect(new Date(w.body.next_run_at).getUTCMinutes() % 30).toBe(0);
    const e = envelope(
      await call(s.url, "PATCH", `/v1/schedules/${id}`, { key: acct.test_key, body: { llm: { provider: "openai" } } }),
      422,
      "VALIDATION_ERROR",
    );
    expect(e.details[0].path).toBe("body.llm");
    envelope(
      await call(s.url, "PATCH", `/v1/schedules/${id}`, {
        key: acct.test_key,
        body: { name: "x" },
        headers: { "X-LLM-Provider": "anthropic" },
      }),
      422,
      "VALIDATION_ERROR",
    );
    envelope(
      await call(s.url, "PATCH", "/v1/schedules/bad", { key: acct.test_key, body: { name: "x" } }),
      400,
      "INVALID_SCHEDULE_ID",
    );
  });

  it("pause: paused_reason user, no next fire; resume: next_run_at from now; delete is soft and final", async () => {
    const id = (await create(base({ frequency: "hourly" }))).body.id;
    const p = await call(s.url, "POST", `/v1/schedules/${id}/pause`, { key: acct.test_key });
    expect(p.body).toMatchObject({ status: "paused", enabled: false, paused_reason: "user", next_run_at: null });
    const again = await call(s.url, "POST", `/v1/schedules/${id}/pause`, { key: acct.test_key });
    expect(again.status).toBe(200);
    const r = await call(s.url, "POST", `/v1/schedules/${id}/resume`, { key: acct.test_key });
    expect(r.body).toMatchObject({ status: "active", paused_reason: null });
    expect(Date.parse(r.body.next_run_at)).toBeGreaterThan(serviceNow().getTime());
    expect(new Date(r.body.next_run_at).getUTCMinutes()).toBe(0);
    const d = await call(s.url, "DELETE", `/v1/schedules/${id}`, { key: acct.test_key });
    expect(d.body).toMatchObject({ object: "schedule", id, deleted: true });
    envelope(await get(id), 404, "SCHEDULE_NOT_FOUND");
    envelope(await call(s.url, "DELETE", `/v1/schedules/${id}`, { key: acct.test_key }), 404, "SCHEDULE_NOT_FOUND");
  });
});

describe("limits and the wallet gate (DECISIONS Tiers: slots; SPEC Limits: 10 test schedules, 20-credit gate)", () => {
  it("a test key holds 10 schedules; the 11th is 429 TEST_SCHEDULE_LIMIT; deleting frees a slot", async () => {
    const a = await s.account({ tier: "free" });
    const m = await testMachine(s, a.test_key);
    const ids = [];
    for (let i = 0; i < 10; i++) {
      const r = await create(base({ frequency: "hourly", machine_id: m }), a.test_key);
      expect(r.status).toBe(201);
      ids.push(r.body.id);
    }
    envelope(await create(base({ frequency: "hourly", machine_id: m }), a.test_key), 429, "TEST_SCHEDULE_LIMIT");
    await call(s.url, "DELETE", `/v1/schedules/${ids[0]}`, { key: a.test_key });
    expect((await create(base({ frequency: "hourly", machine_id: m }), a.test_key)).status).toBe(201);
  });

  it("live free tier: 3 slots then 429 SCHEDULE_LIMIT_REACHED; below 20 credits 402 with required and balance", async () => {
    const a = await s.account({ tier: "free", credits: 100 });
    const m = await liveMockMachine(s, a.account_id);
    for (let i = 0; i < 3; i++) {
      const r = await create(base({ frequency: "daily", machine_id: m }), a.live_key);
      expect(r.status).toBe(201);
      expect(r.body.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.body.is_test).toBe(false);
    }
    envelope(await create(base({ frequency: "daily", machine_id: m }), a.live_key), 429, "SCHEDULE_LIMIT_REACHED");

    const poor = await s.account({ tier: "enterprise", credits: 19 });
    const pm = await liveMockMachine(s, poor.account_id);
    const e = envelope(
      await create(base({ frequency: "daily", machine_id: pm }), poor.live_key),
      402,
      "INSUFFICIENT_CREDITS",
    );
    expect(e).toMatchObject({ required: 20, balance: 19 });
    // BYOK schedules bypass the gate; the preference is recorded and validation only at create
    const byok = await create(
      base({ frequency: "daily", machine_id: pm, llm: { provider: "anthropic" } }),
      poor.live_key,
    );
    expect(byok.status).toBe(201);
    expect(byok.body.llm_provider).toBe("anthropic");
  });
});
