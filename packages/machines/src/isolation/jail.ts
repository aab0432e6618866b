// How a machine's process enters its isolation (docs/security.md "Desktop isolation"): the service
// (root) spawns nsenter, which joins the machine's network, mount and IPC namespaces, drops to the
// machine's uid/gid (supplementary groups cleared) and execs `env --chdir=<cwd>`, which execs the program:
// all in the same process, so the pid the service records is the program's own and its process group is the one the service created.

import { existsSync } from "node:fs";

/** The namespaces of one machine, as paths of their bind mounts (/run/netns/..., /run/cua-isolation/mnt/...). */
export interface Jail {
  netns: string;
  mntns: string;
  /** its System V IPC namespace (shared memory of X clients) */
  ipcns: string;
  /** the machine's own address on its veth (the service reaches DevTools/VNC there) */
  address: string;
}

const ENV = ["/usr/bin/env", "/bin/env"].find((p) => existsSync(p)) ?? "env";
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
  return {
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
}
