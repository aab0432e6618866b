// Issue 5 benchmark: task runs on the embedded executor (the API as its own process, PostgreSQL).
//   npm run bench -- runs
// 1. Orchestration overhead per step: the wall time of each step (commit to commit) minus the time spent
//    in the engine, the screenshot and the machine (recorded per step), on the sandbox engine and mock
//    machines (test key), for one run and for concurrent runs.
// 2. SSE fan-out: 500 concurrent subscribers of GET /v1/runs/{id}/events, events delivered per second and
//    the delivery latency (frame inserted -> frame received), p50/p99.
import http from "node:http";
import type { TestDatabase } from "@cua/db/testing";
import { percentile, startBenchService } from "./lib.ts";

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

async function waitDone(base: string, key: string, ids: string[]): Promise<void> {
  for (const id of ids) {
    for (;;) {
      const r = await json(`${base}/v1/runs/${id}`, "GET", key);
      if (["succeeded", "failed", "cancelled", "timed_out"].includes(r.status)) {
        if (r.status !== "succeeded") throw new Error(`run ${id} ${r.status}: ${JSON.stringify(r.error)}`);
        break;
      }
      await sleep(100);
    }
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
  const svc = await startBenchService({
    env: { DATA_DIR: "/tmp/cua-bench-runs", MACHINE_PROVIDER: "none", EXECUTOR_CONCURRENCY: "32" },
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
    await waitDone(base, key, [w.id]);

    console.log(
      "\n== task runs: orchestration overhead per step (sandbox engine, mock machine, embedded executor on PostgreSQL) ==",
    );
    console.log("   overhead = step wall time (commit to commit) - screenshot - engine - machine execution");
    for (const [runs, steps] of [
      [1, 50],
      [10, 20],
      [50, 10],
    ] as const) {
      const ids: string[] = [];
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
      await waitDone(base, key, ids);
      const o = await overhead(db, ids);
      console.log(
        `${`${runs} run(s) x ${steps} steps`.padEnd(22)} step wall p50 ${ms(o.wall.p50)}  engine+machine p50 ${ms(o.inside.p50)}  overhead p50 ${ms(o.over.p50)}  mean ${ms(o.over.mean)}  p99 ${ms(o.over.p99)}  ${(o.steps / o.seconds).toFixed(0).padStart(5)} steps/s`,
      );
    }

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
  process.exit(0);
}
