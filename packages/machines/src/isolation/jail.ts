// How a machine's process enters its isolation (docs/security.md "Desktop isolation"): the service
// (root) spawns nsenter, which joins the machine's network, mount and IPC namespaces, drops to the
// machine's uid/gid (supplementary groups cleared) and execs `env --chdir=<cwd>`, which execs the program:
// all in the same process, so the pid the service records is the program's own and its process group is the one the service created.
// Before nsenter, a root shell writes its own pid into the machine's cgroup (cgroup.ts): the process is
// in the cgroup, under its limits, before it can fork or run anything of the machine's.

import { existsSync } from "node:fs";

/** The namespaces of one machine, as paths of their bind mounts (/run/netns/..., /run/cua-isolation/mnt/...). */
export interface Jail {
  netns: string;
  mntns: string;
  /** its System V IPC namespace (shared memory of X clients) */
  ipcns: string;
  /** the machine's own address on its veth (the service reaches DevTools/VNC there) */
  address: string;
  /** cgroup.procs files of the machine's cgroup (cgroup.ts); empty when limits are off (MACHINE_LIMITS=none) */
  cgroupProcs: string[];
}

const ENV = ["/usr/bin/env", "/bin/env"].find((p) => existsSync(p)) ?? "env";
const SH = ["/bin/sh", "/usr/bin/sh"].find((p) => existsSync(p)) ?? "sh";
const NSENTER = ["/usr/bin/nsenter", "/bin/nsenter", "/usr/sbin/nsenter"].find((p) => existsSync(p)) ?? "nsenter";

/**
 * The command line that runs `command args` as uid/gid inside the jail, with `cwd` as its working
 * directory inside the machine's mount namespace. Spawn it as root and without uid/gid options.
 */
export function jailedCommand(
  jail: Jail,
  ids: { uid: number; gid: number },
  cwd: string,
  command: string,
  args: string[],
): { command: string; args: string[] } {
  const enter = {
    command: NSENTER,
    args: [
      `--net=${jail.netns}`,
      `--mount=${jail.mntns}`,
      `--ipc=${jail.ipcns}`,
      `--setgid=${ids.gid}`,
      `--setuid=${ids.uid}`,
      "--",
      // nsenter's --wd opens the directory before entering the mount namespace: the process would then
      // sit in a directory unreachable from its own root (getcwd fails); env changes it from inside
      ENV,
      `--chdir=${cwd}`,
      command,
      ...args,
    ],
  };
  if (!jail.cgroupProcs.length) return enter;
  // joins the cgroup (fails closed: a write that fails ends the process before it runs anything), then
  // becomes nsenter; dash would hand its own PWD (the service's directory) down, so it is unset
  const join = jail.cgroupProcs.map((f) => `echo $$ > ${shq(f)} || exit 125`).join("; ");
  return { command: SH, args: ["-c", `unset PWD; ${join}; exec "$@"`, "cua-jail", enter.command, ...enter.args] };
}

function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
