// What the local desktop provider calls to isolate a machine (docs/security.md "Desktop isolation"):
// enter() before a machine's first process starts, leave() after its last one ended, sweep() at
// service start. With mode "namespaces" (the default) a host that cannot build the namespaces makes
// the machine fail to start with a message saying why (fail closed); "none" is the documented opt-out
// (MACHINE_ISOLATION=none), and readiness says that machines then run unisolated.

import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { CoreError } from "@cua/base/errors";
import type { UserIdentity } from "../process-utils.ts";
import { installHostFirewall, machineDns } from "./host-firewall.ts";
import type { Jail } from "./jail.ts";
import {
  DEFAULT_HIDDEN_PATHS,
  hiddenPathProblem,
  ipcnsPathOf,
  mntnsPathOf,
  prepareMountDir,
  setupMountNs,
  sweepMountNs,
  teardownMountNs,
} from "./mount.ts";
import {
  isolationHex,
  netnsNameOf,
  type Pool,
  parsePool,
  setupNetwork,
  sweepNetworks,
  teardownNetwork,
} from "./network.ts";
import { PortForwarders } from "./port-forward.ts";

export type IsolationMode = "namespaces" | "none";
export const DEFAULT_MACHINE_POOL = "10.231.0.0/16";

export interface MachineIsolationOptions {
  mode: IsolationMode;
  /** IPv4 pool for the machines' /30 links (default 10.231.0.0/16); must not overlap the host's networks */
  pool?: string;
  /** paths machines must not see (service data, repository...); the provider adds its own root directory */
  hiddenPaths: string[];
  /** TCP port ranges the service reaches inside each machine (DevTools, VNC, websockify) */
  forwardedPorts: [number, number][];
  /** the DevTools range: inside a machine, only the service's connections (from the host) reach it */
  servicePorts?: [number, number];
  /** the uid that may open connections into machines (default: the service's own) */
  serviceUid?: number;
}

export interface IsolationStatus {
  mode: IsolationMode;
  /** null until the host was prepared once (the first machine start) */
  available: boolean | null;
  detail: string;
}

const ISOLATED = "Machines run in their own network, mount and IPC namespaces (docs/security.md).";
const TOOLS = ["ip", "iptables", "iptables-restore", "nsenter", "unshare", "mount", "umount", "env"] as const;
const SBIN_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

export class MachineIsolation {
  readonly mode: IsolationMode;
  readonly forwarders = new PortForwarders();
  private readonly pool: Pool;
  private readonly hidden: string[];
  private hostChain: Promise<void> = Promise.resolve();
  private dns: { servers: string[]; content: string | null } = { servers: [], content: null };
  private state: IsolationStatus;

  constructor(private readonly opts: MachineIsolationOptions) {
    this.mode = opts.mode;
    this.pool = parsePool(opts.pool ?? DEFAULT_MACHINE_POOL);
    for (const p of opts.hiddenPaths) {
      const problem = hiddenPathProblem(p);
      if (problem) throw new Error(`machine isolation: cannot hide ${p}: ${problem}`);
    }
    this.hidden = [...DEFAULT_HIDDEN_PATHS, ...opts.hiddenPaths];
    this.state =
      opts.mode === "none"
        ? {
            mode: "none",
            available: null,
            detail:
              "Machine isolation is off (MACHINE_ISOLATION=none): machines share the host's network and file system.",
          }
        : { mode: "namespaces", available: null, detail: ISOLATED };
  }

  status(): IsolationStatus {
    return { ...this.state };
  }

  /** Tools missing on this host for namespaces (checked without starting anything). */
  missingTools(): string[] {
    return TOOLS.filter((t) => !SBIN_PATH.some((d) => existsSync(`${d}/${t}`)));
  }

  /**
   * Checks the host and (re)installs its rules before every machine start, one at a time: rules
   * flushed by someone else (a firewall reload) or a reset ip_forward are repaired by the next start.
   */
  private prepareHost(): Promise<void> {
    const next = this.hostChain.then(() => this.prepareHostNow());
    this.hostChain = next.catch(() => {});
    return next;
  }

  private async prepareHostNow(): Promise<void> {
    try {
      if (process.getuid?.() !== 0) throw new Error("the service does not run as root");
      const missing = this.missingTools();
      if (missing.length)
        throw new Error(`missing ${missing.join(", ")} (Debian packages iproute2, iptables, util-linux, mount)`);
      await writeFile("/proc/sys/net/ipv4/ip_forward", "1");
      // machines share /tmp and /dev/shm: links and FIFOs another user planted there are not followed or
      // opened (the kernel's protected_* settings, as systemd sets them; best effort)
      for (const name of ["protected_symlinks", "protected_hardlinks", "protected_regular", "protected_fifos"])
        await writeFile(`/proc/sys/fs/${name}`, "1").catch(() => {});
      this.dns = machineDns(
        await readFile("/etc/resolv.conf", "utf8").catch(() => ""),
        await readFile("/run/systemd/resolve/resolv.conf", "utf8").catch(() => null),
      );
      await installHostFirewall({
        pool: this.pool.cidr,
        serviceUid: this.opts.serviceUid ?? process.getuid?.() ?? 0,
        dnsServers: this.dns.servers,
      });
      await prepareMountDir();
      this.state = { mode: "namespaces", available: true, detail: ISOLATED };
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      this.state = { ...this.state, available: false, detail: `Machine isolation is unavailable: ${reason}` };
      throw e;
    }
  }

  /**
   * Builds (or re-adopts) the machine's namespaces and returns its jail; null in mode "none".
   * Fails closed: a 503 UPSTREAM_UNAVAILABLE naming the reason, never an unisolated machine.
   */
  async enter(user: UserIdentity, keep: string[], rootDir: string): Promise<Jail | null> {
    if (this.mode === "none") return null;
    try {
      await this.prepareHost();
      const net = await setupNetwork(
        user.name,
        this.pool,
        this.opts.forwardedPorts,
        this.dns.servers,
        this.opts.servicePorts ?? null,
      );
      const mntns = await setupMountNs(user.name, [...this.hidden, rootDir], keep, this.dns.content);
      return { netns: net.netnsPath, mntns, ipcns: ipcnsPathOf(user.name), address: net.address };
    } catch (e) {
      await this.leave(user.name).catch(() => {});
      const reason = e instanceof Error ? e.message : String(e);
      // readiness reports it until a machine starts isolated again
      this.state = { mode: "namespaces", available: false, detail: `Machine isolation is unavailable: ${reason}` };
      throw new CoreError(
        "UPSTREAM_UNAVAILABLE",
        `The machine cannot start isolated on this host (${reason.slice(0, 600)}). Fix the host, or set MACHINE_ISOLATION=none to run machines without isolation (docs/security.md).`,
        { retry_after: 60 },
      );
    }
  }

  /** Removes the machine's namespaces and forwarders; idempotent, also for a machine never isolated. */
  async leave(userName: string): Promise<void> {
    this.forwarders.close(userName);
    if (this.mode === "none") return;
    await teardownMountNs(userName);
    await teardownNetwork(userName);
  }

  /** Whether the machine's namespaces exist (a desktop re-adopted after a restart keeps running in them). */
  async exists(userName: string): Promise<boolean> {
    if (this.mode === "none") return false;
    return [`/run/netns/${netnsNameOf(userName)}`, mntnsPathOf(userName), ipcnsPathOf(userName)].every((p) =>
      existsSync(p),
    );
  }

  /** Removes namespaces, veths, slots and mount namespaces of users that no longer exist. */
  async sweep(): Promise<string[]> {
    if (this.mode === "none") return [];
    const passwd = await readFile("/etc/passwd", "utf8");
    const live = new Set(
      passwd
        .split("\n")
        .map((l) => l.split(":")[0])
        .filter((n): n is string => !!n)
        .map(isolationHex),
    );
    const removed = await sweepNetworks(live);
    await sweepMountNs(live);
    return removed;
  }
}
