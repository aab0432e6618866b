// Issue 10, failure 4 through the API (docs/security.md "Desktop isolation"): a live machine's terminal
// (POST /v1/machines/{id}/terminal) tries the service's PostgreSQL (TCP and unix socket), Redis, the API
// itself, a metadata address and the service's files (DATA_DIR/secrets.key, the repository's files):
// every attempt fails, while the same desktop is still driven (navigate, click, screenshot) and reaches
// a page on the stand-in internet (isolation/test-internet.ts).

import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { removeDevtoolsGuard } from "@cua/machines/devtools-guard";
import { cgroupDirs, detectCgroups } from "@cua/machines/isolation/cgroup";
import { netnsNameOf } from "@cua/machines/isolation/network";
import { startTestInternet, type TestInternet } from "@cua/machines/isolation/test-internet";
import { DEFAULT_PORT_BASES } from "@cua/machines/local-desktop-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, REPO_ROOT, startTestServer, type TestServer } from "./helpers.ts";

if (process.getuid?.() !== 0 || !existsSync("/usr/bin/Xvfb") || !existsSync("/usr/bin/chromium"))
  throw new Error("isolation tests need root and the packages of scripts/install-desktop-deps.sh");

const PAGE = `<!doctype html><html><head><title>Outside page</title></head><body style="margin:0">
<button id="btn" style="position:absolute;left:80px;top:80px;width:200px;height:60px"
  onclick="document.getElementById('out').textContent='clicked'">Press</button>
<div id="out" style="position:absolute;left:80px;top:200px">idle</div></body></html>`;

let s: TestServer;
let root: string;
let page: http.Server;
let inet: TestInternet;
let base: string;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let id: string;
let lo = 0;
let dataDirMode = 0;

const api = (method: string, p: string, body?: unknown) => call(s.url, method, p, { key: acct.live_key, body });
const term = async (command: string, on = id, timeout_ms = 30_000): Promise<string> => {
  const r = await api("POST", `/v1/machines/${on}/terminal`, { command, timeout_ms });
  expect(r.status, r.text).toBe(200);
  expect(typeof r.body, `the terminal's answer: ${JSON.stringify(r.text)}`).toBe("object");
  return String(r.body.result.output);
};

describe("a live machine cannot reach the service (SPEC Machines; issue 10 failure 4)", () => {
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "cua-api-iso-"));
    const sock = path.join(os.tmpdir(), `cua-iso-page-${process.pid}.sock`);
    await rm(sock, { force: true });
    page = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(PAGE);
    });
    await new Promise<void>((r) => page.listen(sock, r));
    inet = await startTestInternet();
    base = await inet.expose(sock);
    lo = 600 + (process.pid % 150);
    s = await startTestServer({
      MACHINES_ROOT: root,
      MACHINE_DISPLAY_RANGE: `${lo}-${lo + 100}`,
      MACHINE_METER_INTERVAL_MS: "3600000",
      // small limits, so that the fork bomb and the memory hog below hit them quickly
      MACHINE_PIDS_MAX: "1024",
      MACHINE_MEMORY_MAX: "1536m",
    });
    dataDirMode = (await stat(s.dataDir)).mode & 0o777;
    // the service's key file, world-readable on purpose: the machine's mount namespace alone keeps it out
    await chmod(s.dataDir, 0o755);
    await writeFile(path.join(s.dataDir, "secrets.key"), `${"ab".repeat(32)}\n`, { mode: 0o644 });
    acct = await s.account({ credits: 1000 });
    const r = await api("POST", "/v1/machines", { display_name: "iso", screen_width: 1024, screen_height: 768 });
    expect(r.status).toBe(202);
    id = r.body.machine.id;
    for (let i = 0; i < 600; i++) {
      if ((await api("GET", `/v1/machines/${id}`)).body.status !== "provisioning") break;
      await new Promise((res) => setTimeout(res, 100));
    }
    expect((await api("GET", `/v1/machines/${id}`)).body.status).toBe("running");
  }, 120_000);

  afterAll(async () => {
    if (id) await api("DELETE", `/v1/machines/${id}`).catch(() => {});
    await s?.stop();
    if (lo) await removeDevtoolsGuard([DEFAULT_PORT_BASES.devtools + lo, DEFAULT_PORT_BASES.devtools + lo + 100]);
    page?.close();
    await inet?.close();
    if (root) await rm(root, { recursive: true, force: true });
  }, 60_000);

  it("the terminal cannot reach PostgreSQL, Redis, the API or a metadata address", async () => {
    const apiPort = new URL(s.url).port;
    const probe = (host: string, port: string | number) =>
      `timeout 4 bash -c 'exec 3<>/dev/tcp/${host}/${port}' 2>/dev/null && echo "${host}:${port} open" || echo "${host}:${port} closed"`;
    const out = await term(
      [
        probe("127.0.0.1", 5432),
        probe("127.0.0.1", 6379),
        probe("127.0.0.1", apiPort),
        probe("169.254.169.254", 80),
        probe("10.255.255.1", 80),
      ].join("; "),
    );
    expect(out.trim().split("\n")).toEqual([
      "127.0.0.1:5432 closed",
      "127.0.0.1:6379 closed",
      `127.0.0.1:${apiPort} closed`,
      "169.254.169.254:80 closed",
      "10.255.255.1:80 closed",
    ]);
    // the way the tester did it, over TCP and over the unix socket
    const psql = await term(
      "psql -h 127.0.0.1 -U postgres -Atc 'select count(*) from pg_database' 2>&1; psql -U postgres -Atc 'select 1' 2>&1",
    );
    expect(psql).toMatch(/Connection refused/);
    expect(psql).toMatch(/No such file or directory/);
    expect(psql).not.toMatch(/^\d+$/m);
    expect(await term("redis-cli -h 127.0.0.1 ping 2>&1")).not.toContain("PONG");
    // the service itself, from the host, still works
    expect((await call(s.url, "GET", "/v1/machines/health", {})).status).toBe(200);
  });

  it("the service's files are invisible: DATA_DIR/secrets.key and the repository", async () => {
    // underneath, the service keeps DATA_DIR to itself (the homes are elsewhere here: 0700)
    expect(dataDirMode.toString(8)).toBe("700");
    const out = await term(
      `cat ${s.dataDir}/secrets.key 2>&1; echo ---; cat ${REPO_ROOT}/package.json 2>&1 | head -c 200; echo ---; ls -A ${root}`,
    );
    const [secret, repo, homes] = out.split("---\n").map((x) => x.trim());
    expect(secret).toMatch(/No such file or directory/);
    expect(secret).not.toContain("abab");
    expect(repo).toMatch(/No such file or directory/);
    // the machines' root holds just this machine's own home and runtime directory
    expect(homes!.split(/\s+/)).toHaveLength(2);
  });

  it("the same desktop is still driven: navigate to an internet page, click, screenshot", async () => {
    const nav = await api("POST", `/v1/machines/${id}/browser/navigate`, { parameters: { url: `${base}/` } });
    expect(nav.body).toMatchObject({ success: true, result: { title: "Outside page" } });
    const els = (await api("POST", `/v1/machines/${id}/browser/clickables`, { parameters: {} })).body.result
      .elements as { selector: string; screen_x: number; screen_y: number }[];
    const btn = els.find((e) => e.selector === "#btn")!;
    const click = await api("POST", `/v1/machines/${id}/actions`, {
      command: "click",
      parameters: { x: btn.screen_x, y: btn.screen_y },
    });
    expect(click.body.success).toBe(true);
    let text = "";
    for (let i = 0; i < 50 && text !== "clicked"; i++) {
      text = String(
        (await api("POST", `/v1/machines/${id}/browser/dom`, { parameters: { selector: "#out" } })).body.result?.text,
      );
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(text).toBe("clicked");
    const shot = await api("GET", `/v1/machines/${id}/screenshot`);
    expect(shot.status).toBe(200);
  });

  it("a fork bomb and a memory hog stay inside their machine: the API answers, another machine works, /tmp is not shared", async () => {
    const r = await api("POST", "/v1/machines", { display_name: "iso-2", screen_width: 800, screen_height: 600 });
    expect(r.status).toBe(202);
    const other = r.body.machine.id as string;
    try {
      for (let i = 0; i < 600; i++) {
        if ((await api("GET", `/v1/machines/${other}`)).body.status !== "provisioning") break;
        await new Promise((res) => setTimeout(res, 100));
      }
      // files in /tmp and /dev/shm are the machine's own
      await term("echo mine > /tmp/cua-note && echo mine > /dev/shm/cua-note && echo written");
      expect(await term("cat /tmp/cua-note /dev/shm/cua-note 2>&1", other)).toMatch(/No such file.*\n.*No such file/);
      // python forks children that sleep 30 s (output detached) until fork fails at MACHINE_PIDS_MAX
      const bomb = await term(
        `python3 -c 'import os,time
n=0
try:
  for i in range(5000):
    if os.fork()==0:
      fd=os.open("/dev/null",os.O_RDWR); [os.dup2(fd,k) for k in (0,1,2)]; time.sleep(30); os._exit(0)
    n+=1
  print("forked",n)
except OSError as e: print("refused after",n,"errno",e.errno)'`,
      );
      expect(bomb).toMatch(/refused after \d+ errno 11/);
      const forked = Number(/refused after (\d+)/.exec(bomb)![1]);
      expect(forked).toBeLessThan(1024);
      // while every task of the machine is taken: the service answers, the other machine runs commands
      expect((await call(s.url, "GET", "/v1/machines/health", {})).status).toBe(200);
      expect(await term("for i in $(seq 20); do /bin/true; done; echo other-works", other)).toContain("other-works");
      expect((await api("GET", `/v1/machines/${id}/screenshot`)).status).toBe(200);
      // ...while the sleepers still held the machine's tasks
      const row = await s.app.deps.db.machine.findUniqueOrThrow({ where: { id } });
      const pidsDir = cgroupDirs(detectCgroups(), netnsNameOf(String((row.handle as { user?: string }).user)))[0]!;
      expect(Number(readFileSync(path.join(pidsDir, "pids.current"), "utf8"))).toBeGreaterThan(forked);
      // once the sleepers end, the machine runs commands again
      let again = "";
      for (let i = 0; i < 60 && !again.includes("again"); i++) {
        await new Promise((res) => setTimeout(res, 1000));
        const t = await api("POST", `/v1/machines/${id}/terminal`, { command: "echo again", timeout_ms: 5000 });
        again = String(t.body?.result?.output ?? "");
      }
      expect(again).toContain("again");
      // tail keeps everything it reads: the kernel kills it inside the machine's 1.5 GiB
      // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's own ${PIPESTATUS[*]}
      const hog = await term("head -c 3G /dev/zero | tail; echo status=${PIPESTATUS[*]}", id, 120_000);
      expect(hog).toMatch(/status=\d+ 137/);
      expect(await term("echo alive")).toContain("alive");
      expect(await term("echo alive", other)).toContain("alive");
      expect((await call(s.url, "GET", "/v1/machines/health", {})).status).toBe(200);
    } finally {
      await api("DELETE", `/v1/machines/${other}`);
    }
  }, 240_000);

  it("DELETE removes the machine's namespaces and cgroup with its user", async () => {
    const row = await s.app.deps.db.machine.findUniqueOrThrow({ where: { id } });
    const user = String((row.handle as { user?: string }).user);
    expect(existsSync(`/run/netns/${netnsNameOf(user)}`)).toBe(true);
    const cgroups = cgroupDirs(detectCgroups(), netnsNameOf(user));
    expect(cgroups.every((d) => existsSync(d))).toBe(true);
    const del = await api("DELETE", `/v1/machines/${id}`);
    expect(del.status).toBeLessThan(300);
    for (let i = 0; i < 300 && existsSync(`/run/netns/${netnsNameOf(user)}`); i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(`/run/netns/${netnsNameOf(user)}`)).toBe(false);
    expect(cgroups.some((d) => existsSync(d))).toBe(false);
  });
});

describe("a host that cannot isolate machines fails them closed (issue 10 failure 4)", () => {
  let s2: TestServer;
  let root2: string;
  let closedMachine: { id: string; key: string } | null = null;
  const taken: string[] = [];

  beforeAll(async () => {
    root2 = await mkdtemp(path.join(os.tmpdir(), "cua-api-iso-full-"));
    // a pool of 4 links whose slots are all taken: no machine can get a network namespace
    await mkdir("/run/cua-isolation/slots", { recursive: true, mode: 0o700 });
    for (let slot = 0; slot < 4; slot++) {
      const f = `/run/cua-isolation/slots/${slot}`;
      if (!existsSync(f)) {
        await writeFile(f, `cuan-taken-by-test-${process.pid}`);
        taken.push(f);
      }
    }
    s2 = await startTestServer({
      MACHINES_ROOT: root2,
      MACHINE_DISPLAY_RANGE: `${760 + (process.pid % 100)}-${860 + (process.pid % 30)}`,
      MACHINE_METER_INTERVAL_MS: "3600000",
      MACHINE_ISOLATION_POOL: "10.232.0.0/28",
    });
  }, 120_000);

  afterAll(async () => {
    for (const f of taken) await rm(f, { force: true });
    if (closedMachine) await call(s2.url, "DELETE", `/v1/machines/${closedMachine.id}`, { key: closedMachine.key });
    await s2?.stop();
    if (root2) await rm(root2, { recursive: true, force: true });
  }, 60_000);

  it("the machine ends `error` saying why and how to opt out; health is not ready; nothing runs unisolated", async () => {
    const a2 = await s2.account({ credits: 1000 });
    const r = await call(s2.url, "POST", "/v1/machines", { key: a2.live_key, body: { display_name: "closed" } });
    expect(r.status).toBe(202);
    const mid = r.body.machine.id;
    closedMachine = { id: mid, key: a2.live_key };
    let m = await call(s2.url, "GET", `/v1/machines/${mid}`, { key: a2.live_key });
    for (let i = 0; i < 300 && m.body.status === "provisioning"; i++) {
      await new Promise((res) => setTimeout(res, 100));
      m = await call(s2.url, "GET", `/v1/machines/${mid}`, { key: a2.live_key });
    }
    expect(m.body.status).toBe("error");
    expect(m.body.status_message).toContain("cannot start isolated");
    expect(m.body.status_message).toContain("pool 10.232.0.0/28 is full");
    expect(m.body.status_message).toContain("MACHINE_ISOLATION=none");
    // no desktop process was left running for it
    const row = await s2.app.deps.db.machine.findUniqueOrThrow({ where: { id: mid } });
    const user = (row.handle as { user?: string } | null)?.user;
    if (user) expect(existsSync(`/run/netns/${netnsNameOf(user)}`)).toBe(false);
    const h = await call(s2.url, "GET", "/v1/machines/health", {});
    expect(h.body).toMatchObject({ managed_ready: false });
    expect(h.body.managed_detail).toContain("Machine isolation is unavailable");
  }, 120_000);
});
