// The host's netfilter rules for isolated machines (docs/security.md "Desktop isolation").
//
// Every machine's host-side veth is named cuav<11 hex>, so the rules match the interface wildcard
// `cuav+` and never need a per-machine rule: a crash cannot leave a stale per-machine rule behind.
// Each chain is replaced in one iptables-restore transaction, so installing is idempotent and safe
// from several processes: there is no moment with an empty chain (which would let packets through).
//
//   INPUT   -i cuav+  -> CUA-ISO-IN:     replies to connections the service opened; nothing else
//                                         reaches the host (its loopback services, its own addresses)
//   FORWARD -i cuav+  -> CUA-ISO-OUT:    not to another machine, not to private/reserved/metadata
//                                         ranges (except the host's DNS resolvers on port 53); the rest
//                                         is the internet and is accepted
//   FORWARD -o cuav+  -> CUA-ISO-BACK:   only replies come back in
//   OUTPUT  -o cuav+  -> CUA-ISO-HOST:   only the service's uid opens connections into a machine
//   POSTROUTING (nat) -> CUA-ISO-NAT:    masquerade the pool behind the host's address
//   ip6tables: INPUT/FORWARD -i cuav+ dropped (machines get no IPv6 address at all)
// Each machine's namespace filters its own egress as well (egressRules, installed by network.ts).

import type { RunResult } from "../process-utils.ts";
import { run } from "../process-utils.ts";

export const HOST_IF_PREFIX = "cuav";

/** IPv4 destinations a machine never reaches (RFC 6890 special-purpose, private and metadata ranges). */
export const BLOCKED_IPV4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16", // link-local, cloud metadata (169.254.169.254, 169.254.170.2)
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "224.0.0.0/4",
  "240.0.0.0/4",
] as const;

export type Exec = (
  cmd: "iptables" | "ip6tables" | "iptables-restore",
  args: string[],
  input?: string,
) => Promise<RunResult>;

const defaultExec: Exec = (cmd, args, input) =>
  run(cmd, cmd === "iptables-restore" ? args : ["-w", "10", ...args], {
    timeoutMs: 20_000,
    ...(input !== undefined ? { input } : {}),
  });

export interface HostFirewallOptions {
  /** the machines' address pool, e.g. 10.231.0.0/16 */
  pool: string;
  /** uid allowed to open connections into machines (the service) */
  serviceUid: number;
  /** DNS resolvers the machines may query on port 53 although they sit in a blocked range */
  dnsServers: string[];
}

async function must(exec: Exec, cmd: "iptables" | "ip6tables", args: string[]): Promise<void> {
  const r = await exec(cmd, args);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr.trim() || `exit ${r.code}`}`);
}

async function jump(exec: Exec, cmd: "iptables" | "ip6tables", table: string, builtin: string, rule: string[]) {
  if ((await exec(cmd, ["-t", table, "-C", builtin, ...rule])).code !== 0)
    await must(exec, cmd, ["-t", table, "-I", builtin, "1", ...rule]);
}

/** Rejects for a destination (or everything): a TCP reset for TCP, an ICMP error for the rest. */
function rejectTo(match: string[], icmp: string): string[][] {
  return [
    [...match, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],
    [...match, "-j", "REJECT", "--reject-with", icmp],
  ];
}

/** The rules a machine's own namespace applies to what it sends (a second wall behind the host's). */
export function egressRules(dnsServers: string[], extraBlocked: string[] = []): string[][] {
  return [
    ["-o", "lo", "-j", "ACCEPT"],
    ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"],
    ...dnsServers.flatMap((ns) => [
      ["-d", ns, "-p", "udp", "--dport", "53", "-j", "ACCEPT"],
      ["-d", ns, "-p", "tcp", "--dport", "53", "-j", "ACCEPT"],
    ]),
    ...[...BLOCKED_IPV4, ...extraBlocked].flatMap((cidr) => rejectTo(["-d", cidr], "icmp-net-prohibited")),
  ];
}

/** The filter chains' content, as iptables-restore input that replaces them in one transaction. */
export function filterRules(o: HostFirewallOptions): string {
  const ifs = `${HOST_IF_PREFIX}+`;
  const chains: Record<string, string[][]> = {
    "CUA-ISO-IN": [
      ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"],
      ...rejectTo([], "icmp-port-unreachable"),
    ],
    "CUA-ISO-OUT": [
      ...rejectTo(["-o", ifs], "icmp-admin-prohibited"),
      ["-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP"],
      ...egressRules(o.dnsServers).slice(1),
      ["-j", "ACCEPT"],
    ],
    "CUA-ISO-BACK": [
      ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"],
      ["-j", "DROP"],
    ],
    "CUA-ISO-HOST": [
      ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"],
      ["-m", "owner", "--uid-owner", String(o.serviceUid), "-j", "RETURN"],
      ...rejectTo([], "icmp-port-unreachable"),
    ],
  };
  const lines = ["*filter", ...Object.keys(chains).map((c) => `:${c} - [0:0]`)];
  for (const [c, rules] of Object.entries(chains)) for (const r of rules) lines.push(`-A ${c} ${r.join(" ")}`);
  lines.push("COMMIT", "");
  return lines.join("\n");
}

/**
 * Installs (idempotently) the host rules; throws with iptables' own words when the kernel refuses one.
 * The chains are replaced atomically (iptables-restore --noflush): another process installing the same
 * rules never leaves them empty for a moment, which would let a machine's packets through.
 */
export async function installHostFirewall(o: HostFirewallOptions, exec: Exec = defaultExec): Promise<void> {
  const ifs = `${HOST_IF_PREFIX}+`;
  const nat = ["*nat", ":CUA-ISO-NAT - [0:0]", `-A CUA-ISO-NAT ! -o ${ifs} -j MASQUERADE`, "COMMIT", ""].join("\n");
  for (const input of [filterRules(o), nat]) {
    const r = await exec("iptables-restore", ["--noflush"], input);
    if (r.code !== 0) throw new Error(`iptables-restore: ${r.stderr.trim() || `exit ${r.code}`}`);
  }
  await jump(exec, "iptables", "filter", "INPUT", ["-i", ifs, "-j", "CUA-ISO-IN"]);
  await jump(exec, "iptables", "filter", "FORWARD", ["-i", ifs, "-j", "CUA-ISO-OUT"]);
  await jump(exec, "iptables", "filter", "FORWARD", ["-o", ifs, "-j", "CUA-ISO-BACK"]);
  await jump(exec, "iptables", "filter", "OUTPUT", ["-o", ifs, "-j", "CUA-ISO-HOST"]);
  // shared by every pool (providers with different pools on one host): the pool is matched by the jump
  await jump(exec, "iptables", "nat", "POSTROUTING", ["-s", o.pool, "-j", "CUA-ISO-NAT"]);
  // IPv6: machines have none; whatever a machine might send is dropped at the host
  const v6 = await exec("ip6tables", ["-L", "-n"]);
  if (v6.code === 0) {
    await jump(exec, "ip6tables", "filter", "INPUT", ["-i", ifs, "-j", "DROP"]);
    await jump(exec, "ip6tables", "filter", "FORWARD", ["-i", ifs, "-j", "DROP"]);
  }
}

/** The non-loopback IPv4 resolvers of /etc/resolv.conf (a loopback resolver cannot serve a machine). */
export function dnsServersOf(resolvConf: string): string[] {
  const out: string[] = [];
  for (const line of resolvConf.split("\n")) {
    const m = /^\s*nameserver\s+(\d{1,3}(?:\.\d{1,3}){3})\s*$/.exec(line);
    if (m && !m[1]!.startsWith("127.") && !out.includes(m[1]!)) out.push(m[1]!);
  }
  return out;
}

/**
 * The resolvers machines use and the resolv.conf they see. When the host's /etc/resolv.conf names only a
 * loopback resolver (systemd-resolved's 127.0.0.53), the upstream servers it forwards to
 * (/run/systemd/resolve/resolv.conf) serve the machines instead, as container runtimes do. `content` is
 * null when there is nothing a machine could use (its DNS then fails, as the host's would from there).
 */
export function machineDns(
  etcResolv: string,
  systemdResolv: string | null,
): { servers: string[]; content: string | null } {
  let source = etcResolv;
  let servers = dnsServersOf(etcResolv);
  if (servers.length === 0 && systemdResolv) {
    source = systemdResolv;
    servers = dnsServersOf(systemdResolv);
  }
  if (servers.length === 0) return { servers, content: null };
  const kept = source.split("\n").filter((l) => /^\s*(search|domain|options)\s/.test(l));
  return { servers, content: `${[...kept, ...servers.map((ns) => `nameserver ${ns}`)].join("\n")}\n` };
}
