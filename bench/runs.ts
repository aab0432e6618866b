// Issue 5 benchmark: task runs on the embedded executor (the API as its own process, PostgreSQL).
//   npm run bench -- runs
// 1. Orchestration overhead per step: the wall time of each step (commit to commit) minus the time spent
//    in the engine, the screenshot and the machine (recorded per step), on the sandbox engine and mock
//    machines (test key), for one run and for concurrent runs.
// 2. SSE fan-out: 500 concurrent subscribers of GET /v1/runs/{id}/events, events delivered per second and
//    the delivery latency (frame inserted -> frame received), p50/p99.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import type { TestDatabase } from "@cua/db/testing";
import { percentile, printTargets, ROOT, reportTarget, startBenchService } from "./lib.ts";

/** Issue 16's targets and the figures measured before its change (docs/benchmarks.md "Task runs"). */
const TARGETS = {
  overheadP50Ms: { before: 35, target: 15 },
  stepsPerSecond50: { before: 33, target: 100 },
  roundTripsPerStep: { before: 27, target: 4 },
};

const PG_COUNT_FILE = "/tmp/cua-bench-runs-pg-count.json";

interface PgCounts {
  total: number;
  byStatement: Record<string, number>;
}

/** The service's running statement counts: SIGUSR2 asks bench/pg-count.mjs in its process for them. */
async function pgCounts(service: number): Promise<PgCounts> {
  fs.rmSync(PG_COUNT_FILE, { force: true });
  for (const pid of cpuMs([service]).keys()) {
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {}
    if (cmd.includes("apps/api/src/main.ts")) process.kill(pid, "SIGUSR2");
  }
  for (let i = 0; i < 100 && !fs.existsSync(PG_COUNT_FILE); i++) await sleep(20);
  try {
    return JSON.parse(fs.readFileSync(PG_COUNT_FILE, "utf8")) as PgCounts;
  } catch {
    return { total: 0, byStatement: {} };
  }
}

/** CPU time (ms, user + system) of these processes and their descendants, from /proc (Linux). */
function cpuMs(roots: number[]): Map<number, number> {
  const stat = new Map<number, { ppid: number; ms: number }>();
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const t = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const f = t.slice(t.lastIndexOf(")") + 2).split(" ");
      // the fields after the command name: state, ppid, ...; utime and stime are the 12th and 13th (clock ticks)
      stat.set(Number(d), { ppid: Number(f[1]), ms: ((Number(f[11]) + Number(f[12])) * 1000) / 100 });
    } catch {
      // gone meanwhile
    }
  }
  const out = new Map<number, number>();
  const add = (pid: number) => {
    const s = stat.get(pid);
    if (!s || out.has(pid)) return;
    out.set(pid, s.ms);
    for (const [c, v] of stat) if (v.ppid === pid) add(c);
  };
  for (const r of roots) add(r);
  return out;
}

/** CPU used between two readings (processes that appeared meanwhile count from zero). */
const cpuDelta = (a: Map<number, number>, b: Map<number, number>): number =>
  [...b].reduce((sum, [pid, ms]) => sum + ms - (a.get(pid) ?? 0), 0);

/** The service's process tree and the PostgreSQL backends serving its database. */
async function cpuNow(db: TestDatabase, service: number) {
  const backends = await db.db.$queryRaw<{ pid: number }[]>`
    SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
  return { service: cpuMs([service]), pg: cpuMs(backends.map((b) => Number(b.pid))) };
}

const pgDelta = (a: PgCounts, b: PgCounts): PgCounts => ({
  total: b.total - a.total,
  byStatement: Object.fromEntries(
    Object.entries(b.byStatement)
      .map(([k, n]) => [k, n - (a.byStatement[k] ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .sort((x, y) => y[1] - x[1]),
  ),
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

/** Waits in the database (not through the API: the service's statement counts stay the runs' own). */
async function waitDone(db: TestDatabase, ids: string[]): Promise<void> {
  for (;;) {
    const rows = await db.db.run.findMany({
      where: { id: { in: ids } },
      select: { id: true, status: true, error: true },
    });
    const bad = rows.find((r) => ["failed", "cancelled", "timed_out"].includes(r.status));
    if (bad) throw new Error(`run ${bad.id} ${bad.status}: ${JSON.stringify(bad.error)}`);
    if (rows.length === ids.length && rows.every((r) => r.status === "succeeded")) return;
    await sleep(100);
  }
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { n: s.length, mean, p50: percentile(s, 50), p99: percentile(s, 99), max: s.at(-1) ?? 0 };
};
const ms = (v: number) => `${v.toFixed(1).padStart(6)} ms`;

async function overhead(db: TestDatabase, ids: string[]) {
  const wall: number[] = [];
  const inside: number[] = [];
  const over: number[] = [];
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  let steps = 0;
  for (const id of ids) {
    const run = await db.db.run.findUniqueOrThrow({ where: { id } });
    const rows = await db.db.runStep.findMany({ where: { runId: id, phase: "committed" }, orderBy: { step: "asc" } });
    let prev = run.startedAt!.getTime();
    first = Math.min(first, prev);
    for (const r of rows) {
      const t = r.committedAt!.getTime();
      const tm = ((r.usage ?? {}) as { timings?: Record<string, number> }).timings ?? {};
      const work = (tm.screenshot_ms ?? 0) + (tm.engine_ms ?? 0) + (tm.execute_ms ?? 0);
      wall.push(t - prev);
      inside.push(work);
      over.push(t - prev - work);
      prev = t;
      steps++;
    }
    last = Math.max(last, prev);
  }
  return { wall: stats(wall), inside: stats(inside), over: stats(over), steps, seconds: (last - first) / 1000 };
}

interface Subscriber {
  frames: number;
  closed: boolean;
  recv: Map<number, number>;
}

function subscribe(base: string, key: string, runId: string): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const sub: Subscriber = { frames: 0, closed: false, recv: new Map() };
    const req = http.get(`${base}/v1/runs/${runId}/events`, { headers: { "x-api-key": key }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE ${res.statusCode}`));
      res.setEncoding("utf8");
      let buf = "";
      res.on("data", (chunk: string) => {
        const now = Date.now();
        buf += chunk;
        let i = buf.indexOf("\n\n");
        while (i >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (block.startsWith("id: ")) {
            sub.recv.set(Number(block.slice(4, block.indexOf("\n"))), now);
            sub.frames++;
          }
          i = buf.indexOf("\n\n");
        }
      });
      res.on("end", () => {
        sub.closed = true;
      });
      resolve(sub);
    });
    req.on("error", reject);
  });
}

async function fanOut(
  base: string,
  key: string,
  db: TestDatabase,
  machines: string[],
  runs: number,
  perRun: number,
  steps: number,
  slowMs: number,
) {
  const ids: string[] = [];
  for (let i = 0; i < runs; i++) {
    ids.push(
      (
        await json(`${base}/v1/runs`, "POST", key, {
          machine_id: machines[i % machines.length],
          task: `#steps=${steps} #slow=${slowMs}`,
          max_steps: steps,
        })
      ).id,
    );
  }
  const subs: { runId: string; sub: Subscriber }[] = [];
  await Promise.all(
    ids.map(async (id) => {
      const batch = await Promise.all(Array.from({ length: perRun }, () => subscribe(base, key, id)));
      for (const sub of batch) subs.push({ runId: id, sub });
    }),
  );
  // every subscriber is connected: frames inserted from now on are live deliveries (earlier ones were replays)
  const t0 = Date.now() + 50;
  while (!subs.every((s) => s.sub.closed)) await sleep(20);
  const createdAt = new Map<string, Map<number, number>>();
  for (const id of ids) {
    const rows = await db.db.runEvent.findMany({ where: { runId: id }, select: { seq: true, createdAt: true } });
    createdAt.set(id, new Map(rows.map((r) => [r.seq, r.createdAt.getTime()])));
  }
  const lat: number[] = [];
  let delivered = 0;
  let firstCreated = Number.POSITIVE_INFINITY;
  let lastRecv = 0;
  for (const { runId, sub } of subs) {
    const created = createdAt.get(runId)!;
    for (const [seq, at] of sub.recv) {
      const c = created.get(seq)!;
      if (c < t0) continue;
      lat.push(at - c);
      delivered++;
      firstCreated = Math.min(firstCreated, c);
      lastRecv = Math.max(lastRecv, at);
    }
  }
  const seconds = (lastRecv - firstCreated) / 1000;
  return { subscribers: subs.length, delivered, seconds, rate: delivered / seconds, lat: stats(lat) };
}

export async function benchRuns() {
  fs.rmSync(PG_COUNT_FILE, { force: true });
  const svc = await startBenchService({
    env: {
      DATA_DIR: "/tmp/cua-bench-runs",
      MACHINE_PROVIDER: "none",
      EXECUTOR_CONCURRENCY: "32",
      // count the statements the service sends (bench/pg-count.mjs): round trips per step
      // RUNS_BENCH_CPU_PROF=<dir>: a CPU profile of the service (node --cpu-prof), written when it stops
      NODE_OPTIONS: [
        process.env.NODE_OPTIONS ?? "",
        `--import ${path.join(ROOT, "bench/pg-count.mjs")}`,
        process.env.RUNS_BENCH_CPU_PROF ? `--cpu-prof --cpu-prof-dir=${process.env.RUNS_BENCH_CPU_PROF}` : "",
      ]
        .join(" ")
        .trim(),
      PG_COUNT_FILE,
    },
  });
  const db = svc.db;
  const base = svc.url;
  const key = svc.account.test_key;
  try {
    const machines: string[] = [];
    for (let i = 0; i < 4; i++) {
      machines.push(
        (
          await json(`${base}/v1/machines`, "POST", key, {
            display_name: `bench-${i}`,
            os_type: "linux",
            desktop_enabled: true,
          })
        ).machine.id,
      );
    }
    // warm-up
    const w = await json(`${base}/v1/runs`, "POST", key, { machine_id: machines[0], task: "#steps=5" });
    await waitDone(db, [w.id]);

    console.log(
      "\n== task runs: orchestration overhead per step (sandbox engine, mock machine, embedded executor on PostgreSQL) ==",
    );
    console.log("   overhead = step wall time (commit to commit) - screenshot - engine - machine execution");
    console.log(
      "   db = statements the service sent to PostgreSQL per step (BEGIN/COMMIT included; run creation and polling too)",
    );
    console.log(
      "   cpu/step = CPU time (user + system) of the service's processes and of its PostgreSQL backends per step: what decides throughput when the cores are busy",
    );
    const rows: { runs: number; over: number; rate: number; db: number }[] = [];
    for (const [runs, steps] of [
      [1, 50],
      [10, 20],
      [50, 10],
    ] as const) {
      const ids: string[] = [];
      const before = await pgCounts(svc.child.pid!);
      const cpu0 = await cpuNow(db, svc.child.pid!);
      for (let i = 0; i < runs; i++) {
        ids.push(
          (
            await json(`${base}/v1/runs`, "POST", key, {
              machine_id: machines[i % machines.length],
              task: `type 'x' then press tab #steps=${steps}`,
            })
          ).id,
        );
      }
      await waitDone(db, ids);
      const trips = pgDelta(before, await pgCounts(svc.child.pid!));
      const cpu1 = await cpuNow(db, svc.child.pid!);
      if (process.env.PG_COUNT_DETAIL === "1") {
        for (const [k, n] of Object.entries(trips.byStatement).slice(0, 40))
          console.log(`   ${(n / (runs * steps)).toFixed(2).padStart(6)}/step  ${k}`);
      }
      const o = await overhead(db, ids);
      const perStep = trips.total / o.steps;
      const cpuService = cpuDelta(cpu0.service, cpu1.service) / o.steps;
      const cpuPg = cpuDelta(cpu0.pg, cpu1.pg) / o.steps;
      rows.push({ runs, over: o.over.p50, rate: o.steps / o.seconds, db: perStep });
      console.log(
        `${`${runs} run(s) x ${steps} steps`.padEnd(22)} step wall p50 ${ms(o.wall.p50)}  engine+machine p50 ${ms(o.inside.p50)}  overhead p50 ${ms(o.over.p50)}  mean ${ms(o.over.mean)}  p99 ${ms(o.over.p99)}  ${(o.steps / o.seconds).toFixed(0).padStart(5)} steps/s  db ${perStep.toFixed(1)}/step  cpu/step: service ${cpuService.toFixed(1)} ms, postgres ${cpuPg.toFixed(1)} ms`,
      );
    }
    const one = rows.find((r) => r.runs === 1)!;
    const fifty = rows.find((r) => r.runs === 50)!;
    const T = TARGETS;
    reportTarget({
      row: "run orchestration overhead per step, 1 run (p50)",
      value: `${one.over.toFixed(1)} ms`,
      baseline: `${T.overheadP50Ms.before} ms before`,
      target: `<= ${T.overheadP50Ms.target} ms`,
      met: one.over <= T.overheadP50Ms.target,
    });
    reportTarget({
      row: "steps/s, 50 concurrent sandbox runs (mock machines)",
      value: fifty.rate.toFixed(0),
      baseline: `${T.stepsPerSecond50.before} before`,
      target: `>= ${T.stepsPerSecond50.target}`,
      met: fifty.rate >= T.stepsPerSecond50.target,
    });
    reportTarget({
      row: "database round trips per run step, 1 run",
      value: one.db.toFixed(1),
      baseline: `${T.roundTripsPerStep.before} before`,
      target: `<= ${T.roundTripsPerStep.target}`,
      met: one.db <= T.roundTripsPerStep.target,
    });

    if (process.env.RUNS_BENCH_SSE === "0") return; // RUNS_BENCH_SSE=0: the step rows only (profiling)
    console.log("\n== run events: SSE fan-out (GET /v1/runs/{id}/events), latency = frame inserted -> received ==");
    for (const [runs, perRun, steps, slow] of [
      [1, 500, 80, 40],
      [10, 50, 40, 40],
    ] as const) {
      const f = await fanOut(base, key, db, machines, runs, perRun, steps, slow);
      console.log(
        `${`${f.subscribers} subscribers, ${runs} run(s)`.padEnd(28)} ${f.delivered} events in ${f.seconds.toFixed(2)} s = ${f.rate.toFixed(0).padStart(6)} events/s delivered   latency p50 ${ms(f.lat.p50)}  p99 ${ms(f.lat.p99)}  max ${ms(f.lat.max)}`,
      );
    }
  } finally {
    await svc.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchRuns();
  printTargets("issue 16 rows (baseline = before the change, docs/benchmarks.md)");
  process.exit(0);
}
