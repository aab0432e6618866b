// Issue 10 fuzz benchmark: hostile requests over every operation of /openapi.json against the real service
// (its own process, PostgreSQL), printing the answers per status and the count outside the SPEC envelope.
//   npm run bench -- fuzz            (FUZZ_RUNS=10000 FUZZ_SEED=<n> to change the size or the seed)
import fc from "fast-check";
import { operationsOf, requestArbitrary, runFuzz } from "../apps/api/test/fuzz/openapi-fuzz.ts";
import { startBenchService } from "./lib.ts";

export async function benchFuzz() {
  const runs = Number(process.env.FUZZ_RUNS ?? 10_000);
  const seed = Number(process.env.FUZZ_SEED ?? 1125);
  const svc = await startBenchService({ credits: 100, env: { MACHINE_PROVIDER: "none" } });
  try {
    const keys = { live: svc.account.live_key, test: svc.account.test_key };
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${svc.url}${path}`, {
        method: "POST",
        headers: { "x-api-key": keys.test, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return (await r.json()) as any;
    };
    const machine = (await post("/v1/machines", { display_name: "fuzz", os_type: "linux" })).machine?.id;
    const run = (await post("/v1/runs", { machine_id: machine, task: "#human" })).id;
    const session = (await post("/v1/sessions", {})).id;
    const doc = await (await fetch(`${svc.url}/openapi.json`)).json();
    const ops = operationsOf(doc);
    const ids = {
      id: [machine, run].filter(Boolean),
      session_id: [session].filter(Boolean),
      provider: ["anthropic", "openai"],
      op: ["navigate", "click", "read", "write", "list", "dom"],
    };
    const reqs = fc.sample(requestArbitrary(ops, { keys, ids }), { seed, numRuns: runs });
    console.log(`\n== Fuzz: ${runs} hostile requests over ${ops.length} operations of /openapi.json (seed ${seed}) ==`);
    const t0 = performance.now();
    const t = await runFuzz(svc.url, reqs, 8);
    const secs = (performance.now() - t0) / 1000;
    const statuses = Object.entries(t.byStatus).sort(([a], [b]) => a.localeCompare(b));
    console.log(`answered in ${secs.toFixed(1)} s (${(t.sent / secs).toFixed(0)} req/s, 8 in flight)`);
    console.log(`per status: ${statuses.map(([s, n]) => `${s}: ${n}`).join(", ")}`);
    console.log(`unsendable by Node's client (skipped): ${t.unsendable}`);
    console.log(`outside the envelope: ${t.outsideEnvelope}`);
    console.log(
      `5xx: ${t.fiveXX} (besides ${t.designed503} x 503 UPSTREAM_UNAVAILABLE: live machine creation, no provider configured)`,
    );
    console.log(`no answer: ${t.noAnswer}`);
    for (const p of t.problems.slice(0, 10)) console.log(`  ${p.op} [${p.what.join("; ")}] ${p.target}: ${p.problem}`);
  } finally {
    await svc.stop();
  }
}
