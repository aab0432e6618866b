// Issue 13 benchmark: the workflow engine's overhead on the embedded executor (the API as its own process,
// PostgreSQL). Goal (issue 13 "Done when"): a 200-step workflow of non-task steps under 2 s on two cores.
//   npm run bench -- workflows   (or npx tsx bench/workflows.ts)
// 1. Wall time of a 200-step workflow of non-task steps (200 asserts), started_at -> finished_at, and of a
//    1-step workflow; the engine's overhead per non-task step = (200-step - 1-step) / 199.
// 2. The same 200 steps as a loop (count 199 around one assert): iterations cost one more memoized step each.
import { startBenchService } from "./lib.ts";

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

async function timeRun(base: string, key: string, definition: unknown): Promise<{ wall: number; e2e: number }> {
  const t0 = Date.now();
  const run = await json(`${base}/v1/workflows/runs`, "POST", key, { definition });
  for (;;) {
    const r = await json(`${base}/v1/workflows/runs/${run.id}`, "GET", key);
    if (["succeeded", "failed", "cancelled"].includes(r.status)) {
      if (r.status !== "succeeded") throw new Error(`workflow ${run.id} ${r.status}: ${JSON.stringify(r.error)}`);
      return { wall: Date.parse(r.finished_at) - Date.parse(r.started_at), e2e: Date.now() - t0 };
    }
    await sleep(20);
  }
}

const check = (id: string) => ({ id, type: "assert", condition: { op: "eq", left: 1, right: 1 } });

export async function benchWorkflows(): Promise<void> {
  const svc = await startBenchService({ ready: /API listening on (http:\/\/\S+)/, env: { EXECUTOR_POLL_MS: "50" } });
  try {
    const key = svc.account.test_key;
    const flat = { steps: Array.from({ length: 200 }, (_, i) => check(`s${i}`)) };
    const one = { steps: [check("s0")] };
    const loop = { steps: [{ id: "l", type: "loop", count: 199, max_iterations: 199, body: [check("b")] }] };
    await timeRun(svc.url, key, one); // warm-up
    const rows: Array<[string, { wall: number; e2e: number }]> = [];
    for (let i = 0; i < 2; i++) {
      rows.push(["1 assert", await timeRun(svc.url, key, one)]);
      rows.push(["200 asserts", await timeRun(svc.url, key, flat)]);
      rows.push(["loop x199 (200 steps)", await timeRun(svc.url, key, loop)]);
    }
    console.log("workflow engine (embedded executor, PostgreSQL, test key)");
    for (const [name, t] of rows)
      console.log(
        `  ${name.padEnd(24)} started->finished ${String(t.wall).padStart(6)} ms   request->terminal ${String(t.e2e).padStart(6)} ms`,
      );
    const best = (n: string) => Math.min(...rows.filter((r) => r[0] === n).map((r) => r[1].wall));
    console.log(`  overhead per non-task step: ${((best("200 asserts") - best("1 assert")) / 199).toFixed(1)} ms`);
    console.log(`  200-step workflow of non-task steps: ${best("200 asserts")} ms (goal < 2000 ms)`);
  } finally {
    await svc.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchWorkflows();
