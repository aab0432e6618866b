// One mount namespace per machine (docs/security.md "Desktop isolation"): the machine's processes see
// the host's programs and libraries, but not the service's files, other machines' homes, the host's
// sockets under /run (PostgreSQL's and Redis's unix sockets, D-Bus) or other users' processes:
//
//   /run                     a fresh empty tmpfs (the host's mounts below it are detached first, so
//                            the namespace holds no reference to another machine's namespaces)
//   hidden paths             an empty read-only tmpfs each (/dev/null for a file): the machines' root
//                            directory, the service's data directory and repository, /root, /home,
//                            /srv, /mnt, /media, /var/log...
//   the machine's home and   bind-mounted back at their usual paths (the service and the machine use
//   runtime directory        the same paths)
//   /etc/passwd, /etc/group  without the other machines' users
//   /proc                    a new proc with hidepid=invisible: a machine's user sees its own processes
//   /tmp, /var/tmp, /dev/shm a fresh tmpfs each (1777, size-limited): nothing one machine leaves there is
//                            seen by another. /tmp/.X11-unix too is the machine's own (root's, 1777, in
//                            that tmpfs): its X server's socket is the only one there, and the other
//                            desktops' X servers are out of reach (their abstract sockets are in their own
//                            network namespaces). The service reaches a display, and reads Xvfb's lock
//                            file, through /proc/<Xvfb's pid>/root (x11SocketOf).
//
// The namespace is kept by bind-mounting it on /run/cua-isolation/mnt/<cuan-hex> (that directory is a
// private mount, as `unshare --mount=<file>` needs); processes enter it with nsenter (jail.ts). An IPC
// namespace of the machine's own is kept beside it (<cuan-hex>.ipc).

import { existsSync, statSync } from "node:fs";
import { mkdir, readdir, readFile, realpath, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { isInside } from "../paths.ts";
import { run } from "../process-utils.ts";
import { ISOLATION_RUN_DIR, netnsNameOf } from "./network.ts";

export const MNT_DIR = path.join(ISOLATION_RUN_DIR, "mnt");

/** Paths every machine has hidden, besides the provider's root directory and the configured ones. */
export const DEFAULT_HIDDEN_PATHS = [
  "/root",
  "/home",
  "/srv",
  "/mnt",
  "/media",
  "/var/log",
  "/var/backups",
  "/var/mail",
  "/var/spool",
] as const;

/** Sizes of a machine's private temporary directories (tmpfs size= values: bytes, or with k/m/g). */
export interface PrivateTmp {
  /** /tmp and /var/tmp, each */
  tmpSize: string;
  /** /dev/shm (Chromium's shared memory between its processes) */
  shmSize: string;
}

export const DEFAULT_PRIVATE_TMP: PrivateTmp = { tmpSize: "1g", shmSize: "1g" };

/** The X sockets' directory: in an isolated machine, its own (in its private /tmp). */
export const X11_SOCKET_DIR = "/tmp/.X11-unix";

/**
 * Where the service (on the host) connects to display `display` of the X server running as `pid`: the
 * socket in that process's own /tmp/.X11-unix, which is the host's for an unisolated machine.
 */
export function x11SocketOf(pid: number, display: number): string {
  return `/proc/${pid}/root${X11_SOCKET_DIR}/X${display}`;
}

function privateDirs(p: PrivateTmp): [dir: string, options: string][] {
  return [
    ["/tmp", `mode=1777,size=${p.tmpSize},nosuid,nodev`],
    ["/var/tmp", `mode=1777,size=${p.tmpSize},nosuid,nodev`],
    ["/dev/shm", `mode=1777,size=${p.shmSize},nosuid,nodev`],
  ];
}

/** Hiding one of these (or an ancestor) would break the desktop's programs. */
const ESSENTIAL = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib32",
  "/lib64",
  "/libx32",
  "/etc",
  "/tmp/.X11-unix",
  "/dev",
  "/proc",
  "/sys",
  "/var/lib/xkb",
  "/var/tmp",
];
const PSEUDO = ["/dev", "/proc", "/sys", "/run"];

/** Why a path cannot be hidden from machines, or null when it can. */
export function hiddenPathProblem(p: string): string | null {
  if (!path.isAbsolute(p)) return `${p} is not an absolute path`;
  const n = path.resolve(p);
  const needed = ESSENTIAL.find((e) => isInside(n, e));
  if (needed) return `${needed} is needed by the desktop's programs`;
  if (PSEUDO.some((e) => isInside(e, n))) return `${n} is on a pseudo file system`;
  return null;
}

/** The smallest set covering `paths` (a path inside another one is dropped), only existing ones. */
export function coverSet(paths: string[]): string[] {
  const uniq = [...new Set(paths.map((p) => path.resolve(p)))].sort((a, b) => a.length - b.length);
  const out: string[] = [];
  for (const p of uniq) if (!out.some((o) => isInside(o, p)) && existsSync(p)) out.push(p);
  return out;
}

function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

async function isMountPoint(p: string): Promise<boolean> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info.split("\n").some((l) => l.split(" ")[4] === p);
}

async function must(cmd: string, args: string[]): Promise<void> {
  const r = await run(cmd, args, { timeoutMs: 20_000 });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr.trim() || `exit ${r.code}`}`);
}

/** /run/cua-isolation/mnt as a private mount of itself (once per boot; idempotent). */
export async function prepareMountDir(): Promise<void> {
  await mkdir(MNT_DIR, { recursive: true, mode: 0o700 });
  if (!(await isMountPoint(MNT_DIR))) await must("mount", ["--bind", MNT_DIR, MNT_DIR]);
  await must("mount", ["--make-private", MNT_DIR]);
}

export function mntnsPathOf(userName: string): string {
  return path.join(MNT_DIR, netnsNameOf(userName));
}

/**
 * The machine's IPC namespace (kept beside its mount namespace): System V shared memory, semaphores
 * and message queues are the machine's own. X clients (scrot, Chromium) share image buffers with Xvfb
 * through MIT-SHM segments that may be created world-readable; in the host's IPC namespace another
 * machine could attach to them and read the screen.
 */
export function ipcnsPathOf(userName: string): string {
  return `${mntnsPathOf(userName)}.ipc`;
}

const ETC_DIR = path.join(ISOLATION_RUN_DIR, "etc");

/**
 * /etc/passwd and /etc/group as a machine sees them: without the other machines' users (whose comment
 * `cua machine <id>`, written by the provider, would tell their machine ids and how many there are).
 */
export function accountsFor(passwd: string, group: string, own: string): { passwd: string; group: string } {
  const others = new Set<string>();
  const pw = passwd.split("\n").filter((l) => {
    const [name, , , , gecos] = l.split(":");
    if (name && name !== own && (gecos ?? "").startsWith("cua machine ")) {
      others.add(name);
      return false;
    }
    return true;
  });
  const gr = group.split("\n").filter((l) => !others.has(l.split(":")[0] ?? ""));
  return { passwd: pw.join("\n"), group: gr.join("\n") };
}

/** The shell script run inside the new mount namespace (exported for tests of its shape). */
export function mountScript(
  hidden: string[],
  keep: string[],
  files: [source: string, target: string][] = [],
  runFiles: [target: string, content: string][] = [],
  privateTmp: PrivateTmp | null = null,
): string {
  const fresh = privateTmp ? privateDirs(privateTmp).filter(([d]) => existsSync(d)) : [];
  const inFresh = (p: string) => fresh.some(([d]) => isInside(d, p));
  // what lies inside a fresh directory is gone anyway
  const cover = coverSet(hidden).filter((c) => !inFresh(c));
  const kept = keep.map((k) => path.resolve(k)).filter((k) => cover.some((c) => isInside(c, k)) || inFresh(k));
  const lines = [
    "set -e",
    // files replaced by the machine's own version (read-only; their sources are under /run, bound before /run goes)
    ...files.flatMap(([src, target]) => [
      `mount --bind ${shq(src)} ${shq(target)}`,
      `mount -o remount,bind,ro ${shq(target)}`,
    ]),
    // detach the host's mounts under /run (deepest first), then a fresh /run
    `for m in $(awk '$5 ~ "^/run(/|$)" {print $5}' /proc/self/mountinfo | sort -r); do umount -l "$m" 2>/dev/null || true; done`,
    "mount -t tmpfs -o mode=0755,size=1m,nosuid,nodev cua-run /run",
    // files that live under /run (an /etc/resolv.conf linked to systemd-resolved's), written afresh
    ...runFiles.flatMap(([target, content]) => [
      `mkdir -p ${shq(path.dirname(target))}`,
      `printf '%s' ${shq(content)} > ${shq(target)}`,
    ]),
  ];
  kept.forEach((k, i) => {
    lines.push(`mkdir -p /run/.keep/${i}`, `mount --bind ${shq(k)} /run/.keep/${i}`);
  });
  // a hidden directory gets an empty tmpfs, a hidden file /dev/null
  const dirs = cover.filter((c) => statSync(c).isDirectory());
  for (const c of cover)
    lines.push(
      dirs.includes(c)
        ? `mount -t tmpfs -o mode=0755,size=256k,nosuid,nodev cua-hidden ${shq(c)}`
        : `mount --bind /dev/null ${shq(c)}`,
    );
  // the machine's own /tmp, /var/tmp, /dev/shm
  for (const [d, options] of fresh) lines.push(`mount -t tmpfs -o ${options} cua-tmp ${shq(d)}`);
  // the machine's own X sockets' directory (root's, 1777 as X servers require), never the host's: no other
  // desktop's socket is listed or reachable there
  if (fresh.some(([d]) => d === "/tmp")) lines.push(`mkdir -m 1777 ${shq(X11_SOCKET_DIR)}`);
  for (const k of kept) lines.push(`mkdir -p ${shq(k)}`);
  for (const c of dirs) lines.push(`mount -o remount,ro,nosuid,nodev ${shq(c)}`);
  kept.forEach((k, i) => {
    lines.push(`mount --move /run/.keep/${i} ${shq(k)}`);
  });
  if (kept.length) lines.push("rmdir /run/.keep/* /run/.keep");
  lines.push("mount -t proc -o nosuid,nodev,noexec,hidepid=invisible proc /proc");
  // read-only /run, without libmount's record (utab) of the mounts above
  lines.push("rm -rf /run/mount", "mount -n -o remount,ro,nosuid,nodev /run");
  return lines.join("\n");
}

/**
 * Creates the machine's mount namespace, or re-adopts an existing one. `keep` (home, runtime directory)
 * stays visible even when it lies inside a hidden path.
 */
export async function setupMountNs(
  userName: string,
  hidden: string[],
  keep: string[],
  resolvConf: string | null = null,
  privateTmp: Partial<PrivateTmp> = {},
): Promise<string> {
  const file = mntnsPathOf(userName);
  const ipc = ipcnsPathOf(userName);
  if ((await isMountPoint(file)) && (await isMountPoint(ipc))) return file;
  await teardownMountNs(userName);
  await writeFile(file, "", { mode: 0o600 });
  await writeFile(ipc, "", { mode: 0o600 });
  await mkdir(ETC_DIR, { recursive: true, mode: 0o700 });
  const accounts = accountsFor(
    await readFile("/etc/passwd", "utf8"),
    await readFile("/etc/group", "utf8").catch(() => ""),
    userName,
  );
  const files: [string, string][] = [];
  for (const [name, content] of Object.entries(accounts)) {
    const src = path.join(ETC_DIR, `${path.basename(file)}.${name}`);
    await writeFile(src, content, { mode: 0o644 });
    files.push([src, `/etc/${name}`]);
  }
  // the machine's resolv.conf (machineDns): bound over the host's, or written into the new /run when the
  // host's is a link into /run (systemd-resolved's stub-resolv.conf)
  const runFiles: [string, string][] = [];
  if (resolvConf !== null) {
    const target = await realpath("/etc/resolv.conf").catch(() => "/etc/resolv.conf");
    if (isInside("/run", target)) runFiles.push([target, resolvConf]);
    else {
      const src = path.join(ETC_DIR, `${path.basename(file)}.resolv.conf`);
      await writeFile(src, resolvConf, { mode: 0o644 });
      files.push([src, "/etc/resolv.conf"]);
    }
  }
  const r = await run(
    "unshare",
    [
      `--mount=${file}`,
      `--ipc=${ipc}`,
      "--propagation",
      "private",
      "--",
      "/bin/sh",
      "-c",
      mountScript(hidden, keep, files, runFiles, { ...DEFAULT_PRIVATE_TMP, ...privateTmp }),
    ],
    { timeoutMs: 20_000 },
  );
  if (r.code !== 0) {
    await teardownMountNs(userName);
    throw new Error(`the machine's mount namespace: ${r.stderr.trim() || `exit ${r.code}`}`);
  }
  return file;
}

export async function teardownMountNs(userName: string): Promise<void> {
  for (const file of [mntnsPathOf(userName), ipcnsPathOf(userName)]) {
    if (await isMountPoint(file)) await run("umount", [file], { timeoutMs: 15_000 });
    if (existsSync(file) && !(await isMountPoint(file))) await unlink(file).catch(() => {});
  }
  for (const name of ["passwd", "group", "resolv.conf"])
    await unlink(path.join(ETC_DIR, `${path.basename(mntnsPathOf(userName))}.${name}`)).catch(() => {});
}

/** Removes kept mount namespaces of users that no longer exist (live users asked after the listing, as in sweepNetworks). */
export async function sweepMountNs(live: () => Promise<Set<string>>): Promise<void> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  const files = new Set<string>();
  for (const l of info.split("\n")) {
    const mp = l.split(" ")[4];
    if (mp && path.dirname(mp) === MNT_DIR) files.add(mp);
  }
  const etc = await readdir(ETC_DIR).catch(() => [] as string[]);
  const liveHex = await live();
  for (const f of etc) {
    const hex = f.replace(/^cuan-/, "").replace(/\.(passwd|group|resolv\.conf)$/, "");
    if (!liveHex.has(hex)) await unlink(path.join(ETC_DIR, f)).catch(() => {});
  }
  for (const f of files) {
    const hex = path
      .basename(f)
      .replace(/^cuan-/, "")
      .replace(/\.ipc$/, "");
    if (liveHex.has(hex)) continue;
    await run("umount", [f], { timeoutMs: 15_000 });
    await unlink(f).catch(() => {});
  }
}
