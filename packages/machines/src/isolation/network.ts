// One network namespace per machine (docs/security.md "Desktop isolation").
//
// Names derive from the machine's Linux user: 11 hex characters of sha256(user name) give the namespace
// `cuan-<hex>` and the host end of its veth pair `cuav<hex>` (15 characters, the kernel's limit). Inside,
// the peer is `eth0` with the second address of a /30 taken from the pool; the host end has the first
// and is the default route. The pool's /30 slots are claimed by creating /run/cua-isolation/slots/<n>
// exclusively (safe across processes). Inside the namespace, IPv6 is off and TCP to the forwarded port
// ranges (DevTools, VNC, websockify) arriving from the host is DNATed to the namespace's loopback, where
// those programs listen (Chromium ignores --remote-debugging-address outside headless mode). The
// namespace also filters its own egress (private, metadata and reserved ranges), behind the host's rules.

import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { run } from "../process-utils.ts";
import { egressRules, HOST_IF_PREFIX } from "./host-firewall.ts";

export const ISOLATION_RUN_DIR = "/run/cua-isolation";
const SLOT_DIR = path.join(ISOLATION_RUN_DIR, "slots");
export const NETNS_PREFIX = "cuan-";
const NETNS_DIR = "/run/netns";

export function isolationHex(userName: string): string {
  return createHash("sha256").update(userName).digest("hex").slice(0, 11);
}

export function netnsNameOf(userName: string): string {
  return `${NETNS_PREFIX}${isolationHex(userName)}`;
}

export function hostIfOf(userName: string): string {
  return `${HOST_IF_PREFIX}${isolationHex(userName)}`;
}

export interface Pool {
  base: number;
  slots: number;
  cidr: string;
}

/** Parses an IPv4 pool (prefix /8 to /28) split into /30 slots. */
export function parsePool(cidr: string): Pool {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(cidr);
  const octets = m ? m.slice(1, 5).map(Number) : [];
  const prefix = m ? Number(m[5]) : -1;
  if (!m || octets.some((o) => o > 255) || prefix < 8 || prefix > 28)
    throw new Error(`machine network pool ${cidr}: expected an IPv4 CIDR from /8 to /28`);
  const addr = octets.reduce((a, o) => a * 256 + o, 0);
  const size = 2 ** (32 - prefix);
  if (addr % size !== 0) throw new Error(`machine network pool ${cidr}: not aligned to its prefix`);
  return { base: addr, slots: size / 4, cidr };
}

function ipOf(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

export function slotAddresses(pool: Pool, slot: number): { host: string; machine: string } {
  const net = pool.base + slot * 4;
  return { host: ipOf(net + 1), machine: ipOf(net + 2) };
}

async function ip(args: string[]): Promise<void> {
  const r = await run("ip", args, { timeoutMs: 15_000 });
  if (r.code !== 0) throw new Error(`ip ${args.join(" ")}: ${r.stderr.trim() || `exit ${r.code}`}`);
}

async function slotOf(ns: string): Promise<number | null> {
  for (const f of await readdir(SLOT_DIR).catch(() => [] as string[])) {
    if (!/^\d+$/.test(f)) continue;
    const owner = await readFile(path.join(SLOT_DIR, f), "utf8").catch(() => "");
    if (owner.trim() === ns) return Number(f);
  }
  return null;
}

async function claimSlot(pool: Pool, ns: string): Promise<number> {
  await mkdir(SLOT_DIR, { recursive: true, mode: 0o700 });
  const start = Number.parseInt(ns.slice(NETNS_PREFIX.length), 16) % pool.slots;
  for (let i = 0; i < pool.slots; i++) {
    const slot = (start + i) % pool.slots;
    try {
      await writeFile(path.join(SLOT_DIR, String(slot)), ns, { flag: "wx", mode: 0o600 });
      return slot;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
  }
  throw new Error(`the machine network pool ${pool.cidr} is full`);
}

async function releaseSlots(ns: string): Promise<void> {
  for (;;) {
    const slot = await slotOf(ns);
    if (slot === null) return;
    await unlink(path.join(SLOT_DIR, String(slot))).catch(() => {});
  }
}

async function linkExists(name: string): Promise<boolean> {
  return existsSync(`/sys/class/net/${name}`);
}

export interface MachineNetwork {
  netns: string;
  netnsPath: string;
  hostIf: string;
  hostAddress: string;
  address: string;
}

/**
 * Creates the machine's namespace and veth pair, or re-adopts them when they are complete (a service
 * restart with the desktop running). Anything partial (a crash mid-setup) is removed and made afresh.
 */
export async function setupNetwork(
  userName: string,
  pool: Pool,
  forwardedPorts: [number, number][],
  dnsServers: string[],
  /** ports only the service may use (DevTools): refused to the machine's own processes */
  servicePorts: [number, number] | null = null,
): Promise<MachineNetwork> {
  const netns = netnsNameOf(userName);
  const hostIf = hostIfOf(userName);
  const netnsPath = path.join(NETNS_DIR, netns);
  const existing = await slotOf(netns);
  if (existing !== null && existsSync(netnsPath) && (await linkExists(hostIf))) {
    const a = slotAddresses(pool, existing);
    const shown = await run("ip", ["-o", "-4", "addr", "show", "dev", hostIf], { timeoutMs: 10_000 });
    if (shown.code === 0 && shown.stdout.toString().includes(` ${a.host}/30 `))
      return { netns, netnsPath, hostIf, hostAddress: a.host, address: a.machine };
  }
  await teardownNetwork(userName);
  const slot = await claimSlot(pool, netns);
  const a = slotAddresses(pool, slot);
  try {
    await ip(["netns", "add", netns]);
    await ip(["link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", netns]);
    await writeFile(`/proc/sys/net/ipv6/conf/${hostIf}/disable_ipv6`, "1").catch(() => {});
    await ip(["addr", "add", `${a.host}/30`, "dev", hostIf]);
    await ip(["link", "set", hostIf, "up"]);
    const ports = forwardedPorts.map(([lo, hi]) => `${lo}:${hi}`).join(",");
    const script = [
      "set -e",
      "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6",
      "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6",
      "echo 1 > /proc/sys/net/ipv4/conf/eth0/route_localnet",
      "ip link set lo up",
      `ip addr add ${a.machine}/30 dev eth0`,
      "ip link set eth0 up",
      `ip route add default via ${a.host}`,
      "iptables-restore", // the rules below, from stdin, in one transaction
    ].join("\n");
    // the namespace's own rules: DNAT of the forwarded ranges to its loopback; Chromium's DevTools is the
    // service's, so the machine's own processes are refused there (the DevTools guard, inside); and an
    // egress filter, a second wall behind the host's rules (the machine's user cannot change them: it
    // has no capability in this namespace)
    const rules = [
      "*nat",
      ...(ports
        ? [`-A PREROUTING -i eth0 -p tcp -m multiport --dports ${ports} -j DNAT --to-destination 127.0.0.1`]
        : []),
      "COMMIT",
      "*filter",
      ...(servicePorts
        ? [`-A OUTPUT -o lo -p tcp --dport ${servicePorts[0]}:${servicePorts[1]} -j REJECT --reject-with tcp-reset`]
        : []),
      ...egressRules(dnsServers).map((r) => `-A OUTPUT ${r.join(" ")}`),
      "COMMIT",
      "",
    ].join("\n");
    const r = await run("nsenter", [`--net=${netnsPath}`, "--", "/bin/sh", "-c", script], {
      timeoutMs: 20_000,
      input: rules,
    });
    if (r.code !== 0) throw new Error(`configuring ${netns}: ${r.stderr.trim() || `exit ${r.code}`}`);
  } catch (e) {
    await teardownNetwork(userName).catch(() => {});
    throw e;
  }
  return { netns, netnsPath, hostIf, hostAddress: a.host, address: a.machine };
}

/** Removes the namespace, its veth pair and its slot; idempotent. */
export async function teardownNetwork(userName: string): Promise<void> {
  await teardownByName(netnsNameOf(userName), hostIfOf(userName));
}

async function teardownByName(netns: string, hostIf: string): Promise<void> {
  if (existsSync(path.join(NETNS_DIR, netns))) await run("ip", ["netns", "del", netns], { timeoutMs: 15_000 });
  // the pair outlives `netns del` while a process still holds the namespace: delete it from this end
  if (await linkExists(hostIf)) await run("ip", ["link", "del", hostIf], { timeoutMs: 15_000 });
  await releaseSlots(netns);
}

/**
 * Removes namespaces, veths and slots of machines whose Linux user no longer exists (a crash between a
 * terminate's steps, a killed test run). `live()` answers isolationHex() of every existing user; it is
 * asked after the listing, so a machine another process creates meanwhile (its user comes first) is kept.
 */
export async function sweepNetworks(live: () => Promise<Set<string>>): Promise<string[]> {
  const removed: string[] = [];
  const names = await readdir(NETNS_DIR).catch(() => [] as string[]);
  const hexes = new Set<string>();
  for (const n of names) if (n.startsWith(NETNS_PREFIX)) hexes.add(n.slice(NETNS_PREFIX.length));
  for (const l of await readdir("/sys/class/net").catch(() => [] as string[]))
    if (l.startsWith(HOST_IF_PREFIX)) hexes.add(l.slice(HOST_IF_PREFIX.length));
  const liveHex = await live();
  for (const hex of hexes) {
    if (!/^[0-9a-f]{11}$/.test(hex) || liveHex.has(hex)) continue;
    await teardownByName(`${NETNS_PREFIX}${hex}`, `${HOST_IF_PREFIX}${hex}`);
    removed.push(`${NETNS_PREFIX}${hex}`);
  }
  // slots whose namespace is gone, claimed more than a minute ago (not one being set up right now)
  for (const f of await readdir(SLOT_DIR).catch(() => [] as string[])) {
    const file = path.join(SLOT_DIR, f);
    const owner = (await readFile(file, "utf8").catch(() => "")).trim();
    const age = Date.now() - ((await stat(file).catch(() => null))?.mtimeMs ?? Date.now());
    if (age > 60_000 && !existsSync(path.join(NETNS_DIR, owner))) await unlink(file).catch(() => {});
  }
  return removed;
}
