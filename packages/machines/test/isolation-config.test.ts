// Machine isolation's configuration (docs/security.md): what an operator sets wrong is refused at
// start with a message saying why, and what the rules and mounts are built from. No root needed.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { limitsFromSettings, limitWrites } from "../src/isolation/cgroup.ts";
import { dnsServersOf, egressRules, filterRules, machineDns } from "../src/isolation/host-firewall.ts";
import { hiddenPathProblem, mountScript } from "../src/isolation/mount.ts";
import { parsePool, slotAddresses } from "../src/isolation/network.ts";
import { LocalDesktopProvider } from "../src/local-desktop-provider.ts";

const root = path.join(os.tmpdir(), "cua-iso-config");

describe("machine isolation configuration", () => {
  it("refuses a pool that is not an aligned IPv4 CIDR from /8 to /28 (MACHINE_ISOLATION_POOL)", () => {
    for (const pool of ["10.231.0.0/29", "10.231.0.0/7", "10.231.0.1/16", "300.1.0.0/16", "fd00::/64"])
      expect(() => new LocalDesktopProvider({ rootDir: root, isolationPool: pool }), pool).toThrow(
        /machine network pool/,
      );
    const pool = parsePool("10.231.0.0/16");
    expect(pool.slots).toBe(16_384);
    expect(slotAddresses(pool, 0)).toEqual({ host: "10.231.0.1", machine: "10.231.0.2" });
    expect(slotAddresses(pool, 16_383)).toEqual({ host: "10.231.255.253", machine: "10.231.255.254" });
  });

  it("refuses to hide what the desktop needs (MACHINE_HIDDEN_PATHS)", () => {
    for (const p of ["/", "/usr", "/etc", "/tmp", "/tmp/.X11-unix", "/var", "/proc/self", "relative/dir"]) {
      expect(hiddenPathProblem(p), p).not.toBeNull();
      expect(() => new LocalDesktopProvider({ rootDir: root, hiddenPaths: [p] }), p).toThrow(/cannot hide/);
    }
    for (const p of ["/srv/cua-data", "/work/main", "/tmp/cua-test-x", "/etc/cua/secrets"])
      expect(hiddenPathProblem(p), p).toBeNull();
  });

  it("keeps a machine's own home visible inside a hidden directory, and /run empty", () => {
    const data = mkdtempSync(path.join(os.tmpdir(), "cua-iso-hide-"));
    mkdirSync(path.join(data, "machines/cua-abc"), { recursive: true });
    const home = path.join(data, "machines/cua-abc");
    const script = mountScript([data, path.join(data, "machines"), "/no/such/dir"], [home]);
    // the outer directory covers the inner one; missing paths are skipped
    expect(script).toContain(`cua-hidden '${data}'`);
    expect(script).not.toContain(`cua-hidden '${data}/machines'`);
    expect(script).not.toContain("/no/such/dir");
    // the home is bound aside, the cover goes on, the home comes back on top
    const order = [
      `mount --bind '${home}' /run/.keep/0`,
      `cua-hidden '${data}'`,
      `mount --move /run/.keep/0 '${home}'`,
    ];
    expect(order.map((l) => script.indexOf(l))).toEqual([...order.map((l) => script.indexOf(l))].sort((a, b) => a - b));
    expect(order.every((l) => script.includes(l))).toBe(true);
    expect(script).toContain("mount -t tmpfs -o mode=0755,size=1m,nosuid,nodev cua-run /run");
    expect(script).toContain("hidepid=invisible");
    // a hidden file (an operator's secrets file) reads as empty
    writeFileSync(path.join(data, "secret.env"), "TOKEN=x\n");
    expect(mountScript([path.join(data, "secret.env")], [])).toContain(`mount --bind /dev/null '${data}/secret.env'`);
    rmSync(data, { recursive: true, force: true });
  });

  it("lets machines reach the host's non-loopback resolvers on port 53 only", () => {
    expect(dnsServersOf("# x\nnameserver 127.0.0.53\nnameserver 10.255.255.53\nnameserver 10.255.255.53\n")).toEqual([
      "10.255.255.53",
    ]);
    const rules = egressRules(["10.255.255.53"]).map((r) => r.join(" "));
    expect(rules).toContain("-d 10.255.255.53 -p udp --dport 53 -j ACCEPT");
    expect(rules.indexOf("-d 10.255.255.53 -p udp --dport 53 -j ACCEPT")).toBeLessThan(
      rules.indexOf("-d 10.0.0.0/8 -p tcp -j REJECT --reject-with tcp-reset"),
    );
    for (const cidr of ["127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"])
      expect(rules).toContain(`-d ${cidr} -j REJECT --reject-with icmp-net-prohibited`);
    const restore = filterRules({ pool: "10.231.0.0/16", serviceUid: 0, dnsServers: [] });
    // one transaction replacing every chain; machines never reach each other
    expect(restore.startsWith("*filter\n:CUA-ISO-IN - [0:0]")).toBe(true);
    expect(restore).toContain("-A CUA-ISO-OUT -o cuav+ -p tcp -j REJECT --reject-with tcp-reset");
    expect(restore.trim().endsWith("COMMIT")).toBe(true);
  });

  it("machines get a resolver they can reach: systemd-resolved's upstream servers when the host's is loopback", () => {
    const stub = "# stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp.example\n";
    const upstream = "nameserver 192.0.2.53\nnameserver 198.51.100.53\nsearch corp.example\n";
    expect(machineDns(stub, upstream)).toEqual({
      servers: ["192.0.2.53", "198.51.100.53"],
      content: "search corp.example\nnameserver 192.0.2.53\nnameserver 198.51.100.53\n",
    });
    expect(machineDns("nameserver 10.255.255.53\n", upstream)).toEqual({
      servers: ["10.255.255.53"],
      content: "nameserver 10.255.255.53\n",
    });
    expect(machineDns(stub, null)).toEqual({ servers: [], content: null });
    // a resolv.conf that lives under /run is written into the machine's fresh /run
    const script = mountScript([], [], [], [["/run/systemd/resolve/stub-resolv.conf", "nameserver 192.0.2.53\n"]]);
    const tmpfs = script.indexOf("cua-run /run");
    expect(script.indexOf("mkdir -p '/run/systemd/resolve'")).toBeGreaterThan(tmpfs);
    expect(script).toContain("printf '%s' 'nameserver 192.0.2.53\n' > '/run/systemd/resolve/stub-resolv.conf'");
  });

  it("gives each machine its own /tmp, /var/tmp and /dev/shm, and its own X socket directory", () => {
    const data = mkdtempSync(path.join(os.tmpdir(), "cua-iso-tmp-"));
    const home = path.join(data, "machines/cua-abc");
    mkdirSync(home, { recursive: true });
    const script = mountScript([data], [home], [], [], { tmpSize: "64m", shmSize: "256m" });
    expect(script).toContain("mount -t tmpfs -o mode=1777,size=64m,nosuid,nodev cua-tmp '/tmp'");
    expect(script).toContain("mount -t tmpfs -o mode=1777,size=64m,nosuid,nodev cua-tmp '/var/tmp'");
    expect(script).toContain("mount -t tmpfs -o mode=1777,size=256m,nosuid,nodev cua-tmp '/dev/shm'");
    // a hidden directory inside /tmp needs no cover of its own; the home inside it comes back
    expect(script).not.toContain(`cua-hidden '${data}'`);
    const order = [
      `mount --bind '${home}' /run/.keep/0`,
      "cua-tmp '/tmp'",
      // created by root in the machine's own /tmp (the host's, with the other desktops' sockets, is not bound)
      "mkdir -m 1777 '/tmp/.X11-unix'",
      `mount --move /run/.keep/0 '${home}'`,
    ];
    expect(order.every((l) => script.includes(l))).toBe(true);
    expect(order.map((l) => script.indexOf(l))).toEqual([...order.map((l) => script.indexOf(l))].sort((a, b) => a - b));
    expect(script).not.toContain("mount --bind '/tmp/.X11-unix'");
    rmSync(data, { recursive: true, force: true });
  });

  it("turns the limits into cgroup v1 and v2 files (MACHINE_PIDS_MAX, MEMORY_MAX, SWAP_MAX, CPU_WEIGHT, CPU_MAX)", () => {
    const limits = limitsFromSettings({ pids: "2048", memory: "4g", swap: "0", cpuWeight: 100, cpus: "1.5" });
    expect(limits).toEqual({ pids: 2048, memory: 4 * 1024 ** 3, swap: 0, cpuWeight: 100, cpus: 1.5 });
    expect(limitsFromSettings({ pids: "max", memory: "max", swap: "512m", cpuWeight: 50, cpus: "max" })).toEqual({
      pids: null,
      memory: null,
      swap: 512 * 1024 ** 2,
      cpuWeight: 50,
      cpus: null,
    });
    expect(() => limitsFromSettings({ pids: "0", memory: "4g", swap: "0", cpuWeight: 1, cpus: "1" })).toThrow(/pids/);
    expect(() => limitsFromSettings({ pids: "9", memory: "lots", swap: "0", cpuWeight: 1, cpus: "1" })).toThrow(
      /memory/,
    );
    const v2 = limitWrites(
      { version: 2, root: "/cg", parent: "/cg/cua-machines" },
      "cuan-0123456789a",
      limits,
      () => true,
    );
    expect(v2).toEqual([
      ["/cg/cua-machines/cuan-0123456789a/pids.max", "2048"],
      ["/cg/cua-machines/cuan-0123456789a/memory.max", String(4 * 1024 ** 3)],
      ["/cg/cua-machines/cuan-0123456789a/memory.swap.max", "0"],
      ["/cg/cua-machines/cuan-0123456789a/cpu.weight", "100"],
      ["/cg/cua-machines/cuan-0123456789a/cpu.max", "150000 100000"],
    ]);
    const v1 = limitWrites(
      { version: 1, parents: { pids: "/p/m", memory: "/m/m", cpu: "/c/m" } },
      "cuan-0123456789a",
      { ...limits, swap: 1024 },
      () => true,
    );
    expect(v1).toEqual([
      ["/p/m/cuan-0123456789a/pids.max", "2048"],
      ["/m/m/cuan-0123456789a/memory.memsw.limit_in_bytes", "-1"],
      ["/m/m/cuan-0123456789a/memory.limit_in_bytes", String(4 * 1024 ** 3)],
      ["/m/m/cuan-0123456789a/memory.memsw.limit_in_bytes", String(4 * 1024 ** 3 + 1024)],
      ["/c/m/cuan-0123456789a/cpu.shares", "1024"],
      ["/c/m/cuan-0123456789a/cpu.cfs_period_us", "100000"],
      ["/c/m/cuan-0123456789a/cpu.cfs_quota_us", "150000"],
    ]);
    // without swap accounting (no memsw / memory.swap.max file) swap is not limited separately
    expect(
      limitWrites({ version: 2, root: "/cg", parent: "/cg/m" }, "cuan-0123456789a", limits, () => false),
    ).toHaveLength(4);
  });
});
