// Chromium's DevTools endpoint has no authentication: whoever can connect to a desktop's
// --remote-debugging-port controls that browser (its pages, cookies, downloads). Every managed desktop
// runs as its own unprivileged user on one host, and a customer can run commands as that user (the
// terminal), so without a guard one machine's user could drive another machine's browser over loopback.
// The guard is a netfilter rule: TCP connections to the desktops' DevTools port range are allowed only
// from the service's own uid, rejected (RST) for every other local user.
import type { RunResult } from "./process-utils.ts";
import { run } from "./process-utils.ts";

export type DevtoolsGuardState = { enforced: true; chain: string } | { enforced: false; reason: string };

type Runner = (args: string[]) => Promise<RunResult>;

const iptables: Runner = (args) => run("iptables", ["-w", "5", ...args], { timeoutMs: 10_000 });

/**
 * Installs (idempotently) the rules that keep `ports` (inclusive range) to `ownerUid`. Safe to call from
 * several providers and processes: each range has its own chain, flushed and refilled with the same rules.
 */
export async function guardDevtoolsPorts(
  ports: [number, number],
  ownerUid: number,
  exec: Runner = iptables,
): Promise<DevtoolsGuardState> {
  const [lo, hi] = ports;
  if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo < 1 || hi > 65_535 || lo > hi)
    return { enforced: false, reason: `invalid port range ${lo}-${hi}` };
  const chain = `CUA-DEVTOOLS-${lo}-${hi}`;
  const must = async (args: string[]) => {
    const r = await exec(args);
    if (r.code !== 0) throw new Error(`iptables ${args.join(" ")}: ${r.stderr.trim() || `exit ${r.code}`}`);
  };
  try {
    const created = await exec(["-N", chain]);
    if (created.code !== 0 && !/exists/i.test(created.stderr)) {
      throw new Error(`iptables -N ${chain}: ${created.stderr.trim() || `exit ${created.code}`}`);
    }
    await must(["-F", chain]);
    await must(["-A", chain, "-m", "owner", "--uid-owner", String(ownerUid), "-j", "RETURN"]);
    await must(["-A", chain, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"]);
    const jump = ["OUTPUT", "-o", "lo", "-p", "tcp", "--dport", `${lo}:${hi}`, "-j", chain];
    if ((await exec(["-C", ...jump])).code !== 0) await must(["-I", ...jump]);
    return { enforced: true, chain };
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    return {
      enforced: false,
      reason: /ENOENT|not found/i.test(reason) ? "iptables is not installed" : reason,
    };
  }
}

/** Removes the rules of a range (tests and uninstalls; a running service keeps its guard). */
export async function removeDevtoolsGuard(ports: [number, number], exec: Runner = iptables): Promise<void> {
  const [lo, hi] = ports;
  const chain = `CUA-DEVTOOLS-${lo}-${hi}`;
  const jump = ["OUTPUT", "-o", "lo", "-p", "tcp", "--dport", `${lo}:${hi}`, "-j", chain];
  while ((await exec(["-C", ...jump])).code === 0) await exec(["-D", ...jump]);
  await exec(["-F", chain]);
  await exec(["-X", chain]);
}
