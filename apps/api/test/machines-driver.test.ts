// Issue 4: the driver program (apps/driver) end to end. An Xvfb display stands in for the owner's
// Linux X11 host; the driver is enrolled with its CLI and run as a child process, and the owner drives
// the machine through the ordinary machine endpoints: screenshot, mouse, keyboard, browser, terminal,
// files; a driver killed mid-command is restarted and the command still completes (at-least-once
// delivery, persisted cursor); deleting the machine revokes the token and the driver stops.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { decodePng } from "@cua/machines/png";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, REPO_ROOT, startTestServer, type TestServer } from "./helpers.ts";

const enabled =
  ["/usr/bin/Xvfb", "/usr/bin/xdotool", "/usr/bin/scrot", "/usr/bin/openbox"].every((p) => existsSync(p)) &&
  existsSync("/usr/bin/chromium") &&
  process.env.SKIP_DESKTOP_TESTS !== "1";

const PAGE = `<!doctype html><html><head><title>Driver page</title></head>
<body style="margin:0;font:16px sans-serif">
<button id="btn" style="position:absolute;left:100px;top:100px;width:220px;height:60px"
  onclick="window.n=(window.n||0)+1;document.getElementById('out').textContent='clicked:'+window.n">Press me</button>
<input id="inp" style="position:absolute;left:100px;top:220px;width:320px;height:40px"
  oninput="document.getElementById('echo').textContent='echo:'+this.value">
<div id="out" style="position:absolute;left:100px;top:300px">idle</div>
<div id="echo" style="position:absolute;left:100px;top:340px">echo:</div>
</body></html>`;

const TSX = path.join(REPO_ROOT, "node_modules/.bin/tsx");
const MAIN = path.join(REPO_ROOT, "apps/driver/src/main.ts");

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let tmp: string;
let home: string;
let stateFile: string;
let display: string;
let xvfb: ChildProcess;
let openbox: ChildProcess;
let page: http.Server;
let base: string;
let driver: ChildProcess | null = null;
let driverLog = "";
let machineId: string;
const devtoolsPort = 19_000 + (process.pid % 1000);

function driverEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    DISPLAY: display,
    CUA_API_KEY: acct.live_key,
  } as unknown as NodeJS.ProcessEnv;
}

/**
 * The driver itself as the child (node --import tsx, not the tsx CLI): the CLI is a launcher whose SIGKILL
 * leaves the real driver running, so "killed mid-command" would race an orphan that finishes the command.
 */
function startDriver(): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      MAIN,
      "run",
      "--state",
      stateFile,
      "--home",
      home,
      "--poll-wait",
      "5",
      "--devtools-port",
      String(devtoolsPort),
    ],
    {
      cwd: REPO_ROOT,
      env: driverEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stdout!.on("data", (d) => (driverLog += d));
  child.stderr!.on("data", (d) => (driverLog += d));
  driver = child;
  return child;
}

function exitOf(child: ChildProcess, ms: number): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`driver did not exit; log:\n${driverLog.slice(-3000)}`)), ms);
    child.once("exit", (code) => {
      clearTimeout(t);
      resolve(code);
    });
  });
}

/** pids whose command line mentions this test's private directory (the driver's Chromium, shells) */
function processesUnder(dir: string): number[] {
  const out: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, "utf8").includes(dir)) out.push(Number(p));
    } catch {}
  }
  return out;
}

const api = (method: string, p: string, body?: unknown) => call(s.url, method, p, { key: acct.live_key, body });

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms: number, what: string): Promise<T> {
  const started = Date.now();
  let v = await fn();
  while (!ok(v)) {
    if (Date.now() - started > ms)
      throw new Error(`timed out: ${what}: ${JSON.stringify(v).slice(0, 300)}\n${driverLog.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 150));
    v = await fn();
  }
  return v;
}

// These tests need root and the Debian packages of scripts/install-desktop-deps.sh (test-all installs
// them); without them the file fails loudly instead of skipping.
if (!enabled) throw new Error("real-desktop tests need root and the packages of scripts/install-desktop-deps.sh");

describe("the driver on an Xvfb display, enrolled as an external machine", () => {
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), "cua-driver-test-"));
    home = path.join(tmp, "home");
    stateFile = path.join(tmp, "state", "driver.json");
    let n = 950 + (process.pid % 40);
    while (existsSync(`/tmp/.X${n}-lock`)) n++;
    display = `:${n}`;
    xvfb = spawn("Xvfb", [display, "-screen", "0", "1280x720x24", "-nolisten", "tcp", "-noreset"], { stdio: "ignore" });
    await until(async () => existsSync(`/tmp/.X11-unix/X${n}`), Boolean, 10_000, "Xvfb");
    openbox = spawn("openbox", ["--sm-disable"], {
      env: { PATH: "/usr/bin:/bin", DISPLAY: display, HOME: tmp } as unknown as NodeJS.ProcessEnv,
      stdio: "ignore",
    });
    page = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(PAGE);
    });
    await new Promise<void>((r) => page.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
    s = await startTestServer({ MACHINE_PROVIDER: "none" });
    acct = await s.account();
  }, 60_000);

  afterAll(async () => {
    if (driver && driver.exitCode === null) {
      driver.kill("SIGTERM");
      await exitOf(driver, 10_000).catch(() => driver?.kill("SIGKILL"));
    }
    for (const pid of processesUnder(tmp)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    openbox?.kill("SIGTERM");
    xvfb?.kill("SIGTERM");
    page?.close();
    await s?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  it("enrolls with the CLI (idempotent: a second enroll keeps the same machine) and starts serving", async () => {
    const enroll = spawn(TSX, [MAIN, "enroll", "--api-url", s.url, "--state", stateFile, "--name", "e2e-host"], {
      env: driverEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    enroll.stdout!.on("data", (d) => (out += d));
    enroll.stderr!.on("data", (d) => (driverLog += d));
    expect(await exitOf(enroll, 60_000)).toBe(0);
    machineId = JSON.parse(out).machine_id;
    const state = JSON.parse(readFileSync(stateFile, "utf8"));
    expect(state.device_token).toMatch(/^dtk_[0-9a-f]{64}$/);
    expect(state.enrollment_key).toMatch(/^enroll-/);
    const again = spawn(TSX, [MAIN, "enroll", "--api-url", s.url, "--state", stateFile], {
      env: driverEnv(),
      stdio: "ignore",
    });
    expect(await exitOf(again, 60_000)).toBe(0);
    expect(JSON.parse(readFileSync(stateFile, "utf8")).machine_id).toBe(machineId);
    const m = await api("GET", `/v1/machines/${machineId}`);
    expect(m.body).toMatchObject({
      kind: "external",
      status: "running",
      screen: { width: 1280, height: 720 },
      display_name: "e2e-host",
    });
    expect(driverLog).not.toContain(state.device_token);
    startDriver();
  }, 120_000);

  it("screenshot: JSON and raw PNG of the display, through an observation frame", async () => {
    const shot = await api("GET", `/v1/machines/${machineId}/screenshot`);
    expect(shot.status, shot.text).toBe(200);
    expect(shot.body).toMatchObject({ machine_id: machineId, mime_type: "image/png", width: 1280, height: 720 });
    const raw = await fetch(`${s.url}/v1/machines/${machineId}/screenshot`, {
      headers: { "X-API-Key": acct.live_key, Accept: "image/png" },
    });
    expect(raw.headers.get("content-type")).toBe("image/png");
    const img = decodePng(Buffer.from(await raw.arrayBuffer()));
    expect([img.width, img.height]).toEqual([1280, 720]);
    const hb = await s.app.deps.db.machine.findUniqueOrThrow({ where: { id: machineId } });
    expect(hb.lastSequence).toBe(2);
  }, 60_000);

  it("browser, mouse and keyboard: navigate, click and type, read the reaction from the DOM", async () => {
    const nav = await api("POST", `/v1/machines/${machineId}/browser/navigate`, {
      parameters: { url: `${base}/page` },
    });
    expect(nav.body, nav.text).toMatchObject({ success: true, op: "navigate" });
    const els = (await api("POST", `/v1/machines/${machineId}/browser/clickables`, { parameters: {} })).body.result
      .elements as {
      selector: string;
      screen_x: number;
      screen_y: number;
    }[];
    const btn = els.find((e) => e.selector === "#btn")!;
    const inp = els.find((e) => e.selector === "#inp")!;
    const click = await api("POST", `/v1/machines/${machineId}/actions`, {
      command: "click",
      parameters: { x: btn.screen_x, y: btn.screen_y },
    });
    expect(click.body).toMatchObject({ success: true, command: "click" });
    const dom = (sel: string) =>
      api("POST", `/v1/machines/${machineId}/browser/dom`, { parameters: { selector: sel } }).then((r) =>
        String(r.body.result?.text),
      );
    await until(
      () => dom("#out"),
      (t) => t === "clicked:1",
      10_000,
      "click reaction",
    );
    const batch = await api("POST", `/v1/machines/${machineId}/actions/batch`, {
      steps: [
        { command: "click", parameters: { x: inp.screen_x, y: inp.screen_y } },
        { command: "type", parameters: { text: "via driver" } },
        { command: "scroll", parameters: { clicks: -1 } },
      ],
    });
    expect(batch.body).toMatchObject({ completed_count: 3, failed_count: 0, aborted: false });
    await until(
      () => dom("#echo"),
      (t) => t === "echo:via driver",
      10_000,
      "typed text",
    );
  }, 90_000);

  it("terminal and files: relative paths in the driver's home, absolute paths anywhere its user may write", async () => {
    const t = await api("POST", `/v1/machines/${machineId}/terminal`, {
      command: "cd Downloads && echo hello-$((6*7))",
      session_id: "d1",
    });
    expect(t.body).toMatchObject({ success: true });
    expect(t.body.result.output).toContain("hello-42");
    const pwd = await api("POST", `/v1/machines/${machineId}/terminal`, { command: "pwd", session_id: "d1" });
    expect(pwd.body.result.output).toContain(path.join(home, "Downloads"));
    const w = await api("POST", `/v1/machines/${machineId}/files/write`, {
      parameters: { path: "notes/n.txt", content: "external" },
    });
    expect(w.body.success).toBe(true);
    expect(readFileSync(path.join(home, "notes/n.txt"), "utf8")).toBe("external");
    expect(
      (await api("POST", `/v1/machines/${machineId}/files/read`, { parameters: { path: "notes/n.txt" } })).body.result
        .content,
    ).toBe("external");
    // DECISIONS "Compatibility amendments" (machines): absolute paths reach what the driver's user may touch
    const outside = path.join(tmp, `outside-${process.pid}.txt`);
    const wa = await api("POST", `/v1/machines/${machineId}/files/write`, {
      parameters: { path: outside, content: "absolute" },
    });
    expect(wa.body.success).toBe(true);
    expect(readFileSync(outside, "utf8")).toBe("absolute");
    const ra = await api("POST", `/v1/machines/${machineId}/files/read`, { parameters: { path: outside } });
    expect(ra.body.result.content).toBe("absolute");
  }, 60_000);

  it("a driver killed mid-command is restarted; the command is redelivered and completes", async () => {
    const before = JSON.parse(readFileSync(stateFile, "utf8")).cursor;
    const owner = api("POST", `/v1/machines/${machineId}/terminal`, {
      command: "sleep 3; echo run >> ~/count.txt; echo finished",
      timeout_ms: 30_000,
    });
    await until(
      async () => driverLog.includes('"command":"terminal_execute"') && driverLog.split("executing").length > 1,
      Boolean,
      10_000,
      "executing",
    );
    await new Promise((r) => setTimeout(r, 800));
    const logBefore = driverLog.length;
    driver!.kill("SIGKILL");
    await exitOf(driver!, 10_000);
    const cmd = await s.app.deps.db.machineCommand.findFirstOrThrow({
      where: { machineId, command: "terminal_execute" },
      orderBy: { seq: "desc" },
    });
    expect(cmd.status).toBe("delivered");
    startDriver();
    const r = await owner;
    expect(r.status, r.text).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.result.output).toContain("finished");
    expect(driverLog.slice(logBefore)).toContain("executing");
    const done = await s.app.deps.db.machineCommand.findUniqueOrThrow({ where: { id: cmd.id } });
    expect(done.deliveryCount).toBeGreaterThanOrEqual(2);
    const lines = readFileSync(path.join(home, "count.txt"), "utf8").trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(1);
    // the cursor moves on only once the command is processed
    await until(
      async () => JSON.parse(readFileSync(stateFile, "utf8")).cursor,
      (c) => Number(c) >= cmd.seq,
      10_000,
      "cursor persisted",
    );
    expect(Number(JSON.parse(readFileSync(stateFile, "utf8")).cursor)).toBeGreaterThan(Number(before));
    // and the restarted driver keeps serving
    const echo = await api("POST", `/v1/machines/${machineId}/terminal`, { command: "echo again" });
    expect(echo.body.result.output).toContain("again");
  }, 90_000);

  it("stop cancels and fences; start reopens the gate", async () => {
    expect((await api("POST", `/v1/machines/${machineId}/stop`)).body.status).toBe("stopped");
    envelope(
      await api("POST", `/v1/machines/${machineId}/actions`, { command: "move", parameters: { x: 3, y: 3 } }),
      409,
      "INVALID_STATE",
    );
    expect((await api("POST", `/v1/machines/${machineId}/start`)).body.status).toBe("running");
    const r = await api("POST", `/v1/machines/${machineId}/actions`, { command: "move", parameters: { x: 3, y: 3 } });
    expect(r.body, r.text).toMatchObject({ success: true });
  }, 60_000);

  it("DELETE revokes the device token: the driver stops (exit 3) and its token is refused", async () => {
    const token = JSON.parse(readFileSync(stateFile, "utf8")).device_token;
    const del = await api("DELETE", `/v1/machines/${machineId}`);
    expect(del.body.status).toBe("terminated");
    expect(await exitOf(driver!, 20_000)).toBe(3);
    envelope(
      await call(s.url, "POST", `/v1/machines/${machineId}/heartbeat`, {
        headers: { Authorization: `Bearer ${token}` },
        body: {},
      }),
      401,
      "INVALID_DEVICE_TOKEN",
    );
  }, 60_000);
});
