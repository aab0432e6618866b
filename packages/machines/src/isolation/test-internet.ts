// A stand-in for "the internet" in tests of isolated machines (docs/security.md "What was tested").
//
// Isolated machines cannot reach the host's loopback, so a test page served on 127.0.0.1 is out of
// their reach, as it must be. Tests serve their pages instead from a separate network namespace with a
// public-range address (198.51.100.0/24, TEST-NET-2): a machine reaches it the way it reaches any
// internet host (forwarded and masqueraded by the host). The test's own HTTP server listens on a unix
// socket; a small forwarder inside that namespace (this Node binary) bridges TCP to it. Nothing here
// opens the host to the machines.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, unlink, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { run } from "../process-utils.ts";
import { ISOLATION_RUN_DIR } from "./network.ts";

const LOCK_DIR = path.join(ISOLATION_RUN_DIR, "test-internet");
const FORWARDER = `
const net = require("node:net");
const [addr, port, sock] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  const end = () => { c.destroy(); u.destroy(); };
  c.on("error", end).on("close", end); u.on("error", end).on("close", end);
  c.pipe(u); u.pipe(c);
}).listen(Number(port), addr, () => process.stdout.write("ready\\n"));
`;

export interface TestInternet {
  /** the namespace's "public" address */
  address: string;
  /** serves the unix socket (an HTTP server listening on it) at http://address:port; returns that base URL */
  expose(socketPath: string, port?: number): Promise<string>;
  close(): Promise<void>;
}

async function must(cmd: string, args: string[]): Promise<void> {
  const r = await run(cmd, args, { timeoutMs: 15_000 });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr.trim() || `exit ${r.code}`}`);
}

/** Creates the namespace (one /30 of 198.51.100.0/24 per caller, claimed with an exclusive lock file). */
export async function startTestInternet(): Promise<TestInternet> {
  await mkdir(LOCK_DIR, { recursive: true, mode: 0o700 });
  let k = -1;
  for (let i = 0; i < 64 && k < 0; i++) {
    const c = (process.pid + i) % 64;
    const lock = path.join(LOCK_DIR, String(c));
    // a slot whose test process is gone (killed mid-run) is free again
    const owner = Number(await readFile(lock, "utf8").catch(() => "0"));
    if (owner > 0 && owner !== process.pid && !existsSync(`/proc/${owner}`)) await unlink(lock).catch(() => {});
    try {
      await writeFile(lock, String(process.pid), { flag: "wx" });
      k = c;
    } catch {}
  }
  if (k < 0) throw new Error("no free test-internet slot");
  const ns = `cuat-${k}`;
  const hostIf = `cuatest${k}`;
  const hostAddr = `198.51.100.${4 * k + 1}`;
  const address = `198.51.100.${4 * k + 2}`;
  const forwarders: ChildProcess[] = [];
  const cleanup = async () => {
    for (const f of forwarders) f.kill("SIGKILL");
    if (existsSync(`/run/netns/${ns}`)) await run("ip", ["netns", "del", ns]);
    if (existsSync(`/sys/class/net/${hostIf}`)) await run("ip", ["link", "del", hostIf]);
    await unlink(path.join(LOCK_DIR, String(k))).catch(() => {});
  };
  try {
    if (existsSync(`/run/netns/${ns}`)) await run("ip", ["netns", "del", ns]);
    if (existsSync(`/sys/class/net/${hostIf}`)) await run("ip", ["link", "del", hostIf]);
    await must("ip", ["netns", "add", ns]);
    await must("ip", ["link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", ns]);
    await must("ip", ["addr", "add", `${hostAddr}/30`, "dev", hostIf]);
    await must("ip", ["link", "set", hostIf, "up"]);
    await must("ip", ["-n", ns, "addr", "add", `${address}/30`, "dev", "eth0"]);
    await must("ip", ["-n", ns, "link", "set", "eth0", "up"]);
    await must("ip", ["-n", ns, "link", "set", "lo", "up"]);
    await must("ip", ["-n", ns, "route", "add", "default", "via", hostAddr]);
  } catch (e) {
    await cleanup();
    throw e;
  }
  let nextPort = 8000;
  return {
    address,
    async expose(socketPath: string, port = nextPort++): Promise<string> {
      const child = spawn(
        "nsenter",
        [`--net=/run/netns/${ns}`, "--", process.execPath, "-e", FORWARDER, address, String(port), socketPath],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      forwarders.push(child);
      await new Promise<void>((resolve, reject) => {
        child.once("error", reject);
        child.once("exit", (code) => reject(new Error(`test-internet forwarder exited (${code})`)));
        child.stdout!.once("data", () => resolve());
      });
      // the host (and through it, the machines) reaches it
      await new Promise<void>((resolve, reject) => {
        const s = net.connect({ host: address, port }, () => {
          s.destroy();
          resolve();
        });
        s.once("error", reject);
      });
      return `http://${address}:${port}`;
    },
    close: cleanup,
  };
}
