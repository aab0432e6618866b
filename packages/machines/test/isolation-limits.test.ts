// Resource limits and private temporary directories of isolated machines, on real desktops
// (docs/security.md "Desktop isolation": Resources, Files): every process of a machine runs in the
// machine's cgroup, a fork bomb stops at its task limit and a memory hog is killed inside its machine
// while the host and another machine keep working; /tmp, /var/tmp and /dev/shm are each machine's own,
// while the desktop (X socket, screenshots, typing into a terminal window) keeps working. Needs root,
// cgroups (v1 or v2) and the packages of scripts/install-desktop-deps.sh.

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CoreError } from "@cua/base/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cgroupDirs, detectCgroups, type MachineLimits } from "../src/isolation/cgroup.ts";
import { netnsNameOf } from "../src/isolation/network.ts";
import { LocalDesktopProvider } from "../src/local-desktop-provider.ts";
import { decodePng } from "../src/png.ts";
import type { MachineHandle } from "../src/provider.ts";

if (process.getuid?.() !== 0 || !existsSync("/usr/bin/Xvfb"))
  throw new Error("isolation tests need root and the packages of scripts/install-desktop-deps.sh");

const FIRST_DISPLAY = 600 + (process.pid % 100);
const LIMITS: MachineLimits = { pids: 1024, memory: 1536 * 1024 ** 2, swap: 0, cpuWeight: 100, cpus: 1 };

async function term(p: LocalDesktopProvider, h: MachineHandle, command: string, timeout_ms = 60_000) {
  const r = await p.terminal(h, { command, timeout_ms });
  return { output: String(r.result.output ?? ""), code: Number(r.result.exit_code ?? -1) };
}

async function until<T>(f: () => Promise<T> | T, ok: (v: T) => boolean, ms: number, what: string): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(v)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A cgroup file of the machine: `controller` picks the v1 hierarchy. */
function cg(h: MachineHandle, controller: "pids" | "memory" | "cpu", file: string): string {
  const layout = detectCgroups();
  const dirs = cgroupDirs(layout, netnsNameOf(String(h.user)));
  const dir = layout.version === 2 ? dirs[0]! : dirs[["pids", "memory", "cpu"].indexOf(controller)]!;
  return path.join(dir, file);
}

function tasksOf(h: MachineHandle): number {
  return Number(readFileSync(cg(h, "pids", "pids.current"), "utf8").trim());
}

/** Python forking children that sleep `seconds` with their output detached, until fork fails. */
const BOMB = (n: number, seconds: number) => `python3 - <<'EOF'
import os, time
n = 0
try:
    for i in range(${n}):
        pid = os.fork()
        if pid == 0:
            fd = os.open("/dev/null", os.O_RDWR)
            for k in (0, 1, 2): os.dup2(fd, k)
            time.sleep(${seconds})
            os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print("refused after", n, "errno", e.errno)
EOF`;

describe("machine resource limits and private /tmp (real desktops, cgroups)", () => {
  let root: string;
  let provider: LocalDesktopProvider;
  let a: MachineHandle;
  let b: MachineHandle;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "cua-lim-"));
    provider = new LocalDesktopProvider({
      rootDir: root,
      displayRange: [FIRST_DISPLAY, 899],
      isolationLimits: { limits: LIMITS, tmpSize: "64m", shmSize: "256m" },
    });
    const id = process.pid.toString(16);
    [a, b] = await Promise.all([
      provider.provision({ machineId: `mch_lim_${id}a`, displayName: "a", screen: { width: 1024, height: 768 } }),
      provider.provision({ machineId: `mch_lim_${id}b`, displayName: "b", desktopEnabled: false }),
    ]);
  });

  afterAll(async () => {
    for (const h of [a, b]) if (h) await provider.terminate(h).catch(() => {});
    await provider?.close();
    await rm(root, { recursive: true, force: true });
  });

  it("every process of a machine runs in its cgroup, under the configured limits", async () => {
    const name = netnsNameOf(String(a.user));
    const procs = await provider.processes(a);
    expect(procs.map((p) => p.role)).toEqual(expect.arrayContaining(["xvfb"]));
    for (const p of procs) {
      const lines = readFileSync(`/proc/${p.pid}/cgroup`, "utf8");
      expect(lines, `${p.role} ${p.cmd}`).toContain(`/${name}\n`);
      for (const c of detectCgroups().version === 2 ? ["0::"] : ["pids:", "memory:", "cpu:"])
        expect(
          lines.split("\n").find((l) => l.includes(c)),
          c,
        ).toMatch(new RegExp(`/cua-machines/${name}$`));
    }
    // the terminal's shell too, and the machine's user cannot move itself out
    const t = await term(
      provider,
      a,
      "cat /proc/self/cgroup; for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/pids/cgroup.procs; do echo $$ > $f && echo moved; done",
    );
    expect(t.output).toContain(name);
    expect(t.output).not.toContain("moved");
    expect(readFileSync(cg(a, "pids", "pids.max"), "utf8").trim()).toBe("1024");
    if (detectCgroups().version === 1) {
      expect(Number(readFileSync(cg(a, "memory", "memory.limit_in_bytes"), "utf8"))).toBe(LIMITS.memory);
      expect(readFileSync(cg(a, "cpu", "cpu.cfs_quota_us"), "utf8").trim()).toBe("100000");
    } else {
      expect(Number(readFileSync(cg(a, "memory", "memory.max"), "utf8"))).toBe(LIMITS.memory);
      expect(readFileSync(cg(a, "cpu", "cpu.max"), "utf8").trim()).toBe("100000 100000");
    }
    expect(provider.readiness().isolation.detail).toContain("cgroups with resource limits");
  });

  it("the desktop still works: Chromium, a screenshot, typing into a terminal window", async () => {
    await provider.browser(a, "navigate", { url: "about:blank" });
    const shot = await provider.screenshot(a);
    expect(decodePng(shot.png).width).toBe(1024);
    // ctrl+alt+t opens xterm (openbox's binding); what is typed there runs as the machine's user
    await provider.execute(a, "key_combo", { keys: ["ctrl", "alt", "t"] });
    await until(async () => (await provider.processes(a)).some((p) => /xterm/.test(p.cmd)), Boolean, 15_000, "xterm");
    await new Promise((r) => setTimeout(r, 1500));
    await provider.execute(a, "type", { text: "echo typed-$((6*7)) > ~/typed.txt" });
    await provider.execute(a, "key_press", { keys: ["Return"] });
    await until(
      async () => (await term(provider, a, "cat ~/typed.txt 2>/dev/null")).output.trim(),
      (v) => v === "typed-42",
      15_000,
      "the typed command",
    );
    // a desktop with Chromium and a terminal, for sizing the task limit (docs/security.md)
    console.log(`tasks of a desktop with Chromium and xterm: ${tasksOf(a)}`);
  });

  it("/tmp, /var/tmp, /dev/shm and the X socket directory in /tmp are each machine's own", async () => {
    const display = Number(a.display);
    const w = await term(
      provider,
      a,
      `for d in /tmp /var/tmp /dev/shm; do echo from-a > $d/cua-private-$$ && echo "$d ok"; done; echo pid=$$; stat -c '%a %U' /tmp /var/tmp /dev/shm; findmnt -n -o FSTYPE,OPTIONS /tmp; ls /tmp/.X11-unix/`,
    );
    const pid = /pid=(\d+)/.exec(w.output)![1];
    expect(w.output).toContain("/tmp ok");
    expect(w.output).toContain("/var/tmp ok");
    expect(w.output).toContain("/dev/shm ok");
    expect(w.output).toMatch(/1777 root\n1777 root\n1777 root/);
    expect(w.output).toMatch(/tmpfs .*size=65536k/);
    // its X socket (isolation-x11.test.ts: no other desktop's is listed there or reachable)
    expect(w.output).toContain(`X${display}`);
    // Xvfb's lock file is in the machine's /tmp, not the host's
    expect(existsSync(`/tmp/.X${display}-lock`)).toBe(false);
    const r = await term(
      provider,
      b,
      `for d in /tmp /var/tmp /dev/shm; do cat $d/cua-private-${pid} 2>/dev/null || echo "$d: not there"; done; ls -A /tmp /dev/shm`,
    );
    expect(r.output).toContain("/tmp: not there");
    expect(r.output).toContain("/var/tmp: not there");
    expect(r.output).toContain("/dev/shm: not there");
    expect(r.output).not.toContain("from-a");
    for (const d of ["/tmp", "/var/tmp", "/dev/shm"]) expect(existsSync(`${d}/cua-private-${pid}`), d).toBe(false);
    // the size limit holds
    const big = await term(provider, b, "head -c 100M /dev/zero > /tmp/big; echo rc=$?; rm -f /tmp/big");
    expect(big.output).toMatch(/No space left on device/);
  });

  it("a fork bomb stops at the task limit; the host and another machine keep working", async () => {
    const bomb = await term(provider, a, BOMB(5000, 30));
    expect(bomb.output).toMatch(/refused after \d+ errno 11/);
    const forked = Number(/refused after (\d+)/.exec(bomb.output)![1]);
    expect(forked).toBeLessThan(LIMITS.pids!);
    expect(tasksOf(a)).toBeLessThanOrEqual(LIMITS.pids!);
    expect(Number(readFileSync(cg(a, "pids", "pids.events"), "utf8").split(" ")[1])).toBeGreaterThan(0);
    // while the sleepers hold every task of machine a: the host forks, machine b runs commands, a's screen is read
    expect(
      (await term(provider, b, "echo b-works; for i in $(seq 50); do /bin/true; done; echo done")).output,
    ).toContain("done");
    expect(decodePng((await provider.screenshot(a)).png).width).toBe(1024);
    // ...and the sleepers still held the machine's tasks meanwhile
    expect(tasksOf(a)).toBeGreaterThan(forked);
    // once they end, machine a runs commands again
    await until(
      () => tasksOf(a),
      (n) => n < 300,
      60_000,
      "the sleepers to end",
    );
    expect((await term(provider, a, "echo a-again")).output).toContain("a-again");
  });

  it("a memory hog is killed inside its machine; the machine, its desktop and the other machine live on", async () => {
    const xvfb = (await provider.processes(a)).find((p) => p.role === "xvfb")!.pid;
    // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's own ${PIPESTATUS[*]}
    const hog = await term(provider, a, "head -c 3G /dev/zero | tail; echo status=${PIPESTATUS[*]}", 120_000);
    // tail (holding everything it read) is killed by the kernel's OOM killer of the machine's cgroup
    expect(hog.output).toMatch(/status=\d+ 137/);
    expect((await term(provider, a, "echo a-alive")).output).toContain("a-alive");
    expect((await term(provider, b, "echo b-alive")).output).toContain("b-alive");
    expect((await provider.processes(a)).find((p) => p.role === "xvfb")?.pid).toBe(xvfb);
    expect(decodePng((await provider.screenshot(a)).png).width).toBe(1024);
  });

  it("stop kills what is left in the cgroup and removes it; sweep removes cgroups of machines that are gone", async () => {
    // a process that left the desktop's process groups (its own session)
    await term(provider, b, "setsid sleep 600 < /dev/null > /dev/null 2>&1 & echo started");
    const dirs = cgroupDirs(detectCgroups(), netnsNameOf(String(b.user)));
    expect(dirs.every((d) => existsSync(d))).toBe(true);
    b = await provider.stop(b);
    expect(dirs.some((d) => existsSync(d))).toBe(false);
    // a stale cgroup (a crash mid-terminate) of a user that does not exist
    const stale = cgroupDirs(detectCgroups(), "cuan-00000000000");
    for (const d of stale) await mkdir(d, { recursive: true });
    await provider.isolation.sweep();
    expect(stale.some((d) => existsSync(d))).toBe(false);
    b = await provider.start(b);
    expect((await term(provider, b, "cat /proc/self/cgroup")).output).toContain(netnsNameOf(String(b.user)));
  });

  it("fails closed: a machine whose cgroup cannot be created does not start and leaves nothing behind", async () => {
    // a parent below a cgroup file: mkdir fails (ENOTDIR), as on a host whose cgroups are read-only
    const broken = new LocalDesktopProvider({
      rootDir: root,
      displayRange: [FIRST_DISPLAY, 899],
      isolationLimits: { limits: LIMITS, cgroupParent: "/cgroup.procs/machines" },
    });
    const id = `mch_lim_${process.pid.toString(16)}c`;
    const err = await broken.provision({ machineId: id, displayName: "c", desktopEnabled: false }).then(
      () => null,
      (e) => e,
    );
    expect(err).toBeInstanceOf(CoreError);
    expect((err as CoreError).code).toBe("UPSTREAM_UNAVAILABLE");
    expect((err as CoreError).message).toContain("the machine's cgroup");
    expect((err as CoreError).message).toContain("MACHINE_LIMITS=none");
    expect(existsSync(`/run/netns/${netnsNameOf(broken.userNameFor(id))}`)).toBe(false);
    expect(() => execFileSync("id", ["-u", broken.userNameFor(id)], { stdio: "ignore" })).toThrow();
    expect(broken.readiness()).toMatchObject({ machines_ready: false });
    expect(broken.readiness().isolation.detail).toContain("the machine's cgroup");
    await broken.close();
  });

  it("the opt-out (MACHINE_LIMITS=none) is explicit and visible in readiness", async () => {
    const off = new LocalDesktopProvider({ rootDir: root, isolationLimits: { limits: null } });
    expect(off.readiness().isolation.detail).toContain("WITHOUT resource limits (MACHINE_LIMITS=none)");
    await off.close();
  });
});
