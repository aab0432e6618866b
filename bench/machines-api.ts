// Issue 4 benchmark, through the HTTP API of a spawned service:
//   - a live managed 1280x720 desktop: provision time, GET /screenshot latency p50/p99 (JSON and
//     Accept: image/png), actions/s for a batch of 50 clicks
//   - an external machine on loopback: the owner's POST /actions round trip through the driver protocol
//     (owner -> command queue -> driver long poll -> result -> owner), with the driver's own protocol
//     client answering at once (no X work), so the figure is the protocol's cost
//   npm run bench -- machines            (defaults: 100 shots, 5 batches, 200 round trips)
//   npx tsx bench/machines-api.ts [--shots N] [--batches N] [--trips N]
// The managed part needs root and the packages of scripts/install-desktop-deps.sh; it is skipped otherwise.
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { DriverClient } from "../apps/driver/src/client.ts";
import { startTestInternet } from "../packages/core/src/machines/isolation/test-internet.ts";
import { percentile, startBenchService } from "./lib.ts";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const PAGE = `<!doctype html><title>bench</title><body style="margin:0">
<button id="b" style="position:absolute;left:200px;top:150px;width:300px;height:120px"
 onclick="document.getElementById('n').textContent=++window.c">click</button><div id="n" style="position:absolute;top:400px">0</div>
<script>window.c=0</script>`;

const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

export async function benchMachines() {
  const shots = arg("shots", 100);
  const batches = arg("batches", 5);
  const trips = arg("trips", 200);
  const root = await mkdtemp(path.join(os.tmpdir(), "cua-bench-machines-"));
  await chmod(root, 0o711); // machine users must be able to traverse to their homes under root/machines
  const page = http.createServer((_, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(PAGE);
  });
  // machines run isolated (docs/security.md): the page is served from the stand-in internet
  const sock = path.join(os.tmpdir(), `cua-bench-api-page-${process.pid}.sock`);
  await rm(sock, { force: true });
  await new Promise<void>((r) => page.listen(sock, r));
  const inet = await startTestInternet();
  const pageUrl = `${await inet.expose(sock)}/`;
  const svc = await startBenchService({
    credits: 100_000,
    env: { DATA_DIR: path.join(root, "data"), MACHINES_ROOT: path.join(root, "machines") },
  });
  const base = svc.url;
  const req = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(base + p, {
      method,
      headers: {
        "X-API-Key": svc.account.live_key,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const buf = Buffer.from(await r.arrayBuffer());
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${buf.toString("utf8").slice(0, 300)}`);
    return (r.headers.get("content-type") ?? "").includes("json") ? JSON.parse(buf.toString("utf8")) : buf;
  };
  try {
    const desktop =
      process.getuid?.() === 0 &&
      ["/usr/bin/Xvfb", "/usr/bin/xdotool", "/usr/bin/scrot", "/usr/bin/chromium"].every((p) => existsSync(p));
    if (desktop) {
      console.log("\n== managed 1280x720 desktop through the API ==");
      const t0 = performance.now();
      const created = await req("POST", "/v1/machines", {
        display_name: "bench",
        screen_width: 1280,
        screen_height: 720,
      });
      const id = created.machine.id as string;
      for (;;) {
        const m = await req("GET", `/v1/machines/${id}`);
        if (m.status === "running") break;
        if (m.status === "error") throw new Error("provisioning failed");
        await new Promise((r) => setTimeout(r, 50));
      }
      console.log(`provision (POST -> running)          ${fmt(performance.now() - t0)}`);
      await req("POST", `/v1/machines/${id}/browser/navigate`, { parameters: { url: pageUrl } });
      for (const [label, headers] of [
        ["GET /screenshot (JSON, base64 PNG)", {}],
        ["GET /screenshot (Accept: image/png)", { Accept: "image/png" }],
      ] as const) {
        const times: number[] = [];
        for (let i = 0; i < shots; i++) {
          const t = performance.now();
          await req("GET", `/v1/machines/${id}/screenshot`, undefined, headers);
          times.push(performance.now() - t);
        }
        times.sort((a, b) => a - b);
        console.log(
          `${label.padEnd(37)}p50 ${fmt(percentile(times, 50))}  p99 ${fmt(percentile(times, 99))}  (${shots} shots)`,
        );
      }
      const els = (await req("POST", `/v1/machines/${id}/browser/clickables`, { parameters: {} })).result.elements as {
        selector: string;
        screen_x: number;
        screen_y: number;
      }[];
      const b = els.find((e) => e.selector === "#b")!;
      const steps = Array.from({ length: 50 }, () => ({
        command: "click",
        parameters: { x: b.screen_x, y: b.screen_y },
      }));
      const rates: number[] = [];
      for (let i = 0; i < batches; i++) {
        const t = performance.now();
        const r = await req("POST", `/v1/machines/${id}/actions/batch`, { steps });
        if (r.completed_count !== 50) throw new Error("batch did not complete");
        rates.push((50 / (performance.now() - t)) * 1000);
      }
      rates.sort((a, b2) => a - b2);
      console.log(
        `batch of 50 clicks                   median ${percentile(rates, 50).toFixed(1)} actions/s  (min ${rates[0]!.toFixed(1)}, ${batches} batches)`,
      );
      await req("DELETE", `/v1/machines/${id}`);
    } else {
      console.log("\n(managed desktop part skipped: needs root and the desktop packages)");
    }

    console.log("\n== external machine command round trip on loopback ==");
    const enrolled = await req(
      "POST",
      "/v1/machines/external",
      {
        display_name: "bench",
        capabilities: ["mouse", "screenshot"],
        screen_width: 1280,
        screen_height: 720,
        protocol_version: 1,
      },
      { "Idempotency-Key": `bench-${Date.now()}` },
    );
    const client = new DriverClient(base, enrolled.machine_id, enrolled.device_token);
    let stop = false;
    let cursor = "0";
    const driverLoop = (async () => {
      while (!stop) {
        const page2 = await client.poll(cursor, 2);
        for (const c of page2.commands) {
          await client.result(c.id, {
            status: "succeeded",
            result: {},
            error: null,
            duration_ms: 0,
            fencing_token: c.fencing_token,
            precondition_frame_id: c.precondition_frame_id,
          });
        }
        cursor = page2.next_cursor;
      }
    })();
    const times: number[] = [];
    for (let i = 0; i < trips; i++) {
      const t = performance.now();
      await req("POST", `/v1/machines/${enrolled.machine_id}/actions`, {
        command: "move",
        parameters: { x: i % 1000, y: 10 },
      });
      times.push(performance.now() - t);
    }
    stop = true;
    await driverLoop;
    times.sort((a, b) => a - b);
    console.log(
      `POST /actions via the driver protocol p50 ${fmt(percentile(times, 50))}  p99 ${fmt(percentile(times, 99))}  (${trips} round trips)`,
    );
    await req("DELETE", `/v1/machines/${enrolled.machine_id}`);
  } finally {
    await svc.stop();
    page.close();
    await inet.close();
    await rm(root, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchMachines();
  process.exit(0);
}
