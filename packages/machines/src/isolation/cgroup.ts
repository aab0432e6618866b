// One cgroup per machine (docs/security.md "Desktop isolation", "Resources"): every process of a machine
// runs in it, with limits on tasks (pids), memory (and swap where the controller offers it) and CPU
// (weight and quota), so that a machine's user cannot fork-bomb or starve the host.
//
//   cgroup v2 (unified at /sys/fs/cgroup):  <parent>/cuan-<hex>, parent /cua-machines by default; the
//                                            pids, memory and cpu controllers are enabled down to it
//   cgroup v1 (one hierarchy per controller): <hierarchy>/<parent>/cuan-<hex> in the pids, memory and cpu
//                                            hierarchies, parent the service's own cgroup there + /cua-machines
//
// A process joins before it runs anything of the machine's: the jail's wrapper (jail.ts) writes its own
// pid into cgroup.procs of each of these directories, then execs nsenter. The cgroup is removed (its
// processes killed) when the machine stops; cgroups of machines whose user is gone are swept.

import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import path from "node:path";

/** Per-machine limits; null means unlimited ("max"). */
export interface MachineLimits {
  /** tasks (processes and threads) */
  pids: number | null;
  /** bytes of memory, page cache and tmpfs (/tmp, /dev/shm) included */
  memory: number | null;
  /** bytes of swap on top of memory (where the memory controller accounts swap) */
  swap: number | null;
  /** relative CPU weight, 1..10000 (100 = the default of every other cgroup) */
  cpuWeight: number;
  /** at most this many CPUs' worth of time (a quota per 100 ms period) */
  cpus: number | null;
}

/** A fresh desktop with Chromium runs ~120 tasks, each further tab ~12 (docs/security.md). */
export const DEFAULT_MACHINE_LIMITS: MachineLimits = {
  pids: 2048,
  memory: 4 * 1024 ** 3,
  swap: 0,
  cpuWeight: 100,
  cpus: 2,
};

const CONTROLLERS = ["pids", "memory", "cpu"] as const;
type Controller = (typeof CONTROLLERS)[number];
const NAME = /^cuan-[0-9a-f]{11}$/;
const PERIOD_US = 100_000;

export type CgroupLayout =
  | { version: 2; root: string; parent: string }
  | { version: 1; parents: Record<Controller, string> };

/** "512m", "4g", "1073741824", "max" -> bytes or null (unlimited); undefined for anything else. */
export function parseBytes(s: string): number | null | undefined {
  if (s.trim().toLowerCase() === "max") return null;
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(s.trim());
  if (!m) return undefined;
  const mult = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2]!.toLowerCase() as "" | "k"] ?? 1;
  return Math.floor(Number(m[1]) * mult);
}

/** Limits from their settings (MACHINE_PIDS_MAX, MACHINE_MEMORY_MAX, ...: numbers, sizes or "max"). */
export function limitsFromSettings(s: {
  pids: string;
  memory: string;
  swap: string;
  cpuWeight: number;
  cpus: string;
}): MachineLimits {
  const bytes = (name: string, v: string) => {
    const b = parseBytes(v);
    if (b === undefined) throw new Error(`${name}: ${v} is not a size (bytes, k/m/g/t suffix) or max`);
    return b;
  };
  const count = (name: string, v: string) => {
    if (v.trim() === "max") return null;
    const n = Number(v);
    if (!(n > 0) || !Number.isFinite(n)) throw new Error(`${name}: ${v} is not a positive number or max`);
    return n;
  };
  const pids = count("pids", s.pids);
  return {
    pids: pids === null ? null : Math.floor(pids),
    memory: bytes("memory", s.memory),
    swap: bytes("swap", s.swap),
    cpuWeight: Math.min(10_000, Math.max(1, Math.round(s.cpuWeight))),
    cpus: count("cpus", s.cpus),
  };
}

interface MountEntry {
  root: string;
  mountPoint: string;
  fsType: string;
  superOpts: string[];
}

function mounts(info: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of info.split("\n")) {
    const [pre, post] = line.split(" - ");
    if (!pre || !post) continue;
    const f = pre.split(" ");
    const [fsType, , superOpts] = post.split(" ");
    if (!f[3] || !f[4] || !fsType) continue;
    out.push({ root: f[3], mountPoint: f[4], fsType, superOpts: (superOpts ?? "").split(",") });
  }
  return out;
}

/** The service's own cgroup per v1 controller ("" key: the v2 one), from /proc/self/cgroup. */
function ownCgroups(text: string): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m) continue;
    if (m[1] === "") own.set("", m[2]!);
    for (const c of m[1]!.split(",")) if (c) own.set(c, m[2]!);
  }
  return own;
}

/**
 * Where machines' cgroups go on this host: cgroup v2 when a unified hierarchy offers pids, memory and
 * cpu, else the v1 hierarchies of those controllers. `parent` (MACHINE_CGROUP_PARENT) is a path inside
 * the hierarchy; by default /cua-machines under v2, and the service's own cgroup + /cua-machines under
 * v1. Throws, saying what is missing, when neither is usable.
 */
export function detectCgroups(parent: string | null = null): CgroupLayout {
  const info = mounts(readFileSync("/proc/self/mountinfo", "utf8"));
  const own = ownCgroups(readFileSync("/proc/self/cgroup", "utf8"));
  if (parent !== null && !path.isAbsolute(parent)) throw new Error(`the cgroup parent ${parent} is not absolute`);
  for (const m of info.filter((e) => e.fsType === "cgroup2")) {
    const controllers = (() => {
      try {
        return readFileSync(path.join(m.mountPoint, "cgroup.controllers"), "utf8").trim().split(/\s+/);
      } catch {
        return [];
      }
    })();
    if (m.root === "/" && CONTROLLERS.every((c) => controllers.includes(c)))
      return { version: 2, root: m.mountPoint, parent: path.join(m.mountPoint, parent ?? "/cua-machines") };
  }
  const parents: Partial<Record<Controller, string>> = {};
  for (const c of CONTROLLERS) {
    const m = info.find((e) => e.fsType === "cgroup" && e.superOpts.includes(c));
    if (!m) continue;
    let inside = parent;
    if (inside === null) {
      const mine = own.get(c) ?? "/";
      // the mount shows the hierarchy from m.root down (a container's view)
      const rel = m.root === "/" ? mine : mine.startsWith(m.root) ? mine.slice(m.root.length) || "/" : "/";
      inside = path.join(rel, "cua-machines");
    }
    parents[c] = path.join(m.mountPoint, inside);
  }
  const missing = CONTROLLERS.filter((c) => !parents[c]);
  if (missing.length)
    throw new Error(
      `no cgroup hierarchy offers ${missing.join(", ")} (neither cgroup v2 with the pids, memory and cpu controllers nor their v1 hierarchies are mounted)`,
    );
  return { version: 1, parents: parents as Record<Controller, string> };
}

/** The cgroup directories of one machine (one under v2, one per controller under v1). */
export function cgroupDirs(layout: CgroupLayout, name: string): string[] {
  if (layout.version === 2) return [path.join(layout.parent, name)];
  return CONTROLLERS.map((c) => path.join(layout.parents[c], name));
}

/** The files the jail's wrapper writes its pid into (jail.ts). */
export function cgroupProcsFiles(layout: CgroupLayout, name: string): string[] {
  return cgroupDirs(layout, name).map((d) => path.join(d, "cgroup.procs"));
}

/** The limit files and values for one machine, in write order (exported for tests of their shape). */
export function limitWrites(
  layout: CgroupLayout,
  name: string,
  limits: MachineLimits,
  has: (file: string) => boolean = existsSync,
): [file: string, value: string][] {
  const n = (v: number | null, unlimited: string) => (v === null ? unlimited : String(Math.floor(v)));
  const quota = limits.cpus === null ? null : Math.max(1000, Math.round(limits.cpus * PERIOD_US));
  const out: [string, string][] = [];
  if (layout.version === 2) {
    const d = path.join(layout.parent, name);
    out.push([path.join(d, "pids.max"), n(limits.pids, "max")]);
    out.push([path.join(d, "memory.max"), n(limits.memory, "max")]);
    if (has(path.join(d, "memory.swap.max"))) out.push([path.join(d, "memory.swap.max"), n(limits.swap, "max")]);
    out.push([path.join(d, "cpu.weight"), String(limits.cpuWeight)]);
    out.push([path.join(d, "cpu.max"), `${quota === null ? "max" : quota} ${PERIOD_US}`]);
    return out;
  }
  const p = path.join(layout.parents.pids, name);
  const m = path.join(layout.parents.memory, name);
  const c = path.join(layout.parents.cpu, name);
  out.push([path.join(p, "pids.max"), n(limits.pids, "max")]);
  // memsw (memory + swap) must stay >= memory: lifted first, set after memory
  const memsw = path.join(m, "memory.memsw.limit_in_bytes");
  if (has(memsw)) out.push([memsw, "-1"]);
  out.push([path.join(m, "memory.limit_in_bytes"), n(limits.memory, "-1")]);
  if (has(memsw))
    out.push([memsw, limits.memory === null || limits.swap === null ? "-1" : String(limits.memory + limits.swap)]);
  // v1 shares: 1024 is the default, as weight 100 is under v2
  out.push([path.join(c, "cpu.shares"), String(Math.max(2, Math.round((limits.cpuWeight * 1024) / 100)))]);
  out.push([path.join(c, "cpu.cfs_period_us"), String(PERIOD_US)]);
  out.push([path.join(c, "cpu.cfs_quota_us"), quota === null ? "-1" : String(quota)]);
  return out;
}

async function write(file: string, value: string): Promise<void> {
  try {
    await writeFile(file, value);
  } catch (e) {
    throw new Error(`cannot write ${value} to ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
}

/** Enables the controllers in every cgroup.subtree_control from the v2 root down to `dir` (inclusive). */
async function enableControllers(root: string, dir: string): Promise<void> {
  const rel = path.relative(root, dir);
  let cur = root;
  for (const part of ["", ...rel.split(path.sep).filter(Boolean)]) {
    cur = part ? path.join(cur, part) : cur;
    const file = path.join(cur, "cgroup.subtree_control");
    const on = (await readFile(file, "utf8")).trim().split(/\s+/);
    const need = CONTROLLERS.filter((c) => !on.includes(c));
    // EBUSY here: the cgroup holds processes (v2's no-internal-process rule); choose MACHINE_CGROUP_PARENT
    if (need.length) await write(file, need.map((c) => `+${c}`).join(" "));
  }
}

function parentsOf(layout: CgroupLayout): string[] {
  return layout.version === 2 ? [layout.parent] : CONTROLLERS.map((c) => layout.parents[c]);
}

/** Creates (or re-adopts) the machine's cgroup with its limits; returns its cgroup.procs files. */
export async function setupCgroup(layout: CgroupLayout, name: string, limits: MachineLimits): Promise<string[]> {
  if (!NAME.test(name)) throw new Error(`not a machine cgroup name: ${name}`);
  try {
    return await setupCgroupOnce(layout, name, limits);
  } catch {
    // the parent was removed as empty by another machine's leave() in between: once more
    return await setupCgroupOnce(layout, name, limits);
  }
}

async function setupCgroupOnce(layout: CgroupLayout, name: string, limits: MachineLimits): Promise<string[]> {
  if (layout.version === 2) {
    await mkdir(layout.parent, { recursive: true });
    await enableControllers(layout.root, layout.parent);
  } else for (const c of CONTROLLERS) await mkdir(layout.parents[c], { recursive: true });
  for (const d of cgroupDirs(layout, name)) await mkdir(d, { recursive: true });
  for (const [file, value] of limitWrites(layout, name, limits)) await write(file, value);
  return cgroupProcsFiles(layout, name);
}

async function pidsIn(dir: string): Promise<number[]> {
  try {
    return (await readFile(path.join(dir, "cgroup.procs"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map(Number)
      .filter((p) => p > 0);
  } catch {
    return [];
  }
}

/**
 * Kills every process left in the machine's cgroup and removes it (idempotent). New tasks are refused
 * first (pids.max 0), so a fork bomb cannot outrun the kill. Throws if it still holds processes after
 * `timeoutMs`.
 */
export async function removeCgroup(layout: CgroupLayout, name: string, timeoutMs = 10_000): Promise<void> {
  if (!NAME.test(name)) throw new Error(`not a machine cgroup name: ${name}`);
  const dirs = cgroupDirs(layout, name).filter((d) => existsSync(d));
  if (!dirs.length) return;
  const pidsDir = layout.version === 2 ? dirs[0]! : path.join(layout.parents.pids, name);
  await writeFile(path.join(pidsDir, "pids.max"), "0").catch(() => {});
  if (layout.version === 2) await writeFile(path.join(dirs[0]!, "cgroup.kill"), "1").catch(() => {});
  const deadline = Date.now() + timeoutMs;
  let left = dirs;
  for (;;) {
    for (const d of left) {
      for (const pid of await pidsIn(d)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {}
      }
      await rmdir(d).catch(() => {});
    }
    left = left.filter((d) => existsSync(d));
    if (!left.length) {
      // the parent goes too once empty (it sits in the service's own cgroup under v1, which a supervisor
      // may want to remove); the next machine creates it again
      for (const p of parentsOf(layout)) await rmdir(p).catch(() => {});
      return;
    }
    if (Date.now() > deadline)
      throw new Error(`the cgroup ${left.join(", ")} still holds ${(await pidsIn(left[0]!)).length} processes`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Whether the machine's cgroup exists (in every hierarchy). */
export function cgroupExists(layout: CgroupLayout, name: string): boolean {
  return cgroupDirs(layout, name).every((d) => existsSync(d));
}

/**
 * Removes the cgroups (killing their processes) of machines whose user is gone; returns their names.
 * `live()` is asked after the listing: a machine another process sets up meanwhile (its user is created
 * before its cgroup) is never taken for a stale one.
 */
export async function sweepCgroups(layout: CgroupLayout, live: () => Promise<Set<string>>): Promise<string[]> {
  const parents = parentsOf(layout);
  const found = new Set<string>();
  for (const p of parents) for (const e of await readdir(p).catch(() => [] as string[])) if (NAME.test(e)) found.add(e);
  const liveHex = await live();
  const stale = [...found].filter((e) => !liveHex.has(e.slice("cuan-".length)));
  for (const name of stale) await removeCgroup(layout, name);
  return stale;
}
