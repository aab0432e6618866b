// Spawning and reaping processes for the local desktop provider: everything a machine runs is started
// as that machine's unprivileged user (uid/gid), with a clean environment, in its own process group.

import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { type Jail, jailedCommand } from "./isolation/jail.ts";

export interface UserIdentity {
  name: string;
  uid: number;
  gid: number;
  home: string;
  /** set while the machine runs isolated: its processes start inside these namespaces (isolation/) */
  jail?: Jail | null;
}

/**
 * How to spawn `command` as the user: with uid/gid options, or (when the user is jailed) as root through
 * nsenter, which enters the machine's namespaces and drops to the user's ids itself.
 */
export function userSpawn(
  user: UserIdentity,
  command: string,
  args: string[],
  cwd: string,
): { command: string; args: string[]; ids: { uid?: number; gid?: number } } {
  if (user.jail) return { ...jailedCommand(user.jail, user, cwd, command, args), ids: {} };
  return { command, args, ids: { uid: user.uid, gid: user.gid } };
}

export const SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin";
const ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The whole environment of a machine process: nothing of the service's own environment leaks in. */
export function userEnv(user: UserIdentity, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {
    HOME: user.home,
    USER: user.name,
    LOGNAME: user.name,
    SHELL: "/bin/bash",
    PATH: SYSTEM_PATH,
    LANG: "C.UTF-8",
    TMPDIR: `${user.home}/.tmp`,
  };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

export interface DaemonInfo {
  pid: number;
  start_time: number;
}

/**
 * Starts a long-lived process as the user, detached (own session and process group), with output
 * appended to logFile. The child survives a restart of the service and is re-adopted by pid.
 */
export function spawnDaemon(
  user: UserIdentity,
  command: string,
  args: string[],
  options: { env: Record<string, string>; logFile: string; stdio?: ("ignore" | "pipe")[] },
): { child: ChildProcess; pid: number } {
  const fd = openSync(options.logFile, "a", 0o600);
  try {
    const how = userSpawn(user, command, args, user.home);
    const child = spawn(how.command, how.args, {
      ...how.ids,
      cwd: user.home,
      env: options.env as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["ignore", fd, fd, ...(options.stdio ?? [])],
    });
    // A spawn that fails (ENOENT, EACCES) emits 'error' on the next tick: without a listener that
    // event ends the whole service (issue 10). The listener goes on before anything can throw.
    child.on("error", () => {});
    if (child.pid === undefined) throw new SpawnError(command);
    child.unref();
    return { child, pid: child.pid };
  } finally {
    closeSync(fd);
  }
}

/** A process that could not be started at all (its 'error' event has been handled). */
export class SpawnError extends Error {
  constructor(readonly command: string) {
    super(`could not start ${command} (not found or not executable)`);
  }
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  timedOut: boolean;
  /** stdout exceeded maxStdout and was cut */
  overflow: boolean;
}

export interface RunOptions {
  /** run as this user; as the service's own user (root) when absent */
  user?: UserIdentity;
  env?: Record<string, string>;
  input?: Buffer | string;
  timeoutMs?: number;
  maxStdout?: number;
  signal?: AbortSignal;
  cwd?: string;
}

/** Runs a command to completion, in its own process group so a timeout reaps all of it. */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const maxStdout = options.maxStdout ?? 64 * 1024 * 1024;
    const cwd = options.cwd ?? options.user?.home ?? "/";
    const how = options.user ? userSpawn(options.user, command, args, cwd) : { command, args, ids: {} };
    const child = spawn(how.command, how.args, {
      ...how.ids,
      cwd,
      env: (options.env ??
        (options.user
          ? userEnv(options.user, { LC_ALL: "C" })
          : { PATH: ROOT_PATH, LC_ALL: "C" })) as NodeJS.ProcessEnv,
      detached: true,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    let outLen = 0;
    let overflow = false;
    let stderr = "";
    let timedOut = false;
    const killGroup = () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {}
      }
    };
    const timer = options.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          killGroup();
        }, options.timeoutMs)
      : undefined;
    const onAbort = () => {
      timedOut = true;
      killGroup();
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout!.on("data", (d: Buffer) => {
      if (outLen + d.length > maxStdout) {
        overflow = true;
        const room = maxStdout - outLen;
        if (room > 0) out.push(d.subarray(0, room));
        outLen = maxStdout;
        return;
      }
      out.push(d);
      outLen += d.length;
    });
    child.stderr!.on("data", (d: Buffer) => {
      if (stderr.length < 16_384) stderr += d.toString("utf8");
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      reject(e);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr, timedOut, overflow });
    });
    if (options.input !== undefined) {
      child.stdin!.on("error", () => {});
      child.stdin!.end(options.input);
    }
  });
}

/** Like run, but throws with stderr when the exit code is not 0. */
export async function runChecked(command: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const r = await run(command, args, options);
  if (r.code !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} failed (${r.timedOut ? "timed out" : `exit ${r.code ?? r.signal}`}): ${r.stderr.trim()}`,
    );
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// /proc

export interface ProcInfo {
  pid: number;
  uid: number;
  state: string;
  pgid: number;
  start_time: number;
  cmdline: string[];
}

async function readProc(pid: number): Promise<ProcInfo | null> {
  try {
    const [status, stat, cmd] = await Promise.all([
      readFile(`/proc/${pid}/status`, "utf8"),
      readFile(`/proc/${pid}/stat`, "utf8"),
      readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => ""),
    ]);
    const uidLine = status.match(/^Uid:\s+(\d+)\s+(\d+)/m);
    const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields after "(comm)": state(3) ppid(4) pgrp(5) ... starttime(22)
    return {
      pid,
      uid: uidLine ? Number(uidLine[1]) : -1,
      state: after[0] ?? "?",
      pgid: Number(after[2]),
      start_time: Number(after[19]),
      cmdline: cmd.split("\0").filter((s) => s.length > 0),
    };
  } catch {
    return null;
  }
}

export async function procInfo(pid: number): Promise<ProcInfo | null> {
  return readProc(pid);
}

/** Live (non-zombie) processes whose real uid is uid. */
export async function processesOfUid(uid: number, includeZombies = false): Promise<ProcInfo[]> {
  const entries = await readdir("/proc");
  const infos = await Promise.all(entries.filter((e) => /^\d+$/.test(e)).map((e) => readProc(Number(e))));
  return infos.filter((p): p is ProcInfo => p !== null && p.uid === uid && (includeZombies || p.state !== "Z"));
}

/**
 * Display numbers of the X servers running on this host (Xvfb, Xorg, Xvnc... with a `:<n>` argument), in
 * any namespace: an isolated machine's X socket is in its own /tmp, not in the host's /tmp/.X11-unix.
 * Only the oldest X server of each uid counts: a machine's own Xvfb starts before anything its user runs,
 * so X servers a tenant starts itself cannot take display numbers away from other machines.
 */
export async function xServerDisplays(): Promise<Set<number>> {
  const entries = await readdir("/proc");
  const infos = await Promise.all(entries.filter((e) => /^\d+$/.test(e)).map((e) => readProc(Number(e))));
  const oldest = new Map<number, ProcInfo>();
  for (const p of infos) {
    if (!p || p.state === "Z" || !/^X[A-Za-z]*$/.test(path.posix.basename(p.cmdline[0] ?? ""))) continue;
    const seen = oldest.get(p.uid);
    if (!seen || p.start_time < seen.start_time) oldest.set(p.uid, p);
  }
  const out = new Set<number>();
  for (const p of oldest.values()) {
    const display = p.cmdline.slice(1).find((a) => /^:\d+$/.test(a));
    if (display) out.add(Number(display.slice(1)));
  }
  return out;
}

/** The process is alive, not a zombie, and (when given) still the same process (start time). */
export async function isAlive(pid: number, startTime?: number, uid?: number): Promise<boolean> {
  const p = await readProc(pid);
  if (!p || p.state === "Z") return false;
  if (startTime !== undefined && p.start_time !== startTime) return false;
  if (uid !== undefined && p.uid !== uid) return false;
  return true;
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {}
}

export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {}
}

/**
 * Ends every process of the uid: SIGTERM, then SIGKILL for whatever is left after graceMs.
 * Returns how many live processes remained at the end (0 on success).
 */
export async function reapUid(uid: number, graceMs = 3000): Promise<number> {
  if (uid === 0) throw new Error("refusing to reap uid 0");
  let procs = await processesOfUid(uid);
  for (const p of procs) signalPid(p.pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (procs.length > 0 && Date.now() < deadline) {
    await delay(50);
    procs = await processesOfUid(uid);
  }
  for (let round = 0; round < 20 && procs.length > 0; round++) {
    for (const p of procs) signalPid(p.pid, "SIGKILL");
    await delay(50);
    procs = await processesOfUid(uid);
  }
  return procs.length;
}

export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  intervalMs = 25,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await delay(intervalMs);
  }
}

export function canConnectUnix(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createConnection({ path });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
    s.setTimeout(500, () => done(false));
  });
}

export function portFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export function portOpen(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createConnection({ port, host });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
    s.setTimeout(500, () => done(false));
  });
}
