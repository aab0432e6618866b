// Benchmark of the local desktop provider on a real 1280x720 desktop:
//   provision time, screenshot latency p50/p99, actions/s for a batch of 50 clicks, terminate time.
// Run as root (it creates a machine user): npx tsx bench/machines-desktop.ts [--shots N] [--batches N]
// Needs the packages of scripts/install-desktop-deps.sh.

import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { startTestInternet } from "@cua/machines/isolation/test-internet";
import { LocalDesktopProvider } from "@cua/machines/local-desktop-provider";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

const shots = arg("shots", 200);
const batches = arg("batches", 5);

const PAGE = `<!doctype html><title>bench</title><body style="margin:0">
<button id="b" style="position:absolute;left:200px;top:150px;width:300px;height:120px"
 onclick="document.getElementById('n').textContent=++window.c">click</button><div id="n" style="position:absolute;top:400px">0</div>
<script>window.c=0</script>`;

const server = http.createServer((_, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(PAGE);
});
// the machine runs isolated (docs/security.md): it cannot reach the host's loopback, so the page is
// served from the stand-in internet through a unix socket
const sock = path.join(os.tmpdir(), `cua-bench-page-${process.pid}.sock`);
await rm(sock, { force: true });
await new Promise<void>((r) => server.listen(sock, r));
const inet = await startTestInternet();
const url = `${await inet.expose(sock)}/`;

const root = await mkdtemp(path.join(os.tmpdir(), "cua-bench-"));
const provider = new LocalDesktopProvider({ rootDir: root });
let t0 = performance.now();
let handle = await provider.provision({
  machineId: `mch_test_bench${process.pid.toString(16)}`,
  screen: { width: 1280, height: 720 },
});
const provisionMs = performance.now() - t0;

try {
  await provider.browser(handle, "navigate", { url });
  const els = (await provider.browser(handle, "clickables", {})).result.elements as {
    selector: string;
    screen_x: number;
    screen_y: number;
  }[];
  const btn = els.find((e) => e.selector === "#b");
  if (!btn) throw new Error("button not found");
  await new Promise((r) => setTimeout(r, 1000));

  // screenshots
  for (let i = 0; i < 5; i++) await provider.screenshot(handle);
  const lat: number[] = [];
  let bytes = 0;
  for (let i = 0; i < shots; i++) {
    t0 = performance.now();
    const s = await provider.screenshot(handle);
    lat.push(performance.now() - t0);
    bytes += s.png.length;
  }
  lat.sort((a, b) => a - b);

  // batches of 50 clicks
  const steps = Array.from({ length: 50 }, () => ({
    command: "click",
    parameters: { x: btn.screen_x, y: btn.screen_y },
  }));
  const rates: number[] = [];
  for (let b = 0; b < batches; b++) {
    t0 = performance.now();
    const r = await provider.executeBatch(handle, { steps });
    const ms = performance.now() - t0;
    if (r.completed_count !== 50) throw new Error(`batch completed ${r.completed_count}/50`);
    rates.push((50 / ms) * 1000);
  }
  rates.sort((a, b) => a - b);
  await new Promise((r) => setTimeout(r, 1000)); // let Chromium drain its input queue
  const counted = Number((await provider.browser(handle, "dom", { selector: "#n" })).result.text);

  // restart (stop + start) time
  t0 = performance.now();
  handle = await provider.restart(handle);
  const restartMs = performance.now() - t0;

  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  console.log(`machines desktop benchmark (1280x720, ${os.cpus().length} cores, load ${load})`);
  console.log(`provision (user + Xvfb + openbox + Chromium ready): ${provisionMs.toFixed(0)} ms`);
  console.log(`restart (stop + start): ${restartMs.toFixed(0)} ms`);
  console.log(
    `screenshot x${shots}: p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, avg PNG ${Math.round(bytes / shots / 1024)} KiB`,
  );
  console.log(
    `batch of 50 clicks x${batches}: median ${pct(rates, 50).toFixed(0)} actions/s (min ${rates[0]?.toFixed(0)}, max ${rates[rates.length - 1]?.toFixed(0)}); page counted ${counted}/${50 * batches} clicks`,
  );
} finally {
  const t0t = performance.now();
  const t = await provider.terminate(handle);
  console.log(
    `terminate (processes reaped, user and home removed): ${(performance.now() - t0t).toFixed(0)} ms, user left: ${userExists(String((handle as { user?: string }).user))}`,
  );
  await provider.close();
  server.close();
  await inet.close();
  await rm(root, { recursive: true, force: true });
  if (t.leftover_processes !== 0) console.log(`WARNING: ${t.leftover_processes} processes left`);
}

function userExists(name: string): boolean {
  try {
    execFileSync("id", ["-u", name], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
