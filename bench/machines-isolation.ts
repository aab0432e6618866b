// What machine isolation costs (docs/security.md): building and removing a machine's network, mount and
// IPC namespaces, and starting a process inside them (nsenter + env) against starting it as the user.
// Run as root: npx tsx bench/machines-isolation.ts [--rounds N] [--spawns N]

import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { MachineIsolation } from "@cua/machines/isolation/machine-isolation";
import { run, type UserIdentity } from "@cua/machines/process-utils";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const rounds = arg("rounds", 10);
const spawns = arg("spawns", 100);

if (process.getuid?.() !== 0) throw new Error("run as root: namespaces and iptables need it");
const root = await mkdtemp(path.join(os.tmpdir(), "cua-bench-iso-"));
const iso = new MachineIsolation({ mode: "namespaces", hiddenPaths: [], forwardedPorts: [[29_100, 29_899]] });
const user: UserIdentity = { name: `cua-bench${process.pid.toString(16)}`, uid: 65_534, gid: 65_534, home: root };
const up: number[] = [];
const down: number[] = [];
try {
  for (let i = 0; i < rounds; i++) {
    let t0 = performance.now();
    await iso.enter(user, [root], root);
    up.push(performance.now() - t0);
    t0 = performance.now();
    await iso.leave(user.name);
    down.push(performance.now() - t0);
  }
  const jail = await iso.enter(user, [root], root);
  const spawnTime = async (u: UserIdentity) => {
    const xs: number[] = [];
    for (let i = 0; i < spawns; i++) {
      const t0 = performance.now();
      await run("/bin/true", [], { user: u });
      xs.push(performance.now() - t0);
    }
    return median(xs);
  };
  const plain = await spawnTime({ ...user, jail: null });
  const jailed = await spawnTime({ ...user, jail });
  console.log(
    `machine isolation (2 cores, load ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")})`,
  );
  console.log(`namespaces + veth + rules, build x${rounds}: median ${median(up).toFixed(0)} ms`);
  console.log(`namespaces + veth + slot, remove x${rounds}: median ${median(down).toFixed(0)} ms`);
  console.log(
    `process start x${spawns}: as the user ${plain.toFixed(1)} ms, inside the namespaces ${jailed.toFixed(1)} ms`,
  );
} finally {
  await iso.leave(user.name);
  await rm(root, { recursive: true, force: true });
}
