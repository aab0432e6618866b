// What machine isolation costs (docs/security.md): building and removing a machine's network, mount and
// IPC namespaces and its cgroup, starting a process inside them (cgroup wrapper + nsenter + env) against
// starting it as the user, and starting a whole desktop (Xvfb, openbox, x11vnc, websockify) isolated.
// Run as root: npx tsx bench/machines-isolation.ts [--rounds N] [--spawns N] [--desktops N]

import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { MachineIsolation } from "@cua/machines/isolation/machine-isolation";
import { LocalDesktopProvider } from "@cua/machines/local-desktop-provider";
import { run, type UserIdentity } from "@cua/machines/process-utils";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const rounds = arg("rounds", 10);
const spawns = arg("spawns", 100);
const desktops = arg("desktops", 5);

if (process.getuid?.() !== 0) throw new Error("run as root: namespaces and iptables need it");
const root = await mkdtemp(path.join(os.tmpdir(), "cua-bench-iso-"));
const options = {
  mode: "namespaces" as const,
  hiddenPaths: [],
  forwardedPorts: [[29_100, 29_899]] as [number, number][],
};
const iso = new MachineIsolation(options);
const unlimited = new MachineIsolation({ ...options, limits: null });
const user: UserIdentity = { name: `cua-bench${process.pid.toString(16)}`, uid: 65_534, gid: 65_534, home: root };

async function buildRemove(m: MachineIsolation): Promise<{ up: number; down: number }> {
  const up: number[] = [];
  const down: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let t0 = performance.now();
    await m.enter(user, [root], root);
    up.push(performance.now() - t0);
    t0 = performance.now();
    await m.leave(user.name);
    down.push(performance.now() - t0);
  }
  return { up: median(up), down: median(down) };
}

const spawnTime = async (u: UserIdentity) => {
  const xs: number[] = [];
  for (let i = 0; i < spawns; i++) {
    const t0 = performance.now();
    await run("/bin/true", [], { user: u });
    xs.push(performance.now() - t0);
  }
  return median(xs);
};

/** Start (and stop) of one isolated desktop, `desktops` times; medians in ms. */
async function desktopStarts(): Promise<{ start: number; stop: number; provision: number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "cua-bench-desk-"));
  const provider = new LocalDesktopProvider({ rootDir: dir, displayRange: [700 + (process.pid % 100), 899] });
  const starts: number[] = [];
  const stops: number[] = [];
  let t0 = performance.now();
  let h = await provider.provision({ machineId: `mch_bench_${process.pid.toString(16)}`, displayName: "bench" });
  const provision = performance.now() - t0;
  try {
    for (let i = 0; i < desktops; i++) {
      t0 = performance.now();
      h = await provider.stop(h);
      stops.push(performance.now() - t0);
      t0 = performance.now();
      h = await provider.start(h);
      starts.push(performance.now() - t0);
    }
  } finally {
    await provider.terminate(h).catch(() => {});
    await provider.close();
    await rm(dir, { recursive: true, force: true });
  }
  return { start: median(starts), stop: median(stops), provision };
}

try {
  const limited = await buildRemove(iso);
  const bare = await buildRemove(unlimited);
  const jail = await iso.enter(user, [root], root);
  const plain = await spawnTime({ ...user, jail: null });
  const noCgroup = await spawnTime({ ...user, jail: { ...jail!, cgroupProcs: [] } });
  const jailed = await spawnTime({ ...user, jail });
  await iso.leave(user.name);
  const desk = desktops > 0 ? await desktopStarts() : null;
  console.log(
    `machine isolation (${os.cpus().length} cores, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")})`,
  );
  console.log(
    `namespaces + veth + rules + private /tmp, build x${rounds}: median ${bare.up.toFixed(0)} ms; with the cgroup ${limited.up.toFixed(0)} ms`,
  );
  console.log(
    `namespaces + veth + slot, remove x${rounds}: median ${bare.down.toFixed(0)} ms; with the cgroup ${limited.down.toFixed(0)} ms`,
  );
  console.log(
    `process start x${spawns}: as the user ${plain.toFixed(1)} ms, inside the namespaces ${noCgroup.toFixed(1)} ms, inside namespaces + cgroup ${jailed.toFixed(1)} ms`,
  );
  if (desk)
    console.log(
      `isolated desktop (Xvfb, openbox, x11vnc, websockify): provision ${desk.provision.toFixed(0)} ms; stop x${desktops} median ${desk.stop.toFixed(0)} ms; start x${desktops} median ${desk.start.toFixed(0)} ms`,
    );
} finally {
  await iso.leave(user.name).catch(() => {});
  await rm(root, { recursive: true, force: true });
}
