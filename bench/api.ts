// Issue 2 benchmark: authenticated calls against the real service (its own process, on a PostgreSQL
// database) next to a bare Fastify handler measured in the same run, as ratios.
//   npm run bench -- api
import { randomUUID } from "node:crypto";
import {
  type Figures,
  load,
  loadInterleaved,
  percentile,
  reportTarget,
  row,
  spawnAndWait,
  startBenchService,
} from "./lib.ts";

export async function benchApi() {
  const svc = await startBenchService();
  const bare = await spawnAndWait("bench/bare-server.ts", {}, /BARE_LISTENING (\d+)/);
  const apiUrl = svc.url;
  const bareUrl = `http://127.0.0.1:${bare.match[1]}`;
  const auth = { "x-api-key": svc.account.live_key };
  try {
    console.log("\n== API spine: authenticated calls vs a bare Fastify handler (20 connections, 8 s each) ==");
    // the GET rows in turns (4 rounds of 2 s): a load change on the shared cores hits all three alike
    const [bareGet, models, usage] = (await loadInterleaved([
      { url: `${bareUrl}/bare` },
      { url: `${apiUrl}/v1/models`, headers: auth },
      { url: `${apiUrl}/v1/usage`, headers: auth },
    ])) as [Figures, Figures, Figures];
    console.log(row("bare Fastify GET (static JSON)", bareGet));
    console.log(row("GET /v1/models", models, bareGet));
    console.log(row("GET /v1/usage", usage, bareGet));
    const ratio = (f: Figures) => f.rps / bareGet.rps;
    const bareFig = `bare GET ${bareGet.rps.toFixed(0)} req/s`;
    reportTarget({
      row: "GET /v1/models vs bare Fastify GET, 20 connections",
      value: `${ratio(models).toFixed(2)}x`,
      baseline: bareFig,
      target: ">= 0.25x",
      met: ratio(models) >= 0.25,
    });
    reportTarget({
      row: "GET /v1/usage vs bare",
      value: `${ratio(usage).toFixed(2)}x`,
      baseline: bareFig,
      target: ">= 0.2x",
      met: ratio(usage) >= 0.2,
    });
    const barePost = await load({
      url: `${bareUrl}/bare`,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"name":"bench"}',
    });
    console.log(row("bare Fastify POST (parse JSON)", barePost));
    // the replay path: one Idempotency-Key, every request after the first is a stored replay
    const replay = await load({
      url: `${apiUrl}/v1/keys`,
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "idempotency-key": `bench-${randomUUID()}` },
      body: '{"name":"bench","scopes":["usage"]}',
    });
    console.log(row("POST /v1/keys + Idempotency-Key (replays)", replay, barePost));
    // fresh creations are capped by the 200 active keys per account: measure 150 sequentially
    const lat: number[] = [];
    for (let i = 0; i < 150; i++) {
      const t = performance.now();
      const r = await fetch(`${apiUrl}/v1/keys`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json", "idempotency-key": `fresh-${i}-${randomUUID()}` },
        body: '{"name":"bench","scopes":["usage"]}',
      });
      await r.text();
      if (r.status !== 201) throw new Error(`fresh key creation answered ${r.status}`);
      lat.push(performance.now() - t);
    }
    lat.sort((a, b) => a - b);
    console.log(
      `${"POST /v1/keys + Idempotency-Key (fresh, serial)".padEnd(46)} ${(1000 / (lat.reduce((a, b) => a + b, 0) / lat.length)).toFixed(0).padStart(7)} req/s  p50 ${percentile(lat, 50).toFixed(1).padStart(6)} ms  p99 ${percentile(lat, 99).toFixed(1).padStart(6)} ms  (1 connection)`,
    );
  } finally {
    bare.child.kill("SIGTERM");
    await svc.stop();
  }
}
