// Desktop isolation on real desktops (issue 10 failure 4; docs/security.md "Desktop isolation"): each
// machine runs in its own network and mount namespace. From a machine's terminal the host's PostgreSQL,
// Redis and other loopback services, the host's own addresses, private and metadata ranges, other
// machines, the service's files and other machines' homes are all out of reach, while the desktop is
// still driven (browser, click, screenshot) and reaches "the internet" (a public-range address in a
// separate namespace, see isolation/test-internet.ts). Needs root and the desktop packages.

import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { CoreError } from "@cua/base/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostIfOf, isolationHex, netnsNameOf } from "../src/isolation/network.ts";
import { startTestInternet, type TestInternet } from "../src/isolation/test-internet.ts";
import { LocalDesktopProvider } from "../src/local-desktop-provider.ts";
import type { MachineHandle } from "../src/provider.ts";

if (process.getuid?.() !== 0 || !existsSync("/usr/bin/Xvfb"))
  throw new Error("isolation tests need root and the packages of scripts/install-desktop-deps.sh");

const FIRST_DISPLAY = 500 + (process.pid % 100);
const REPO_ROOT = path.resolve(import.meta.dirname, "../../..");

const PAGE = `<!doctype html><html><head><title>Isolated page</title></head><body style="margin:0">
<button id="btn" style="position:absolute;left:100px;top:100px;width:200px;height:60px"
  onclick="document.getElementById('out').textContent='clicked'">Press</button>
<div id="out" style="position:absolute;left:100px;top:200px">idle</div></body></html>`;

function hostAddress(): string {
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? [])
      if (a.family === "IPv4" && !a.internal && !a.address.startsWith("198.51.100.")) return a.address;
  throw new Error("this host has no non-loopback IPv4 address");
}

/** Whether a TCP connect succeeds from the test process (the host's own view). */
function hostCanConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(2000, () => done(false));
    s.once("connect", () => done(true));
    s.once("error", () => resolve(false));
  });
}

async function term(
  p: LocalDesktopProvider,
  h: MachineHandle,
  command: string,
): Promise<{ output: string; code: number }> {
  const r = await p.terminal(h, { command, timeout_ms: 30_000 });
  return { output: String(r.result.output ?? ""), code: Number(r.result.exit_code ?? -1) };
}

/** A TCP connect from inside the machine: "open" or "closed" (bash /dev/tcp, 4 s bound). */
async function probe(p: LocalDesktopProvider, h: MachineHandle, host: string, port: number): Promise<string> {
  const r = await term(
    p,
    h,
    `timeout 4 bash -c 'exec 3<>/dev/tcp/${host}/${port}' 2>/dev/null && echo open || echo closed`,
  );
  return r.output.trim();
}

describe("machine isolation (real desktops, network and mount namespaces)", () => {
  let root: string;
  let dataDir: string;
  let provider: LocalDesktopProvider;
  let a: MachineHandle;
  let b: MachineHandle;
  let inet: TestInternet;
  let page: http.Server;
  let pageSock: string;
  let api: net.Server;
  let base: string;
  // outside /tmp (each machine's /tmp is its own anyway): the cover itself is what is tested
  const secretFile = `/var/lib/cua-iso-secret-${process.pid}.env`;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "cua-iso-"));
    // the service's data directory, world-readable on purpose: the mount namespace alone must keep it out
    dataDir = await mkdtemp(path.join(os.tmpdir(), "cua-iso-data-"));
    await chmod(dataDir, 0o755);
    await writeFile(path.join(dataDir, "secrets.key"), "0123456789abcdef\n", { mode: 0o644 });
    // an operator's secrets file elsewhere, listed in MACHINE_HIDDEN_PATHS
    await writeFile(secretFile, "HOST_SECRET=fedcba\n", { mode: 0o644 });
    inet = await startTestInternet();
    pageSock = path.join(dataDir, "page.sock");
    page = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(PAGE);
    });
    await new Promise<void>((r) => page.listen(pageSock, r));
    base = await inet.expose(pageSock);
    // stands in for the API: listening on every host address
    api = net.createServer((s) => s.on("error", () => {}).end("api\n"));
    await new Promise<void>((r) => api.listen(0, "0.0.0.0", r));
    provider = new LocalDesktopProvider({
      rootDir: root,
      displayRange: [FIRST_DISPLAY, 899],
      hiddenPaths: [dataDir, REPO_ROOT, secretFile],
    });
    const id = process.pid.toString(16);
    [a, b] = await Promise.all([
      provider.provision({ machineId: `mch_iso_${id}a`, displayName: "a", screen: { width: 1024, height: 768 } }),
      provider.provision({ machineId: `mch_iso_${id}b`, displayName: "b", desktopEnabled: false }),
    ]);
  });

  afterAll(async () => {
    for (const h of [a, b]) if (h) await provider.terminate(h).catch(() => {});
    await provider?.close();
    page?.close();
    api?.close();
    await inet?.close();
    await rm(root, { recursive: true, force: true });
    await rm(dataDir, { recursive: true, force: true });
    await rm(secretFile, { force: true });
  });

  it("machines run in their own network namespace, as their own user", async () => {
    expect(a.net_address).toMatch(/^10\.231\.\d+\.\d+$/);
    expect(b.net_address).toMatch(/^10\.231\.\d+\.\d+$/);
    expect(existsSync(`/run/netns/${netnsNameOf(String(a.user))}`)).toBe(true);
    const ip = await term(provider, a, "id -u; id -G; ip -4 -o addr show | awk '{print $2, $4}'");
    const [uid, groups, ...addrs] = ip.output.trim().split("\n");
    expect(Number(uid)).toBe(a.uid);
    expect(groups).toBe(String(a.gid));
    expect(addrs.sort()).toEqual([`eth0 ${a.net_address}/30`, "lo 127.0.0.1/8"]);
    const procs = await provider.processes(a);
    const xvfb = procs.find((p) => p.role === "xvfb");
    expect(xvfb).toBeDefined();
    const chromium = procs.find((p) => p.role === "chromium")!.pid;
    for (const kind of ["net", "mnt", "ipc"]) {
      const nsOf = (pid: number | string) =>
        execFileSync("readlink", [`/proc/${pid}/ns/${kind}`])
          .toString()
          .trim();
      expect(nsOf(xvfb!.pid), kind).not.toBe(nsOf("self"));
      expect(nsOf(chromium), kind).toBe(nsOf(xvfb!.pid));
    }
    // System V shared memory (X clients' MIT-SHM buffers) is the machine's own: the host's segments
    // (PostgreSQL's here) are not listed
    expect(execFileSync("ipcs", ["-m"]).toString()).toMatch(/postgres/);
    expect((await term(provider, a, "ipcs -m")).output).not.toMatch(/postgres/);
  });

  it("the terminal cannot reach the host's PostgreSQL, Redis or API, on loopback or the host's address", async () => {
    const host = hostAddress();
    const apiPort = (api.address() as net.AddressInfo).port;
    // the services are there: the host itself reaches them
    expect(await hostCanConnect("127.0.0.1", 5432)).toBe(true);
    expect(await hostCanConnect("127.0.0.1", 6379)).toBe(true);
    expect(await hostCanConnect(host, apiPort)).toBe(true);
    for (const [h, port] of [
      ["127.0.0.1", 5432],
      ["127.0.0.1", 6379],
      ["127.0.0.1", apiPort],
      [host, 5432],
      [host, 6379],
      [host, apiPort],
      ["10.231.0.1", 22],
    ] as const) {
      expect(`${h}:${port} ${await probe(provider, a, h, port)}`).toBe(`${h}:${port} closed`);
    }
    const psql = await term(provider, a, "psql -h 127.0.0.1 -U postgres -c 'select 1' 2>&1; echo exit=$?");
    expect(psql.output).toMatch(/Connection refused|could not connect/);
    expect(psql.output).toContain("exit=2");
    // the unix socket too: /run is an empty file system in the machine's mount namespace
    const sock = await term(provider, a, "psql -U postgres -c 'select 1' 2>&1; ls /run/postgresql 2>&1; echo exit=$?");
    expect(sock.output).toMatch(/No such file or directory/);
    expect(sock.output).not.toContain("?column?");
    const redis = await term(provider, a, `redis-cli -h 127.0.0.1 ping 2>&1; redis-cli -h ${host} ping 2>&1`);
    expect(redis.output).not.toContain("PONG");
  });

  it("private, metadata and other machines' addresses are unreachable", async () => {
    for (const [h, port] of [
      ["169.254.169.254", 80],
      ["10.0.0.1", 80],
      ["172.16.0.1", 80],
      ["192.168.0.1", 80],
      ["100.64.0.1", 80],
      [String(a.net_address), Number(a.devtools_port)], // machine b -> machine a's DevTools
    ] as const) {
      expect(`${h}:${port} ${await probe(provider, b, h, port)}`).toBe(`${h}:${port} closed`);
    }
    // where users still share a world-writable directory, links and FIFOs another user planted are not followed
    const prot = await term(provider, a, "cat /proc/sys/fs/protected_symlinks /proc/sys/fs/protected_regular");
    expect(prot.output.trim().split("\n")).toEqual(["1", "1"]);
    // no IPv6 at all inside (so fc00::/7, fe80::/10 and the host's ::1 are out of reach)
    const v6 = await term(provider, a, "cat /proc/sys/net/ipv6/conf/all/disable_ipv6");
    expect(v6.output.trim()).toBe("1");
  });

  it("the service's files, other machines' homes and other users' processes are invisible", async () => {
    await writeFile(path.join(String(b.home_dir), "note.txt"), "b's note\n", { mode: 0o644 });
    const r = await term(
      provider,
      a,
      [
        `cat ${dataDir}/secrets.key 2>&1`,
        // empty, or (here, where it lies in /tmp) absent from the machine's own /tmp
        `ls -A ${dataDir} 2>/dev/null | wc -l`,
        `cat ${b.home_dir}/note.txt 2>&1`,
        `ls -A ${root} 2>&1`,
        `cat ${REPO_ROOT}/package.json 2>&1 | head -c 300`,
        "ls -A /root /run /home",
        "ps -e -o user= | sort -u",
      ].join("; echo ---; "),
    );
    const [secret, dataList, other, rootList, repo, hostDirs, users] = r.output.split("---\n").map((s) => s.trim());
    expect(secret).toMatch(/No such file or directory/);
    expect(dataList).toBe("0");
    expect(other).toMatch(/No such file or directory/);
    // only its own home (and runtime directory) are there
    expect(rootList!.split(/\s+/).sort()).toEqual([".runtime", String(a.user)].sort());
    expect(repo).toMatch(/No such file or directory/);
    expect(hostDirs).toBe("/home:\n\n/root:\n\n/run:"); // empty
    expect(users).toBe(String(a.user));
    // a user namespace of its own does not lift the covers (the kernel locks mounts that came from the
    // more privileged namespace together)
    const lift = await term(
      provider,
      a,
      `unshare -Urm sh -c 'umount -l /run; umount -l ${dataDir}; cat ${dataDir}/secrets.key; ls /run/postgresql' 2>&1`,
    );
    expect(lift.output).not.toContain("0123456789abcdef");
    expect(lift.output).not.toContain(".s.PGSQL");
    // the other machines' users (their comments carry machine ids) are not in its /etc/passwd
    expect(execFileSync("getent", ["passwd", String(b.user)]).toString()).toContain("cua machine");
    const accounts = await term(provider, a, `grep -c 'cua machine' /etc/passwd; id ${b.user} 2>&1; whoami`);
    const [count, otherUser, self] = accounts.output.trim().split("\n");
    expect([count, self]).toEqual(["1", String(a.user)]);
    expect(otherUser).toMatch(/no such user/);
    // a hidden file reads as empty
    expect((await term(provider, a, `wc -c < ${secretFile}`)).output.trim()).toBe("0");
    // its own home works as before
    const own = await term(provider, a, "echo hi > ~/mine.txt && cat ~/mine.txt && pwd");
    expect(own.output.trim()).toBe(`hi\n${a.home_dir}`);
  });

  it("the desktop is still driven and reaches the internet (a public address in another namespace)", async () => {
    const nav = await provider.browser(a, "navigate", { url: `${base}/` });
    expect(nav.success).toBe(true);
    const els = (await provider.browser(a, "clickables", {})).result.elements as {
      selector: string;
      screen_x: number;
      screen_y: number;
    }[];
    const btn = els.find((e) => e.selector === "#btn")!;
    expect((await provider.execute(a, "click", { x: btn.screen_x, y: btn.screen_y })).success).toBe(true);
    let text = "";
    for (let i = 0; i < 40 && text !== "clicked"; i++) {
      text = String((await provider.browser(a, "dom", { selector: "#out" })).result.text);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(text).toBe("clicked");
    const shot = await provider.screenshot(a);
    expect(shot.width).toBe(1024);
    const curl = await term(provider, b, `curl -s -m 5 ${base}/ | grep -o 'Isolated page'`);
    expect(curl.output.trim()).toBe("Isolated page");
    // the file op `download` runs curl inside the machine as well
    const dl = await provider.files(a, "download", { url: `${base}/`, filename: "page.html" });
    expect(dl.success).toBe(true);
  });

  it("reaches the real internet exactly when the host does (DNS through the host's resolver, HTTPS)", async () => {
    // whatever this host can reach (here: the npm registry and its resolver), a machine reaches too;
    // with no network on the host both sides fail alike
    const host = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: "utf8", timeout: 20_000 });
    const hostDns = host("getent", ["hosts", "registry.npmjs.org"]).status === 0;
    const hostHttp = host("curl", [
      "-s",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code}",
      "-m",
      "10",
      "https://registry.npmjs.org/",
    ]);
    const dns = await term(provider, b, "getent hosts registry.npmjs.org >/dev/null && echo resolved || echo failed");
    expect(dns.output.trim()).toBe(hostDns ? "resolved" : "failed");
    const http = await term(provider, b, "curl -s -o /dev/null -w '%{http_code}' -m 10 https://registry.npmjs.org/");
    expect(http.output.trim()).toBe(hostHttp.stdout.trim());
  });

  it("VNC and noVNC are reached through the host's forwarders", async () => {
    const c = await provider.connection(a);
    const banner = await new Promise<string>((resolve, reject) => {
      const s = net.connect({ host: "127.0.0.1", port: c.vnc_port! });
      s.once("data", (d) => {
        s.destroy();
        resolve(d.toString());
      });
      s.once("error", reject);
    });
    expect(banner).toMatch(/^RFB 003\.00\d/);
    const novnc = await fetch(`http://127.0.0.1:${a.websocket_port}/vnc.html`);
    expect(novnc.status).toBe(200);
  });

  it("stop and terminate remove the namespaces, the veth and the address slot", async () => {
    const user = String(b.user);
    const stopped = await provider.stop(b);
    expect(stopped.net_address).toBeNull();
    expect(existsSync(`/run/netns/${netnsNameOf(user)}`)).toBe(false);
    // rules removed behind the service's back (a firewall reload) are put back by the next start
    execFileSync("iptables", ["-w", "10", "-D", "INPUT", "-i", "cuav+", "-j", "CUA-ISO-IN"]);
    b = await provider.start(stopped);
    expect(existsSync(`/run/netns/${netnsNameOf(user)}`)).toBe(true);
    expect(() =>
      execFileSync("iptables", ["-w", "10", "-C", "INPUT", "-i", "cuav+", "-j", "CUA-ISO-IN"]),
    ).not.toThrow();
    await provider.terminate(b);
    expect(existsSync(`/run/netns/${netnsNameOf(user)}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${hostIfOf(user)}`)).toBe(false);
    const slots = await readdir("/run/cua-isolation/slots");
    for (const s of slots) {
      const owner = execFileSync("cat", [`/run/cua-isolation/slots/${s}`]).toString();
      expect(owner).not.toBe(netnsNameOf(user));
    }
    b = undefined as unknown as MachineHandle;
  });

  it("namespaces left by a crash are swept at the next start (reconcile)", async () => {
    const ghost = "cua-000000000000"; // no such user
    const ns = netnsNameOf(ghost);
    execFileSync("ip", ["netns", "add", ns]);
    execFileSync("ip", ["link", "add", hostIfOf(ghost), "type", "veth", "peer", "name", "eth0", "netns", ns]);
    await writeFile("/run/cua-isolation/slots/16383", ns);
    const old = new Date(Date.now() - 120_000);
    await utimes("/run/cua-isolation/slots/16383", old, old);
    const fresh = new LocalDesktopProvider({ rootDir: root, displayRange: [FIRST_DISPLAY, 899] });
    await fresh.reconcile([]);
    expect(existsSync(`/run/netns/${ns}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${hostIfOf(ghost)}`)).toBe(false);
    expect(existsSync("/run/cua-isolation/slots/16383")).toBe(false);
    expect(isolationHex(ghost)).toHaveLength(11);
    // the live machine's namespace is untouched
    expect(existsSync(`/run/netns/${netnsNameOf(String(a.user))}`)).toBe(true);
    expect(await probe(provider, a, "127.0.0.1", 5432)).toBe("closed");
  });

  it("fails closed: a machine that cannot be isolated does not start, and leaves nothing behind", async () => {
    // a pool of 4 addresses, all taken: the namespace cannot be built
    const full = new LocalDesktopProvider({
      rootDir: root,
      displayRange: [FIRST_DISPLAY, 899],
      isolationPool: "10.232.0.0/28",
    });
    const taken: string[] = [];
    for (let s = 0; s < 4; s++) {
      const f = `/run/cua-isolation/slots/${s}`;
      if (!existsSync(f)) {
        await writeFile(f, `cuan-taken${s}`);
        taken.push(f);
      }
    }
    try {
      const id = `mch_iso_${process.pid.toString(16)}c`;
      const err = await full.provision({ machineId: id, displayName: "c", desktopEnabled: false }).then(
        () => null,
        (e) => e,
      );
      expect(err).toBeInstanceOf(CoreError);
      expect((err as CoreError).code).toBe("UPSTREAM_UNAVAILABLE");
      expect((err as CoreError).message).toContain("cannot start isolated");
      expect((err as CoreError).message).toContain("MACHINE_ISOLATION=none");
      expect(existsSync(`/run/netns/${netnsNameOf(full.userNameFor(id))}`)).toBe(false);
      expect(() => execFileSync("id", ["-u", full.userNameFor(id)], { stdio: "ignore" })).toThrow();
    } finally {
      for (const f of taken) await rm(f, { force: true });
    }
  });

  it("the opt-out is explicit and visible in readiness", () => {
    const off = new LocalDesktopProvider({ rootDir: root, isolation: "none" });
    expect(off.readiness().isolation).toMatchObject({ mode: "none" });
    expect(off.readiness().isolation.detail).toContain("MACHINE_ISOLATION=none");
    expect(provider.readiness().isolation).toMatchObject({ mode: "namespaces", available: true });
  });
});
