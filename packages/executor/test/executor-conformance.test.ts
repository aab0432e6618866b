// Conformance of the embedded executor with the Inngest JS SDK in use (pinned 4.24.0): real SDK
// functions, served by the SDK's own handler, run through the executor on real PostgreSQL. One test
// per feature. When the SDK is upgraded, this suite says what changed.
import { createTestDatabase, type TestDatabase } from "@cua/db/testing";
import { group, Inngest, NonRetriableError, RetryAfterError, version as sdkVersion } from "inngest";
import { serve } from "inngest/edge";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createExecutor, type Executor, type RunView } from "../src/index.ts";
import { canonicalJson, signBody } from "../src/protocol/signing.ts";
import { createPrismaStore } from "../src/store/prisma-store.ts";
import type { ExecutorStore } from "../src/store/store.ts";

// the SDK logs every (expected) function error; keep the test output readable
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const client = new Inngest({ id: "conf", logger: quiet });

/** side-effect counters, keyed per test and step */
const hits = new Map<string, number>();
const hit = (key: string) => hits.set(key, (hits.get(key) ?? 0) + 1);
const count = (key: string) => hits.get(key) ?? 0;
const attempts = new Map<string, number[]>();
const attemptSeen = (key: string, n: number) => attempts.set(key, [...(attempts.get(key) ?? []), n]);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

const memo = client.createFunction({ id: "memo", triggers: [{ event: "conf/memo" }] }, async ({ step, event }) => {
  hit(`memo:${event.data.k}:body`);
  const a = await step.run("a", () => {
    hit(`memo:${event.data.k}:a`);
    return { n: 1, nested: [1, "x", null] };
  });
  const b = await step.run("b", () => {
    hit(`memo:${event.data.k}:b`);
    return a.n + 1;
  });
  // the same id twice: the SDK indexes it ("c", "c:1"); each is memoized separately
  const c1 = await step.run("c", () => {
    hit(`memo:${event.data.k}:c`);
    return "c1";
  });
  const c2 = await step.run("c", () => {
    hit(`memo:${event.data.k}:c`);
    return "c2";
  });
  const u = await step.run("undefined-result", () => {
    hit(`memo:${event.data.k}:u`);
    return undefined;
  });
  return { a, b, c1, c2, u: u ?? "was-null" };
});

const retry = client.createFunction(
  { id: "retry", retries: 3, triggers: [{ event: "conf/retry" }] },
  async ({ step, event, attempt }) => {
    const k = String(event.data.k);
    const v = await step.run("flaky", () => {
      hit(`retry:${k}:flaky`);
      attemptSeen(`retry:${k}`, attempt);
      attempts.set(`retry:${k}:at`, [...(attempts.get(`retry:${k}:at`) ?? []), Date.now()]);
      if (count(`retry:${k}:flaky`) <= Number(event.data.failTimes))
        throw new Error(`boom ${count(`retry:${k}:flaky`)}`);
      return "ok";
    });
    return v;
  },
);

const exhaust = client.createFunction(
  { id: "exhaust", retries: 2, triggers: [{ event: "conf/exhaust" }] },
  async ({ step, event }) => {
    const k = String(event.data.k);
    if (event.data.catch) {
      try {
        await step.run("always-fails", () => {
          hit(`exhaust:${k}`);
          throw new Error("nope");
        });
      } catch (e) {
        return { caught: (e as Error).message };
      }
    }
    await step.run("always-fails", () => {
      hit(`exhaust:${k}`);
      throw new Error("nope");
    });
    return "unreachable";
  },
);

const nonRetriable = client.createFunction(
  { id: "non-retriable", retries: 5, triggers: [{ event: "conf/non-retriable" }] },
  async ({ step, event }) => {
    await step.run("stop", () => {
      hit(`nr:${event.data.k}`);
      throw new NonRetriableError("do not retry me");
    });
  },
);

const retryAfter = client.createFunction(
  { id: "retry-after", retries: 1, triggers: [{ event: "conf/retry-after" }] },
  async ({ step, event }) => {
    const k = String(event.data.k);
    return step.run("later", () => {
      hit(`ra:${k}`);
      attempts.set(`ra:${k}:at`, [...(attempts.get(`ra:${k}:at`) ?? []), Date.now()]);
      if (count(`ra:${k}`) === 1) throw new RetryAfterError("come back later", 1500);
      return "done";
    });
  },
);

const fnRetry = client.createFunction(
  { id: "fn-retry", retries: 2, triggers: [{ event: "conf/fn-retry" }] },
  async ({ attempt, event }) => {
    attemptSeen(`fnretry:${event.data.k}`, attempt);
    if (attempt < 2) throw new Error(`function-level failure on attempt ${attempt}`);
    return { attempt };
  },
);

const parallel = client.createFunction(
  { id: "parallel", triggers: [{ event: "conf/parallel" }] },
  async ({ step, event }) => {
    const k = String(event.data.k);
    let arrived = 0;
    const barrier = async (name: string) => {
      hit(`par:${k}:${name}`);
      arrived = count(`par:${k}:p1`) + count(`par:${k}:p2`) + count(`par:${k}:p3`);
      // all three step bodies must be running at the same time to get past this
      const until = Date.now() + 5000;
      while (count(`par:${k}:p1`) + count(`par:${k}:p2`) + count(`par:${k}:p3`) < 3 && Date.now() < until)
        await delay(10);
      if (count(`par:${k}:p1`) + count(`par:${k}:p2`) + count(`par:${k}:p3`) < 3)
        throw new NonRetriableError("steps did not run in parallel");
      return name;
    };
    const results = await Promise.all([
      step.run("p1", () => barrier("p1")),
      step.run("p2", () => barrier("p2")),
      step.run("p3", () => barrier("p3")),
    ]);
    const after = await step.run("after", () => {
      hit(`par:${k}:after`);
      return arrived >= 0;
    });
    return { results, after };
  },
);

const race = client.createFunction({ id: "race", triggers: [{ event: "conf/race" }] }, async ({ step }) => {
  const winner = await group.parallel({ mode: "race" }, () =>
    Promise.race([
      step.run("fast", () => "fast"),
      step.run("slow", async () => {
        await delay(1500);
        return { slowEnded: Date.now() };
      }),
    ]),
  );
  const afterAt = await step.run("after-race", () => Date.now());
  return { winner, afterAt };
});

const sleeper = client.createFunction(
  { id: "sleeper", triggers: [{ event: "conf/sleep" }] },
  async ({ step, event }) => {
    const t0 = await step.run("t0", () => Date.now());
    if (event.data.until) await step.sleepUntil("until", new Date(Number(event.data.until)));
    else await step.sleep("nap", "1s");
    const t1 = await step.run("t1", () => Date.now());
    return { slept: t1 - t0 };
  },
);

const waiter = client.createFunction({ id: "waiter", triggers: [{ event: "conf/wait" }] }, async ({ step, event }) => {
  const got = await step.waitForEvent("approval", {
    event: "conf/approved",
    timeout: event.data.timeout ? String(event.data.timeout) : "30s",
    if: "event.data.order == async.data.order && async.data.amount >= 10",
  });
  return { got: got ? { name: got.name, data: got.data } : null };
});

const matcher = client.createFunction({ id: "matcher", triggers: [{ event: "conf/match" }] }, async ({ step }) => {
  const got = await step.waitForEvent("m", { event: "conf/match-reply", timeout: "30s", match: "data.ticket" });
  return got?.data ?? null;
});

const child = client.createFunction(
  { id: "child", retries: 0, triggers: [{ event: "conf/child-direct" }] },
  async ({ step, event }) => {
    const doubled = await step.run("double", () => Number(event.data.n) * 2);
    if (event.data.fail) throw new NonRetriableError("child refused");
    if (event.data.sleep) await step.sleep("hold", "5s");
    return { doubled };
  },
);

const parent = client.createFunction(
  { id: "parent", triggers: [{ event: "conf/invoke" }] },
  async ({ step, event }) => {
    try {
      const res = await step.invoke("call-child", {
        function: child,
        data: { n: event.data.n, fail: event.data.fail, sleep: event.data.sleep },
        ...(event.data.timeout ? { timeout: String(event.data.timeout) } : {}),
      });
      return { ok: res };
    } catch (e) {
      return { err: (e as Error).message };
    }
  },
);

const sender = client.createFunction({ id: "sender", triggers: [{ event: "conf/send" }] }, async ({ step, event }) => {
  const out = await step.sendEvent("fan-out", [
    { name: "conf/received", data: { k: event.data.k, i: 1 } },
    { name: "conf/received", data: { k: event.data.k, i: 2 } },
  ]);
  return { ids: out.ids.length };
});

const receiver = client.createFunction(
  { id: "receiver", triggers: [{ event: "conf/received" }] },
  async ({ event }) => {
    hit(`recv:${event.data.k}:${event.data.i}`);
    return event.data.i;
  },
);

const cancellable = client.createFunction(
  {
    id: "cancellable",
    cancelOn: [{ event: "conf/cancel", if: "event.data.job == async.data.job" }],
    triggers: [{ event: "conf/long" }],
  },
  async ({ step, event }) => {
    await step.run("before", () => hit(`cancel:${event.data.job}:before`));
    await step.sleep("long-nap", "1m");
    await step.run("after", () => hit(`cancel:${event.data.job}:after`));
  },
);

const failing = client.createFunction(
  {
    id: "failing",
    retries: 0,
    triggers: [{ event: "conf/fail" }],
    onFailure: async ({ error, event, step }) => {
      await step.run("record", () => hit(`failure:${event.data.event.data.k}:${error.message}`));
      return "handled";
    },
  },
  async ({ step }) => {
    await step.run("explode", () => {
      throw new Error("kaboom");
    });
  },
);

const conditional = client.createFunction(
  { id: "conditional", triggers: [{ event: "conf/order", if: "event.data.amount > 100" }] },
  async ({ event }) => {
    hit(`cond:${event.data.k}`);
    return "big";
  },
);

const nulData = client.createFunction({ id: "nul-data", triggers: [{ event: "conf/nul" }] }, async ({ step }) => {
  await step.run("nul", () => {
    hit("nul:ran");
    return "a\u0000b"; // PostgreSQL jsonb cannot store U+0000
  });
});

const badWait = client.createFunction({ id: "bad-wait", triggers: [{ event: "conf/bad-wait" }] }, async ({ step }) => {
  await step.waitForEvent("w", { event: "conf/x", timeout: "1m", if: "size(async.data.items) > 1" });
});

const wildcard = client.createFunction({ id: "wildcard", triggers: [{ event: "conf-audit/*" }] }, async ({ event }) => {
  hit(`wild:${event.name}`);
  return event.name;
});

const signal = client.createFunction({ id: "signal", triggers: [{ event: "conf/signal" }] }, async ({ step }) => {
  await step.waitForSignal("sig", { signal: "never", timeout: "1m", onConflict: "fail" });
});

const functions = [
  memo,
  retry,
  exhaust,
  nonRetriable,
  retryAfter,
  fnRetry,
  parallel,
  race,
  sleeper,
  waiter,
  matcher,
  child,
  parent,
  sender,
  receiver,
  cancellable,
  failing,
  conditional,
  wildcard,
  signal,
  badWait,
  nulData,
];

let tdb: TestDatabase;
let store: ExecutorStore;
let ex: Executor;

beforeAll(async () => {
  tdb = await createTestDatabase();
  store = createPrismaStore(tdb.db);
  ex = createExecutor({
    client,
    functions,
    store,
    pollIntervalMs: 20,
    backoff: () => 50,
    leaseMs: 10_000,
    logger: quiet,
  });
  await ex.start();
});

afterAll(async () => {
  await ex?.stop();
  await tdb?.drop();
});

async function runOf(name: string, data: Record<string, unknown>): Promise<RunView> {
  const { runIds } = await ex.send({ name, data });
  expect(runIds).toHaveLength(1);
  return ex.waitForRun(runIds[0] as string, { timeoutMs: 20_000 });
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`condition not met in ${timeoutMs} ms: ${JSON.stringify(v)}`);
    await delay(20);
  }
}

describe("pinned SDK", () => {
  test("the suite runs against inngest 4.24.0", () => {
    expect(sdkVersion).toBe("4.24.0");
  });

  test("requests are signed the way the SDK verifies them (HMAC over RFC 8785 JSON)", async () => {
    const key = "signkey-test-0123456789abcdef";
    const app = new Inngest({ id: "sig", isDev: false, signingKey: key, logger: quiet });
    const fn = app.createFunction({ id: "f", triggers: [{ event: "sig/x" }] }, async () => "ran");
    const handler = serve({ client: app, functions: [fn] });
    const ev = { name: "sig/x", data: { b: 1, a: [2, { y: 1, x: 2 }] }, id: "e", ts: 1 };
    const body = canonicalJson({
      event: ev,
      events: [ev],
      steps: {},
      ctx: {
        run_id: "r",
        attempt: 0,
        max_attempts: 4,
        disable_immediate_execution: false,
        use_api: false,
        stack: { stack: [], current: 0 },
      },
    });
    const post = (sig: string) =>
      handler(
        new Request("http://localhost/api/inngest?fnId=sig-f&stepId=step", {
          method: "POST",
          body,
          headers: { "content-type": "application/json", host: "localhost", "x-inngest-signature": sig },
        }),
      );
    const now = Math.floor(Date.now() / 1000);
    const good = await post(signBody(body, key, now));
    expect(good.status).toBe(200);
    expect(await good.json()).toBe("ran");
    expect((await post(signBody(body, "signkey-test-deadbeef", now))).status).toBe(401);
    expect((await post(signBody(body, key, now - 3600))).status).toBe(401);
  });
});

describe("steps", () => {
  test("step.run results are memoized: each step body runs once, the function body once per call", async () => {
    const run = await runOf("conf/memo", { k: "m1" });
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ a: { n: 1, nested: [1, "x", null] }, b: 2, c1: "c1", c2: "c2", u: "was-null" });
    for (const s of ["a", "b", "u"]) expect(count(`memo:m1:${s}`)).toBe(1);
    expect(count("memo:m1:c")).toBe(2);
    expect(run.steps.map((s) => [s.name, s.seq])).toEqual([
      ["a", 1],
      ["b", 2],
      ["c", 3],
      ["c", 4],
      ["undefined-result", 5],
    ]);
    // the function is re-entered once per new step plus the final call; never more
    expect(count("memo:m1:body")).toBe(6);
  });

  test("a failing step is retried with backoff and the attempt number, then succeeds", async () => {
    const run = await runOf("conf/retry", { k: "r1", failTimes: 2 });
    expect(run.status).toBe("completed");
    expect(run.output).toBe("ok");
    expect(count("retry:r1:flaky")).toBe(3);
    expect(attempts.get("retry:r1")).toEqual([0, 1, 2]);
    // backoff (50 ms in this suite) separates the attempts
    const at = attempts.get("retry:r1:at") ?? [];
    for (let i = 1; i < at.length; i++) expect((at[i] as number) - (at[i - 1] as number)).toBeGreaterThanOrEqual(45);
  });

  test("retries are bounded by the function's retries: the step runs retries+1 times, then the run fails", async () => {
    const run = await runOf("conf/exhaust", { k: "x1" });
    expect(run.status).toBe("failed");
    expect(run.error?.message).toContain("nope");
    expect(count("exhaust:x1")).toBe(3);
    expect(run.steps).toHaveLength(1);
    expect(run.steps[0]?.op).toBe("StepFailed");
  });

  test("the final step error reaches the function, which may catch it", async () => {
    const run = await runOf("conf/exhaust", { k: "x2", catch: true });
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ caught: "nope" });
    expect(count("exhaust:x2")).toBe(3);
  });

  test("NonRetriableError fails the run without retrying", async () => {
    const run = await runOf("conf/non-retriable", { k: "n1" });
    expect(run.status).toBe("failed");
    expect(run.error?.message).toContain("do not retry me");
    expect(count("nr:n1")).toBe(1);
  });

  test("RetryAfterError's Retry-After overrides the backoff", async () => {
    const run = await runOf("conf/retry-after", { k: "ra1" });
    expect(run.status).toBe("completed");
    const [first, second] = attempts.get("ra:ra1:at") ?? [];
    expect((second as number) - (first as number)).toBeGreaterThanOrEqual(1400);
  });

  test("errors outside steps retry the whole call with ctx.attempt counting up", async () => {
    const run = await runOf("conf/fn-retry", { k: "f1" });
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ attempt: 2 });
    expect(attempts.get("fnretry:f1")).toEqual([0, 1, 2]);
  });

  test("parallel steps are planned together and run concurrently, each exactly once", async () => {
    const run = await runOf("conf/parallel", { k: "p" });
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ results: ["p1", "p2", "p3"], after: true });
    for (const s of ["p1", "p2", "p3", "after"]) expect(count(`par:p:${s}`)).toBe(1);
    expect(run.disableImmediateExecution).toBe(true);
  });

  test("group.parallel race: the first result resumes the function while the slower step still runs", async () => {
    const run = await runOf("conf/race", {});
    expect(run.status).toBe("completed");
    const out = run.output as { winner: string; afterAt: number };
    expect(out.winner).toBe("fast");
    // the SDK still reports the unfinished step, so the run ends only once it is memoized too
    const slow = run.steps.find((s) => s.name === "slow")?.data as { slowEnded: number };
    expect(out.afterAt).toBeLessThan(slow.slowEnded);
  });
});

describe("time", () => {
  test("step.sleep schedules a wake-up in the database and resumes after it", async () => {
    const { runIds } = await ex.send({ name: "conf/sleep", data: {} });
    const runId = runIds[0] as string;
    const sleeping = await until(
      () => ex.getRun(runId),
      (r) => (r?.pending ?? []).some((p) => p.kind === "sleep"),
    );
    const wake = sleeping?.pending.find((p) => p.kind === "sleep");
    expect(wake?.name).toBe("nap");
    const run = await ex.waitForRun(runId, { timeoutMs: 10_000 });
    expect(run.status).toBe("completed");
    expect((run.output as { slept: number }).slept).toBeGreaterThanOrEqual(950);
    expect(run.steps.map((s) => s.op)).toEqual(["StepRun", "Sleep", "StepRun"]);
  });

  test("step.sleepUntil wakes at the given date", async () => {
    const untilMs = Date.now() + 1200;
    const run = await runOf("conf/sleep", { until: untilMs });
    expect(run.status).toBe("completed");
    expect(run.endedAt!.getTime()).toBeGreaterThanOrEqual(untilMs);
  });
});

describe("events", () => {
  test("waitForEvent resumes only on an event matching its `if` expression, with that event", async () => {
    const { runIds } = await ex.send({ name: "conf/wait", data: { order: "o-1" } });
    const runId = runIds[0] as string;
    await until(
      () => ex.getRun(runId),
      (r) => (r?.pending ?? []).some((p) => p.kind === "event"),
    );
    await ex.send({ name: "conf/approved", data: { order: "o-2", amount: 50 } }); // other order
    await ex.send({ name: "conf/approved", data: { order: "o-1", amount: 5 } }); // too small
    await ex.send({ name: "conf/other", data: { order: "o-1", amount: 50 } }); // other event
    await delay(300);
    expect((await ex.getRun(runId))?.status).toBe("running");
    await ex.send({ name: "conf/approved", data: { order: "o-1", amount: 10 } });
    const run = await ex.waitForRun(runId);
    expect(run.output).toEqual({ got: { name: "conf/approved", data: { order: "o-1", amount: 10 } } });
  });

  test("waitForEvent `match` compares the same field of both events", async () => {
    const { runIds } = await ex.send({ name: "conf/match", data: { ticket: 42 } });
    await until(
      () => ex.getRun(runIds[0] as string),
      (r) => (r?.pending ?? []).some((p) => p.kind === "event"),
    );
    await ex.send({ name: "conf/match-reply", data: { ticket: 41, v: "no" } });
    await ex.send({ name: "conf/match-reply", data: { ticket: 42, v: "yes" } });
    const run = await ex.waitForRun(runIds[0] as string);
    expect(run.output).toEqual({ ticket: 42, v: "yes" });
  });

  test("waitForEvent times out with null", async () => {
    const run = await runOf("conf/wait", { order: "o-3", timeout: "1s" });
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ got: null });
  });

  test("step.sendEvent delivers events that trigger functions", async () => {
    const run = await runOf("conf/send", { k: "s1" });
    expect(run.output).toEqual({ ids: 2 });
    await until(
      async () => count("recv:s1:1") + count("recv:s1:2"),
      (n) => n === 2,
    );
  });

  test("a trigger's `if` expression filters events", async () => {
    const small = await ex.send({ name: "conf/order", data: { k: "c1", amount: 5 } });
    const big = await ex.send({ name: "conf/order", data: { k: "c2", amount: 500 } });
    expect(small.runIds).toHaveLength(0);
    expect(big.runIds).toHaveLength(1);
    await ex.waitForRun(big.runIds[0] as string);
    expect(count("cond:c2")).toBe(1);
  });

  test('a trigger ending in "*" matches every event with that prefix', async () => {
    const a = await ex.send({ name: "conf-audit/login", data: {} });
    const b = await ex.send({ name: "conf-audit/keys/created", data: {} });
    const c = await ex.send({ name: "conf-auditx", data: {} });
    expect([a.runIds.length, b.runIds.length, c.runIds.length]).toEqual([1, 1, 0]);
    expect((await ex.waitForRun(b.runIds[0] as string)).output).toBe("conf-audit/keys/created");
  });

  test("an event id is an idempotency key: the same id twice starts one run", async () => {
    const first = await ex.send({ name: "conf/memo", data: { k: "idem" }, id: "order-123" });
    const second = await ex.send({ name: "conf/memo", data: { k: "idem" }, id: "order-123" });
    expect(first.runIds).toHaveLength(1);
    expect(second.runIds).toHaveLength(0);
    await ex.waitForRun(first.runIds[0] as string);
  });
});

describe("invoke", () => {
  test("step.invoke runs the other function and returns its result", async () => {
    const run = await runOf("conf/invoke", { n: 21 });
    expect(run.output).toEqual({ ok: { doubled: 42 } });
    const children = await ex.listRuns({ parentRunId: run.id });
    expect(children).toHaveLength(1);
    expect(children[0]?.status).toBe("completed");
    expect(children[0]?.event.name).toBe("inngest/function.invoked");
  });

  test("a failed invoked run surfaces as the invoke step's error", async () => {
    const run = await runOf("conf/invoke", { n: 1, fail: true });
    expect(run.status).toBe("completed");
    expect(run.output).toEqual({ err: expect.stringContaining("child refused") });
  });

  test("an invoke timeout fails the step", async () => {
    const run = await runOf("conf/invoke", { n: 1, sleep: true, timeout: "1s" });
    expect(run.output).toEqual({ err: expect.stringContaining("timed out") });
  });
});

describe("cancellation and failure", () => {
  test("cancelOn: a matching event cancels the run, a non-matching one does not", async () => {
    const a = await ex.send({ name: "conf/long", data: { job: "j1" } });
    const b = await ex.send({ name: "conf/long", data: { job: "j2" } });
    const ra = a.runIds[0] as string;
    const rb = b.runIds[0] as string;
    for (const id of [ra, rb])
      await until(
        () => ex.getRun(id),
        (r) => (r?.pending ?? []).some((p) => p.kind === "sleep"),
      );
    await ex.send({ name: "conf/cancel", data: { job: "j1" } });
    const cancelled = await ex.waitForRun(ra);
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.pending).toEqual([]);
    expect((await ex.getRun(rb))?.status).toBe("running");
    expect(await ex.cancel(rb, "operator asked")).toBe(true);
    expect((await ex.getRun(rb))?.status).toBe("cancelled");
    expect((await ex.getRun(rb))?.error?.message).toBe("operator asked");
    expect(await ex.cancel(rb)).toBe(false);
    expect(count("cancel:j1:after") + count("cancel:j2:after")).toBe(0);
  });

  test("onFailure runs after the run fails, with the error and the original event", async () => {
    const run = await runOf("conf/fail", { k: "f9" });
    expect(run.status).toBe("failed");
    await until(
      async () => count("failure:f9:kaboom"),
      (n) => n === 1,
    );
    const handlers = await ex.listRuns({ functionId: "conf-failing-failure" });
    const mine = handlers.find((h) => (h.event.data.run_id as string) === run.id);
    expect(mine?.event.name).toBe("inngest/function.failed");
    expect((await ex.waitForRun(mine!.id)).output).toBe("handled");
  });

  test("an op the executor does not support fails the run with a clear error", async () => {
    const run = await runOf("conf/signal", {});
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe("UnsupportedOpError");
    expect(run.error?.message).toContain('unsupported op "WaitForSignal"');
  });

  test("a waitForEvent expression outside the supported CEL subset fails the run with a clear error", async () => {
    const run = await runOf("conf/bad-wait", {});
    expect(run.status).toBe("failed");
    expect(run.error?.message).toContain('function "size" is not supported');
  });

  test("a step result the database cannot store fails the run instead of re-running the step forever", async () => {
    const run = await runOf("conf/nul", {});
    expect(run.status).toBe("failed");
    expect(run.error?.name).toBe("ExecutorDataError");
    expect(run.error?.message).toContain("22P05");
    expect(count("nul:ran")).toBe(1);
  });

  test("a function option the executor does not implement is refused at start", async () => {
    const limited = client.createFunction(
      { id: "limited", concurrency: 1, triggers: [{ event: "conf/limited" }] },
      async () => null,
    );
    const other = createExecutor({ client, functions: [limited], store });
    await expect(other.start()).rejects.toThrow(/"concurrency", which the embedded executor does not implement/);
    const badIf = client.createFunction(
      { id: "bad-if", triggers: [{ event: "conf/bad-if", if: "event.data.x in [1, 2]" }] },
      async () => null,
    );
    await expect(createExecutor({ client, functions: [badIf], store }).start()).rejects.toThrow(
      /"in" is not supported/,
    );
    const badCron = client.createFunction({ id: "bad-cron", triggers: [{ cron: "0 0 30 2 *" }] }, async () => null);
    await expect(createExecutor({ client, functions: [badCron], store }).start()).rejects.toThrow(/never fires/);
  });
});

describe("cron", () => {
  test("a cron trigger starts a run with inngest/scheduled.timer at each tick, and schedules the next", async () => {
    let offset = 0;
    const clock = () => new Date(Date.now() + offset);
    const cronApp = new Inngest({ id: "conf-cron", logger: quiet });
    const ticker = cronApp.createFunction(
      { id: "tick", triggers: [{ cron: "*/5 * * * *" }] },
      async ({ event, step }) => {
        const n = await step.run("count", () => {
          hit("cron:tick");
          return count("cron:tick");
        });
        return { name: event.name, cron: (event.data as { cron?: string }).cron, n };
      },
    );
    const cronEx = createExecutor({ client: cronApp, functions: [ticker], store, pollIntervalMs: 20, now: clock });
    await cronEx.start();
    try {
      const items = () => store.listItems("cron:conf-cron-tick");
      const [first] = await items();
      expect(first?.kind).toBe("cron");
      expect(first!.runAt.getUTCMinutes() % 5).toBe(0);
      expect(first!.runAt.getUTCSeconds()).toBe(0);
      expect(first?.runAt.getTime()).toBeGreaterThan(Date.now());
      expect((await cronEx.listRuns({ functionId: "conf-cron-tick" })).length).toBe(0);
      // a restart keeps the scheduled tick instead of adding another
      await cronEx.stop();
      await cronEx.start();
      expect((await items()).map((i) => i.id)).toEqual([first?.id]);
      // jump the clock to the tick
      offset = (first?.runAt.getTime() ?? 0) - Date.now() + 5;
      const runs = await until(
        () => cronEx.listRuns({ functionId: "conf-cron-tick" }),
        (r) => r.length === 1 && r[0]?.status === "completed",
      );
      expect(runs[0]?.output).toEqual({ name: "inngest/scheduled.timer", cron: "*/5 * * * *", n: 1 });
      const [second] = await items();
      expect(second?.runAt.getTime()).toBe((first?.runAt.getTime() ?? 0) + 5 * 60_000);
    } finally {
      await cronEx.stop();
    }
  });
});

describe("leases", () => {
  test("two workers on one database share the work; every step still runs exactly once", async () => {
    const second = createExecutor({
      client,
      functions,
      store,
      pollIntervalMs: 20,
      backoff: () => 50,
      workerId: "second",
    });
    await second.start();
    try {
      const sent = await ex.send(Array.from({ length: 12 }, (_, i) => ({ name: "conf/memo", data: { k: `w${i}` } })));
      const runs = await Promise.all(sent.runIds.map((id) => ex.waitForRun(id, { timeoutMs: 30_000 })));
      expect(runs.every((r) => r.status === "completed")).toBe(true);
      for (let i = 0; i < 12; i++) for (const s of ["a", "b", "u"]) expect(count(`memo:w${i}:${s}`)).toBe(1);
    } finally {
      await second.stop();
    }
  });

  test("an item leased by a dead worker is taken over when the lease expires", async () => {
    // a worker that claims the first call and never answers
    const { runIds } = await ex.send({ name: "conf/memo", data: { k: "orphan" } });
    await ex.stop();
    try {
      const at = new Date();
      const { items: claimed } = await store.poll({
        workerId: "dead-worker",
        now: at,
        leaseUntil: new Date(at.getTime() + 1000),
        limit: 10,
        functionIds: ["conf-memo"],
      });
      expect(claimed.some((i) => i.runId === runIds[0] && i.leaseOwner?.startsWith("dead-worker#"))).toBe(true);
    } finally {
      await ex.start();
    }
    const run = await ex.waitForRun(runIds[0] as string, { timeoutMs: 10_000 });
    expect(run.status).toBe("completed");
    expect(count("memo:orphan:a")).toBe(1);
  });
});
