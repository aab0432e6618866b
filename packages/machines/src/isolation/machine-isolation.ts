// What the local desktop provider calls to isolate a machine (docs/security.md "Desktop isolation"):
// enter() before a machine's first process starts, leave() after its last one ended, sweep() at
// service start. With mode "namespaces" (the default) a host that cannot build the namespaces makes
// the machine fail to start with a message saying why (fail closed); "none" is the documented opt-out
// (MACHINE_ISOLATION=none), and readiness says that machines then run unisolated. Each machine also
// gets a cgroup with limits (cgroup.ts), part of the same fail-closed setup unless MACHINE_LIMITS=none.

import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { CoreError } from "@cua/base/errors";
import type { UserIdentity } from "../process-utils.ts";
import {
  type CgroupLayout,
  cgroupExists,
  cgroupProcsFiles,
  DEFAULT_MACHINE_LIMITS,
  detectCgroups,
  type MachineLimits,
  removeCgroup,
  setupCgroup,
  sweepCgroups,
} from "./cgroup.ts";
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
  /**
   * Each machine's cgroup limits (cgroup.ts; default DEFAULT_MACHINE_LIMITS); null: no cgroups at all
   * (MACHINE_LIMITS=none, the explicit opt-out that readiness reports)
   */
  limits?: MachineLimits | null;
  /** where machines' cgroups go inside the hierarchy (MACHINE_CGROUP_PARENT; default: see cgroup.ts) */
  cgroupParent?: string | null;
  /** sizes of each machine's private /tmp, /var/tmp and /dev/shm (tmpfs size= values; mount.ts) */
  tmpSize?: string;
  shmSize?: string;
}

export interface IsolationStatus {
  mode: IsolationMode;
  /** null until the host was prepared once (the first machine start) */
  available: boolean | null;
  detail: string;
}

const ISOLATED =
  "Machines run in their own network, mount and IPC namespaces and cgroups with resource limits (docs/security.md).";
const UNLIMITED =
  "Machines run in their own network, mount and IPC namespaces, WITHOUT resource limits (MACHINE_LIMITS=none): one machine can exhaust the host's processes, memory and CPU (docs/security.md).";
const TOOLS = ["ip", "iptables", "iptables-restore", "nsenter", "unshare", "mount", "umount", "env"] as const;
const SBIN_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/** The host cannot give machines their cgroup (the opt-out is MACHINE_LIMITS=none). */
class CgroupError extends Error {}

export class MachineIsolation {
  readonly mode: IsolationMode;
  readonly forwarders = new PortForwarders();
  private readonly pool: Pool;
  private readonly hidden: string[];
  private hostChain: Promise<void> = Promise.resolve();
  private dns: { servers: string[]; content: string | null } = { servers: [], content: null };
  private state: IsolationStatus;
  readonly limits: MachineLimits | null;
  private cgroups: CgroupLayout | null = null;

  constructor(private readonly opts: MachineIsolationOptions) {
    this.mode = opts.mode;
    this.pool = parsePool(opts.pool ?? DEFAULT_MACHINE_POOL);
    for (const p of opts.hiddenPaths) {
      const problem = hiddenPathProblem(p);
      if (problem) throw new Error(`machine isolation: cannot hide ${p}: ${problem}`);
    }
    this.hidden = [...DEFAULT_HIDDEN_PATHS, ...opts.hiddenPaths];
    this.limits = opts.limits === undefined ? DEFAULT_MACHINE_LIMITS : opts.limits;
    this.state =
      opts.mode === "none"
        ? {
            mode: "none",
            available: null,
            detail:
              "Machine isolation is off (MACHINE_ISOLATION=none): machines share the host's network and file system.",
          }
        : { mode: "namespaces", available: null, detail: this.limits ? ISOLATED : UNLIMITED };
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
      // a machine's /tmp (with its X sockets' directory), /var/tmp and /dev/shm are its own; where users
      // still share a world-writable directory, links and FIFOs another user planted there are not
      // followed or opened (the kernel's protected_* settings, as systemd sets them; best effort)
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
      try {
        this.cgroups = this.limits ? detectCgroups(this.opts.cgroupParent ?? null) : null;
      } catch (e) {
        throw new CgroupError(`cgroups: ${e instanceof Error ? e.message : String(e)}`);
      }
      this.state = { mode: "namespaces", available: true, detail: this.limits ? ISOLATED : UNLIMITED };
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
      const mntns = await setupMountNs(user.name, [...this.hidden, rootDir], keep, this.dns.content, {
        ...(this.opts.tmpSize ? { tmpSize: this.opts.tmpSize } : {}),
        ...(this.opts.shmSize ? { shmSize: this.opts.shmSize } : {}),
      });
      const cgroupProcs =
        this.cgroups && this.limits
          ? await setupCgroup(this.cgroups, netnsNameOf(user.name), this.limits).catch((e: unknown) => {
              throw new CgroupError(`the machine's cgroup: ${e instanceof Error ? e.message : String(e)}`);
            })
          : [];
      return { netns: net.netnsPath, mntns, ipcns: ipcnsPathOf(user.name), address: net.address, cgroupProcs };
    } catch (e) {
      await this.leave(user.name).catch(() => {});
      const reason = e instanceof Error ? e.message : String(e);
      // readiness reports it until a machine starts isolated again
      this.state = { mode: "namespaces", available: false, detail: `Machine isolation is unavailable: ${reason}` };
      const optOut =
        e instanceof CgroupError
          ? "set MACHINE_LIMITS=none to run machines without resource limits"
          : "set MACHINE_ISOLATION=none to run machines without isolation";
      throw new CoreError(
        "UPSTREAM_UNAVAILABLE",
        `The machine cannot start isolated on this host (${reason.slice(0, 600)}). Fix the host, or ${optOut} (docs/security.md).`,
        { retry_after: 60 },
      );
    }
  }

  /**
   * The jail of a machine that runs isolated at `address` (the paths derive from its user name): how the
   * service starts its processes after a restart, without entering again.
   */
  jailOf(userName: string, address: string): Jail {
    return {
      netns: `/run/netns/${netnsNameOf(userName)}`,
      mntns: mntnsPathOf(userName),
      ipcns: ipcnsPathOf(userName),
      address,
      cgroupProcs: this.limits ? this.procsFiles(userName) : [],
    };
  }

  private procsFiles(userName: string): string[] {
    const layout = this.layoutIfAny();
    // no cgroups on this host: a path that cannot be written, so that the wrapper refuses to start anything
    if (!layout) return ["/sys/fs/cgroup/cua-machines-unavailable/cgroup.procs"];
    return cgroupProcsFiles(layout, netnsNameOf(userName));
  }

  /** The host's cgroup layout (detected once; before the first start too, for a re-adopted machine). */
  private layout(): CgroupLayout {
    this.cgroups ??= detectCgroups(this.opts.cgroupParent ?? null);
    return this.cgroups;
  }

  /** The layout, or null on a host without usable cgroups (where no machine cgroup can exist). */
  private layoutIfAny(): CgroupLayout | null {
    try {
      return this.layout();
    } catch {
      return null;
    }
  }

  /**
   * Kills what is left in the machine's cgroup and removes it, then its namespaces and forwarders;
   * idempotent, also for a machine never isolated.
   */
  async leave(userName: string): Promise<void> {
    this.forwarders.close(userName);
    if (this.mode === "none") return;
    const layout = this.limits ? this.layoutIfAny() : null;
    // the namespaces go even when a process outlives the kill (the error still fails the stop)
    const left = layout ? await removeCgroup(layout, netnsNameOf(userName)).catch((e: unknown) => e) : null;
    await teardownMountNs(userName);
    await teardownNetwork(userName);
    if (left) throw left;
  }

  /**
   * Whether the machine's namespaces and cgroup exist (a desktop re-adopted after a restart keeps running
   * in them; one without its cgroup is restarted, its processes would run unlimited).
   */
  async exists(userName: string): Promise<boolean> {
    if (this.mode === "none") return false;
    const ns = [`/run/netns/${netnsNameOf(userName)}`, mntnsPathOf(userName), ipcnsPathOf(userName)].every((p) =>
      existsSync(p),
    );
    if (!ns || !this.limits) return ns;
    const layout = this.layoutIfAny();
    return layout !== null && cgroupExists(layout, netnsNameOf(userName));
  }

  /** Removes namespaces, veths, slots and mount namespaces of users that no longer exist. */
  async sweep(): Promise<string[]> {
    if (this.mode === "none") return [];
    // read after each listing: a machine set up meanwhile by another service process is not swept
    const live = async () =>
      new Set(
        (await readFile("/etc/passwd", "utf8"))
          .split("\n")
          .map((l) => l.split(":")[0])
          .filter((n): n is string => !!n)
          .map(isolationHex),
      );
    const removed = await sweepNetworks(live);
    await sweepMountNs(live);
    const layout = this.limits ? this.layoutIfAny() : null;
    if (layout) await sweepCgroups(layout, live);
    return removed;
  }
}
