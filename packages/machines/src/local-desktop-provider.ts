// The default managed provider: real Linux desktops on the host (DECISIONS.md "Machines").
//
// Per machine: an unprivileged user with its own home under rootDir, a free X display served by Xvfb
// with its own -auth cookie and -nolisten tcp, openbox, and Chromium (own process group, own
// --user-data-dir in the home, DevTools on 127.0.0.1 at a per-machine port). Input goes through
// xdotool, screenshots read from Xvfb's framebuffer file (framebuffer.ts; scrot, then ImageMagick
// `import`, when there is none), VNC through x11vnc +
// websockify (noVNC) started on demand. Every process runs as the machine's user, detached in its own
// process group, with a clean environment; stop and terminate reap everything that user runs.
// See docs/machines-provider.md.

import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, existsSync, constants as fsc, readFileSync, statSync } from "node:fs";
import { chmod, chown, lstat, mkdir, open, readFile, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { CoreError } from "@cua/base/errors";
import { z } from "zod";
import { ChromiumBrowser } from "./browser-controller.ts";
import type { CommandBackend, InputAction, ParsedCommand } from "./commands.ts";
import {
  checkOnScreen,
  parseBatch,
  parseBrowserOp,
  parseCommand,
  parseFileOp,
  parseTerminal,
  parseTimeout,
  runBatch,
  runCommand,
} from "./commands.ts";
import { CHROMIUM_POLICIES, desktopKeybinds, desktopKeys, desktopMenuXml } from "./desktop-apps.ts";
import {
  checkRequirements,
  DEFAULT_SEARCH_PATH,
  type MissingRequirement,
  missingMessage,
  REQUIREMENTS,
  type RequirementsReport,
} from "./desktop-requirements.ts";
import { type DevtoolsGuardState, guardDevtoolsPorts } from "./devtools-guard.ts";
import { runFileOp } from "./file-ops.ts";
import { FRAMEBUFFER_FILE, LastFrame, readFramebuffer } from "./framebuffer.ts";
import {
  type IsolationMode,
  type IsolationStatus,
  MachineIsolation,
  type MachineIsolationOptions,
} from "./isolation/machine-isolation.ts";
import { x11SocketOf } from "./isolation/mount.ts";
import { LocalHomeFs } from "./local-fs.ts";
import { isInside } from "./paths.ts";
import { pngSize } from "./png.ts";
import type { ProcInfo, UserIdentity } from "./process-utils.ts";
import {
  canConnectUnix,
  delay,
  isAlive,
  portFree,
  portOpen,
  processesOfUid,
  procInfo,
  reapUid,
  run,
  runChecked,
  SpawnError,
  signalGroup,
  spawnDaemon,
  userEnv,
  userSpawn,
  waitFor,
  xServerDisplays,
} from "./process-utils.ts";
import type {
  BatchResult,
  CommandResult,
  ConnectionInfo,
  ExecuteOptions,
  MachineHandle,
  MachineProvider,
  OpResult,
  ReconcileResult,
  Screenshot,
  SnapshotInfo,
  TerminateResult,
} from "./provider.ts";
import { assertDesktop, assertStatus, MachineHandleBase, MachineOpError, nowIso, ProvisionInput } from "./provider.ts";
import { TerminalSessions } from "./terminal-sessions.ts";
import { XdotoolSession, xdotoolArgs } from "./xdotool-session.ts";

/**
 * Default per-machine port bases (port = base + display). They sit below Linux's ephemeral range
 * (32768..60999): a desktop's port is never taken by some process's outgoing connection or port-0
 * listener, and the DevTools guard's range never covers an unrelated ephemeral listener.
 */
export const DEFAULT_PORT_BASES = { devtools: 29_000, vnc: 30_000, websocket: 31_000 } as const;

/** Which of the ranges overlaps the host's ephemeral port range (net.ipv4.ip_local_port_range). */
export function ephemeralPortOverlaps(
  ranges: Record<string, [number, number]>,
  localPortRange = readLocalPortRange(),
): string[] {
  if (!localPortRange) return [];
  const [elo, ehi] = localPortRange;
  return Object.entries(ranges)
    .filter(([, [lo, hi]]) => lo <= ehi && hi >= elo)
    .map(([name, [lo, hi]]) => `${name} ports ${lo}-${hi}`);
}

function readLocalPortRange(): [number, number] | null {
  try {
    const [lo, hi] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    return lo && hi ? [lo, hi] : null;
  } catch {
    return null;
  }
}

export interface LocalDesktopProviderOptions {
  /** homes live in rootDir/<user>, per-machine runtime files (X cookie, VNC password, logs) in rootDir/.runtime/<user> */
  rootDir: string;
  /** where snapshot archives go (default rootDir/.snapshots) */
  snapshotDir?: string;
  /** user names are `${userPrefix}-<12 hex of sha256(machine id)>` (default "cua") */
  userPrefix?: string;
  /** X display numbers to use, inclusive (default 100..899) */
  displayRange?: [number, number];
  /** per-machine ports are base + display number (defaults: DEFAULT_PORT_BASES, 29000/30000/31000) */
  devtoolsPortBase?: number;
  vncPortBase?: number;
  websocketPortBase?: number;
  /** host name put into connection() answers (default 127.0.0.1) */
  publicHost?: string;
  /** address websockify listens on (default 127.0.0.1; 0.0.0.0 to serve noVNC to other hosts) */
  websocketListenHost?: string;
  chromiumPath?: string;
  /**
   * where the desktop programs (Xvfb, openbox, Chromium, xdotool, scrot, x11vnc, ...) are looked up
   * (default DEFAULT_SEARCH_PATH); a program missing there makes desktops fail to start with a message
   * naming its Debian package, and readiness() report not ready
   */
  searchPath?: string;
  /** keep Chromium's sandbox (default true; needs user namespaces) */
  chromiumSandbox?: boolean;
  /**
   * where the desktops' Chromium policies (CHROMIUM_POLICIES: no save-password bubble, no autofill,
   * translation or notification prompts) are written before a browser starts (default
   * DEFAULT_CHROMIUM_POLICY_FILE, which Debian's Chromium reads; null: not written)
   */
  chromiumPolicyFile?: string | null;
  /** bound for each startup ready check (default 30000 ms) */
  startTimeoutMs?: number;
  novncWebDir?: string;
  /** PNG compression level passed to scrot -q (1..100, higher = faster, larger); default 75 */
  screenshotQuality?: number;
  /** zlib level of screenshots encoded from the framebuffer (0..9; default 1, framebuffer.ts) */
  screenshotLevel?: number;
  /** provider name stored in handles (default "local-desktop") */
  name?: string;
  /**
   * keep the desktops' DevTools ports to the service's own uid with an iptables owner rule (default true;
   * see devtools-guard.ts). When the rule cannot be installed the desktops still run and `onWarning` says why.
   */
  devtoolsGuard?: boolean;
  /** where the provider reports what weakens isolation (default console.warn) */
  onWarning?: (message: string) => void;
  /**
   * "namespaces" (default): each machine runs in its own network and mount namespace (isolation/,
   * docs/security.md); a host that cannot build them fails the machine's start. "none": the opt-out.
   */
  isolation?: IsolationMode;
  /** IPv4 pool of the machines' links (default 10.231.0.0/16) */
  isolationPool?: string;
  /** more paths machines must not see (the service's data directory, its repository...) */
  hiddenPaths?: string[];
  /** each machine's cgroup limits and private /tmp sizes (isolation/cgroup.ts, mount.ts; docs/security.md) */
  isolationLimits?: Pick<MachineIsolationOptions, "limits" | "cgroupParent" | "tmpSize" | "shmSize">;
}

/** What readiness() answers: whether this host can run machines and desktops now. */
export interface ProviderReadiness {
  /** a desktop machine can be provisioned here (programs present, running as root, last desktop start did not fail) */
  ready: boolean;
  /** machines without a desktop can be provisioned (root, useradd, bash...) */
  machines_ready: boolean;
  root: boolean;
  missing: MissingRequirement[];
  /** outcome of the most recent desktop start in this process (null before the first) */
  last_desktop_start: { ok: boolean; at: string; detail: string } | null;
  /** Xvfb and Chromium ran when probe() tried them (null before the first probe) */
  programs_run: boolean | null;
  /** how machines are isolated from the host and from each other (docs/security.md) */
  isolation: IsolationStatus;
  detail: string;
}

const ProcRecord = z.object({ role: z.string(), pid: z.number().int(), start_time: z.number() });

export const LocalDesktopHandle = MachineHandleBase.extend({
  user: z.string().regex(/^[a-z][a-z0-9-]{1,31}$/),
  uid: z.number().int().positive(),
  gid: z.number().int().positive(),
  home_dir: z.string().startsWith("/"),
  runtime_dir: z.string().startsWith("/"),
  display: z.number().int().nullable(),
  devtools_port: z.number().int().nullable(),
  vnc_port: z.number().int().nullable(),
  websocket_port: z.number().int().nullable(),
  processes: z.array(ProcRecord),
  /** the machine's address on its veth while it runs isolated (isolation/); absent or null otherwise */
  net_address: z.string().nullable().optional(),
});
export type LocalDesktopHandle = z.infer<typeof LocalDesktopHandle> & MachineHandle;

const CHROMIUM_PROFILE = ".config/cua-chromium";
const OPENBOX_SYSTEM_RC = "/etc/xdg/openbox/rc.xml";
const OPENBOX_MINIMAL_RC = `<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>yes</followMouse><focusDelay>0</focusDelay><raiseOnFocus>yes</raiseOnFocus></focus>
  <desktops><number>1</number></desktops>
  <mouse><context name="Client"></context></mouse>
  <keyboard></keyboard>
</openbox_config>
`;

/**
 * The desktop's keyboard shortcuts and root menu (issue 15), generated from DESKTOP_APPS (desktop-apps.ts,
 * also served by GET /v1/models): ctrl+alt+t a terminal (xterm), ctrl+alt+f / super+e the file manager,
 * ctrl+alt+e the text editor, ctrl+alt+m (or a right-click on the desktop background) the root menu.
 */
export const DESKTOP_KEYBINDS = desktopKeybinds();
const ROOT_MENU_BINDING =
  '<context name="Root"><mousebind button="Right" action="Press"><action name="ShowMenu"><menu>root-menu</menu></action></mousebind></context>';

/**
 * openbox's stock Client-context bindings (Press -> Focus, Raise) put a synchronous passive grab on
 * every application window; under CPU load Chromium then lost about 1 in 200 rapid clicks (measured:
 * 4/800 with the grabs, 0/800 without). The machine's openbox gets the stock config without those
 * bindings, with focus following the pointer instead (xdotool moves the pointer before every click).
 * `menuFile` (absolute) replaces the stock menu files (Debian's menu lists programs the machine lacks).
 */
export function openboxConfig(stock: string | null, menuFile?: string): string {
  const menu = menuFile ? `<menu><file>${menuFile}</file></menu>` : "";
  if (!stock?.includes('<context name="Client">'))
    return OPENBOX_MINIMAL_RC.replace("<keyboard>", `<keyboard>${DESKTOP_KEYBINDS}`)
      .replace('<context name="Client"></context>', `<context name="Client"></context>${ROOT_MENU_BINDING}`)
      .replace("</openbox_config>", `${menu}\n</openbox_config>`);
  // the stock config binds super+e to kfmclient (absent: openbox then shows an error prompt)
  for (const key of desktopKeys())
    stock = stock.replace(new RegExp(`<keybind key="${key}">[\\s\\S]*?</keybind>`, "g"), "");
  let rc = stock
    .replace("<keyboard>", `<keyboard>${DESKTOP_KEYBINDS}`)
    .replace(/<context name="Client">[\s\S]*?<\/context>/, '<context name="Client"></context>')
    .replace(/<followMouse>[^<]*<\/followMouse>/, "<followMouse>yes</followMouse>")
    .replace(/<focusDelay>[^<]*<\/focusDelay>/, "<focusDelay>0</focusDelay>")
    .replace(/<raiseOnFocus>[^<]*<\/raiseOnFocus>/, "<raiseOnFocus>yes</raiseOnFocus>");
  if (!rc.includes('<context name="Root">')) rc = rc.replace("</mouse>", `${ROOT_MENU_BINDING}</mouse>`);
  if (menuFile) {
    rc = /<file>[^<]*<\/file>/.test(rc)
      ? rc.replace(/<file>[^<]*<\/file>(\s*<file>[^<]*<\/file>)*/, `<file>${menuFile}</file>`)
      : rc.replace("</openbox_config>", `${menu}\n</openbox_config>`);
  }
  return rc;
}
const SNAPSHOT_ID = /^snap_[0-9a-f]{24}$/;

/** Debian's Chromium reads its enterprise policies from this directory (every machine sees the host's /etc). */
export const DEFAULT_CHROMIUM_POLICY_FILE = "/etc/chromium/policies/managed/cua-managed-desktop.json";

/** Writes the desktops' Chromium policies when the file does not hold them already (root-owned, 0644). */
export async function writeChromiumPolicies(file: string): Promise<boolean> {
  const body = `${JSON.stringify(CHROMIUM_POLICIES, null, 2)}\n`;
  if ((await readFile(file, "utf8").catch(() => null)) === body) return false;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(tmp, body, { mode: 0o644, flag: "wx" });
  await chmod(tmp, 0o644);
  await rename(tmp, file);
  return true;
}

/** Creates a file afresh (never through an existing name or link) in a root-owned directory. */
async function writeRootFile(
  file: string,
  data: string | Buffer,
  mode: number,
  owner: UserIdentity | null,
): Promise<void> {
  await unlink(file).catch(() => {});
  await writeFile(file, data, { mode, flag: "wx" });
  if (owner) await chown(file, owner.uid, owner.gid);
  await chmod(file, mode);
}

/** Reads a file the machine's user wrote: no symlinks, regular file, owned by that user. */
async function readUserFile(file: string, uid: number): Promise<Buffer> {
  const fh = await open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.uid !== uid || st.size > 64 * 1024 * 1024) throw new Error("unexpected screenshot file");
    return await fh.readFile();
  } finally {
    await fh.close();
  }
}

/** State, start time and owner of a process from /proc, read synchronously (microseconds); null when gone or a zombie. */
function xvfbLiveness(pid: number): { start_time: number; uid: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (after[0] === "Z" || after[0] === "X") return null;
    return { start_time: Number(after[19]), uid: statSync(`/proc/${pid}`).uid };
  } catch {
    return null;
  }
}

class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => {});
    return next;
  }
}

interface Runtime {
  handle: LocalDesktopHandle;
  user: UserIdentity;
  lifecycle: Mutex;
  input: Mutex;
  terminals: TerminalSessions;
  xdo: XdotoolSession;
  /** pid:start time:display of the Xvfb known to keep a framebuffer file (its command line was checked) */
  framebufferXvfb?: string;
  /** the last screenshot's pixels and PNG (framebuffer.ts): an unchanged screen is not encoded again */
  lastFrame?: LastFrame;
  /** serialises Chromium start-ups (two ops at once would start two browsers on one profile) */
  browserStart: Mutex;
  browser: ChromiumBrowser;
  fs: LocalHomeFs;
}

function basename(p: string | undefined): string {
  return p ? path.posix.basename(p) : "";
}

function xauthEntry(display: number, cookie: Buffer): Buffer {
  // FamilyWild (0xffff) entry: matches any host address for this display number
  const field = (b: Buffer) => {
    const len = Buffer.alloc(2);
    len.writeUInt16BE(b.length);
    return Buffer.concat([len, b]);
  };
  const family = Buffer.alloc(2);
  family.writeUInt16BE(0xffff);
  return Buffer.concat([
    family,
    field(Buffer.alloc(0)),
    field(Buffer.from(String(display))),
    field(Buffer.from("MIT-MAGIC-COOKIE-1")),
    field(cookie),
  ]);
}

export class LocalDesktopProvider implements MachineProvider {
  readonly name: string;
  private readonly rootDir: string;
  private readonly runtimeRoot: string;
  private readonly snapshotDir: string;
  private readonly opts: Required<
    Omit<
      LocalDesktopProviderOptions,
      "rootDir" | "snapshotDir" | "name" | "isolation" | "isolationPool" | "hiddenPaths" | "isolationLimits"
    >
  >;
  /** network/mount namespaces of the machines (isolation/machine-isolation.ts) */
  readonly isolation: MachineIsolation;
  private swept: Promise<void> | null = null;
  private readonly runtimes = new Map<string, Runtime>();
  private readonly machineLocks = new Map<string, Mutex>();
  private readonly claimedDisplays = new Set<number>();
  private readonly userAdmin = new Mutex();
  private devtoolsGuardState: Promise<DevtoolsGuardState> | null = null;
  private requirementsCache: { at: number; report: RequirementsReport } | null = null;
  private lastDesktopStart: ProviderReadiness["last_desktop_start"] = null;
  private probeState: { at: number; failure: string | null } | null = null;
  private probing: Promise<void> | null = null;

  constructor(options: LocalDesktopProviderOptions) {
    if (!path.isAbsolute(options.rootDir) || path.resolve(options.rootDir) === "/") {
      throw new Error("LocalDesktopProvider: rootDir must be an absolute directory other than /");
    }
    this.name = options.name ?? "local-desktop";
    this.rootDir = path.resolve(options.rootDir);
    this.runtimeRoot = path.join(this.rootDir, ".runtime");
    this.snapshotDir = path.resolve(options.snapshotDir ?? path.join(this.rootDir, ".snapshots"));
    this.opts = {
      userPrefix: options.userPrefix ?? "cua",
      displayRange: options.displayRange ?? [100, 899],
      devtoolsPortBase: options.devtoolsPortBase ?? DEFAULT_PORT_BASES.devtools,
      vncPortBase: options.vncPortBase ?? DEFAULT_PORT_BASES.vnc,
      websocketPortBase: options.websocketPortBase ?? DEFAULT_PORT_BASES.websocket,
      publicHost: options.publicHost ?? "127.0.0.1",
      websocketListenHost: options.websocketListenHost ?? "127.0.0.1",
      chromiumPath:
        options.chromiumPath ?? (existsSync("/usr/lib/chromium/chromium") ? "/usr/lib/chromium/chromium" : "chromium"),
      searchPath: options.searchPath ?? DEFAULT_SEARCH_PATH,
      chromiumSandbox: options.chromiumSandbox ?? true,
      chromiumPolicyFile:
        options.chromiumPolicyFile === undefined ? DEFAULT_CHROMIUM_POLICY_FILE : options.chromiumPolicyFile,
      startTimeoutMs: options.startTimeoutMs ?? 30_000,
      novncWebDir: options.novncWebDir ?? "/usr/share/novnc",
      screenshotQuality: options.screenshotQuality ?? 75,
      screenshotLevel: options.screenshotLevel ?? 1,
      devtoolsGuard: options.devtoolsGuard ?? true,
      onWarning: options.onWarning ?? ((m: string) => console.warn(m)),
    };
    if (!/^[a-z][a-z0-9]{0,10}$/.test(this.opts.userPrefix))
      throw new Error("LocalDesktopProvider: userPrefix must match ^[a-z][a-z0-9]{0,10}$");
    const [lo, hi] = this.opts.displayRange;
    this.isolation = new MachineIsolation({
      mode: options.isolation ?? "namespaces",
      ...(options.isolationPool ? { pool: options.isolationPool } : {}),
      ...options.isolationLimits,
      hiddenPaths: [this.snapshotDir, ...(options.hiddenPaths ?? [])],
      forwardedPorts: [
        [this.opts.devtoolsPortBase + lo, this.opts.devtoolsPortBase + hi],
        [this.opts.vncPortBase + lo, this.opts.vncPortBase + hi],
        [this.opts.websocketPortBase + lo, this.opts.websocketPortBase + hi],
      ],
      servicePorts: [this.opts.devtoolsPortBase + lo, this.opts.devtoolsPortBase + hi],
    });
    const overlaps = ephemeralPortOverlaps({
      DevTools: [this.opts.devtoolsPortBase + lo, this.opts.devtoolsPortBase + hi],
      VNC: [this.opts.vncPortBase + lo, this.opts.vncPortBase + hi],
      websocket: [this.opts.websocketPortBase + lo, this.opts.websocketPortBase + hi],
    });
    if (overlaps.length)
      this.opts.onWarning(
        `machines: ${overlaps.join(", ")} overlap the host's ephemeral port range; another process can take a desktop's port, and the DevTools guard blocks unrelated listeners there`,
      );
  }

  // -------------------------------------------------------------------------------------------
  // identities and bookkeeping

  /** The Linux user name of a machine id. */
  userNameFor(machineId: string): string {
    return `${this.opts.userPrefix}-${createHash("sha256").update(machineId).digest("hex").slice(0, 12)}`;
  }

  /** The host's programs for this provider, looked up at most every 5 s. */
  requirements(): RequirementsReport {
    const now = Date.now();
    if (!this.requirementsCache || now - this.requirementsCache.at > 5000) {
      this.requirementsCache = {
        at: now,
        report: checkRequirements(this.opts.searchPath, { chromium: this.opts.chromiumPath }),
      };
    }
    return this.requirementsCache.report;
  }

  /** Absolute path of a program (the bare name when missing: spawning it then fails and is handled). */
  private bin(name: string): string {
    return this.requirements().paths[name] ?? (name === "chromium" ? this.opts.chromiumPath : name);
  }

  /** 503 naming the missing programs and their packages, before anything is created or started. */
  private preflight(desktop: boolean): void {
    const roles = desktop ? ["machine", "desktop", "screenshot"] : ["machine"];
    const missing = this.requirements().missing.filter((m) => roles.includes(m.role));
    if (missing.length > 0) {
      this.requirementsCache = null; // look again next time (packages may be installed meanwhile)
      throw new CoreError("UPSTREAM_UNAVAILABLE", missingMessage(missing), { retry_after: 60 });
    }
  }

  /**
   * Runs the desktop programs once (`Xvfb -help`, `chromium --version`; cached 60 s) so that readiness()
   * also knows whether they run on this host (a Chromium missing a shared library exits at once). GET
   * /v1/machines/health calls it first.
   */
  probe(): Promise<void> {
    if (this.probeState && Date.now() - this.probeState.at < 60_000) return Promise.resolve();
    this.probing ??= (async () => {
      const paths = this.requirements().paths;
      let failure: string | null = null;
      for (const [name, args] of [
        ["Xvfb", ["-help"]],
        ["chromium", ["--version"]],
      ] as const) {
        const bin = paths[name];
        if (!bin) continue; // reported as missing
        try {
          const r = await run(bin, [...args], { timeoutMs: 15_000 });
          if (r.code !== 0) {
            const out = r.stderr.trim().split("\n").slice(-3).join(" | ").slice(-600);
            failure = `${name} (${bin}) does not run here (${r.timedOut ? "timed out" : `exit ${r.code ?? r.signal}`})${out ? `: ${out}` : ""}`;
            break;
          }
        } catch (e) {
          failure = `${name} (${bin}) could not be run: ${e instanceof Error ? e.message : String(e)}`;
          break;
        }
      }
      this.probeState = { at: Date.now(), failure };
    })().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  /** Whether machines and desktops can start on this host now (GET /v1/machines/health). */
  readiness(): ProviderReadiness {
    const root = process.getuid?.() === 0;
    const missing = this.requirements().missing;
    const machineMissing = missing.filter((m) => m.role === "machine");
    const desktopMissing = missing.filter((m) => ["machine", "desktop", "screenshot"].includes(m.role));
    const last = this.lastDesktopStart;
    const isolation = this.isolation.status();
    const isolationMissing = isolation.mode === "namespaces" ? this.isolation.missingTools() : [];
    const isolationOk = isolation.available !== false && isolationMissing.length === 0;
    const machines_ready = root && machineMissing.length === 0 && isolationOk;
    const probeFailure = this.probeState?.failure ?? null;
    const ready = machines_ready && desktopMissing.length === 0 && !probeFailure && last?.ok !== false;
    const detail = !root
      ? "The service does not run as root: it cannot create the machines' users."
      : !isolationOk
        ? isolationMissing.length > 0
          ? `Machine isolation needs ${isolationMissing.join(", ")} (or MACHINE_ISOLATION=none).`
          : isolation.detail
        : desktopMissing.length > 0
          ? missingMessage(desktopMissing)
          : probeFailure
            ? `${probeFailure}. Reinstall the desktop packages (scripts/install-desktop-deps.sh).`
            : last?.ok === false
              ? `The last desktop start failed: ${last.detail}`
              : missing.length > 0
                ? `Desktops can start; ${missing.map((m) => `${m.binary} (${m.package})`).join(", ")} missing for ${[...new Set(missing.map((m) => m.role))].join(", ")}.`
                : "Desktops can start.";
    const programs_run = this.probeState ? !probeFailure : null;
    return { ready, machines_ready, root, missing, last_desktop_start: last, programs_run, isolation, detail };
  }

  private lockFor(machineId: string): Mutex {
    let m = this.machineLocks.get(machineId);
    if (!m) {
      m = new Mutex();
      this.machineLocks.set(machineId, m);
    }
    return m;
  }

  private parseHandle(handle: MachineHandle): LocalDesktopHandle {
    const r = LocalDesktopHandle.safeParse(handle);
    if (!r.success || r.data.provider !== this.name) {
      throw new CoreError("INTERNAL_ERROR", "The machine handle does not belong to the local desktop provider.");
    }
    const h = r.data as LocalDesktopHandle;
    if (
      h.user !== this.userNameFor(h.machine_id) ||
      h.home_dir !== path.join(this.rootDir, h.user) ||
      h.runtime_dir !== path.join(this.runtimeRoot, h.user)
    ) {
      throw new CoreError("INTERNAL_ERROR", "The machine handle's paths do not match this provider's root directory.");
    }
    return h;
  }

  private runtime(handle: MachineHandle): Runtime {
    const h = this.parseHandle(handle);
    let rt = this.runtimes.get(h.machine_id);
    if (!rt) {
      const user: UserIdentity = { name: h.user, uid: h.uid, gid: h.gid, home: h.home_dir, jail: this.jailOf(h) };
      const created: Runtime = {
        handle: h,
        user,
        lifecycle: this.lockFor(h.machine_id),
        input: new Mutex(),
        terminals: new TerminalSessions(user, () => this.envFor(created)),
        xdo: new XdotoolSession(user, () => this.envFor(created)),
        browserStart: new Mutex(),
        browser: new ChromiumBrowser({
          devtoolsPort: () => {
            if (created.handle.devtools_port === null)
              throw new MachineOpError("BROWSER_UNAVAILABLE", "The machine has no desktop running.");
            return created.handle.devtools_port;
          },
          devtoolsHost: () => created.handle.net_address ?? "127.0.0.1",
          ensureRunning: () => created.browserStart.run(() => this.ensureChromium(created)),
          stopBrowser: () => this.stopChromium(created),
        }),
        fs: new LocalHomeFs(user),
      };
      rt = created;
      this.runtimes.set(h.machine_id, rt);
    } else if (Date.parse(h.updated_at) > Date.parse(rt.handle.updated_at)) {
      rt.handle = h;
    }
    return rt;
  }

  private running(handle: MachineHandle): Runtime {
    const rt = this.runtime(handle);
    assertStatus(rt.handle, ["running"]);
    return rt;
  }

  /** The jail of a handle that runs isolated (the namespaces' paths derive from its user name). */
  private jailOf(h: LocalDesktopHandle): UserIdentity["jail"] {
    return h.net_address ? this.isolation.jailOf(h.user, h.net_address) : null;
  }

  /** Once per provider (its first reconcile or start): namespaces, veths, slots of users that are gone. */
  private sweepIsolationOnce(): Promise<void> {
    this.swept ??= this.isolation
      .sweep()
      .then(() => {})
      .catch((e) => this.opts.onWarning(`machines: isolation sweep failed: ${e}`));
    return this.swept;
  }

  /** Builds (or re-adopts) the machine's namespaces before its first process starts; fails closed. */
  private async isolate(rt: Runtime): Promise<void> {
    await this.sweepIsolationOnce();
    const jail = await this.isolation.enter(rt.user, [rt.handle.home_dir, rt.handle.runtime_dir], this.rootDir);
    rt.user.jail = jail;
    this.touch(rt, { net_address: jail?.address ?? null });
  }

  /** Removes the machine's namespaces once its processes are gone. */
  private async unisolate(rt: Runtime): Promise<void> {
    rt.user.jail = null;
    this.touch(rt, { net_address: null });
    await this.isolation.leave(rt.user.name);
  }

  private envFor(rt: Runtime): Record<string, string> {
    const h = rt.handle;
    return userEnv(
      rt.user,
      h.display === null ? {} : { DISPLAY: `:${h.display}`, XAUTHORITY: path.join(h.runtime_dir, "Xauthority") },
    );
  }

  private touch(rt: Runtime, patch: Partial<LocalDesktopHandle>): LocalDesktopHandle {
    rt.handle = { ...rt.handle, ...patch, updated_at: nowIso() };
    return { ...rt.handle };
  }

  private async ensureRoot(): Promise<void> {
    for (const [dir, mode] of [
      [this.rootDir, 0o711],
      [this.runtimeRoot, 0o711],
      [this.snapshotDir, 0o700],
    ] as const) {
      await mkdir(dir, { recursive: true, mode });
      await chown(dir, 0, 0);
      await chmod(dir, mode);
    }
    // Xvfb creates /tmp/.X11-unix when missing, owned by whoever runs first: pre-create it as root.
    // Never "repair" an existing one: a machine user could have planted a symlink there.
    await mkdir("/tmp/.X11-unix", { mode: 0o1777 }).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EEXIST") throw e;
    });
    const st = await lstat("/tmp/.X11-unix");
    if (!st.isDirectory() || st.uid !== 0) {
      throw new CoreError("INTERNAL_ERROR", "/tmp/.X11-unix is not a root-owned directory; an operator must fix it.");
    }
    if ((st.mode & 0o7777) !== 0o1777) await chmod("/tmp/.X11-unix", 0o1777);
  }

  private async lookupUser(name: string): Promise<{ uid: number; gid: number; gecos: string; home: string } | null> {
    const passwd = await readFile("/etc/passwd", "utf8");
    for (const line of passwd.split("\n")) {
      const f = line.split(":");
      if (f[0] === name) return { uid: Number(f[2]), gid: Number(f[3]), gecos: f[4] ?? "", home: f[5] ?? "" };
    }
    return null;
  }

  /** useradd/userdel take /etc/passwd locks: serialise in-process and retry across processes */
  private async userAdminRun(cmd: string, args: string[]): Promise<void> {
    await this.userAdmin.run(async () => {
      for (let attempt = 0; ; attempt++) {
        const r = await run(cmd, args, { timeoutMs: 30_000 });
        if (r.code === 0) return;
        const busy = r.code === 10 || /lock|try again/i.test(r.stderr);
        if (!busy || attempt >= 40) throw new Error(`${cmd} failed (exit ${r.code}): ${r.stderr.trim()}`);
        await delay(100 + Math.random() * 150);
      }
    });
  }

  // -------------------------------------------------------------------------------------------
  // lifecycle

  async provision(input: ProvisionInput): Promise<MachineHandle> {
    const p = ProvisionInput.parse(input);
    const name = this.userNameFor(p.machineId);
    return this.lockFor(p.machineId).run(async () => {
      this.preflight(p.desktopEnabled);
      await this.ensureRoot();
      const home = path.join(this.rootDir, name);
      const runtimeDir = path.join(this.runtimeRoot, name);
      const gecos = this.gecosFor(p.machineId);
      let u = await this.lookupUser(name);
      if (u && (u.gecos !== gecos || u.home !== home)) {
        throw new CoreError("INTERNAL_ERROR", `The system user ${name} exists and does not belong to this machine.`);
      }
      if (!u) {
        await this.userAdminRun("useradd", [
          "--no-create-home",
          "--home-dir",
          home,
          "--shell",
          "/bin/bash",
          "--user-group",
          "--comment",
          gecos,
          name,
        ]);
        u = await this.lookupUser(name);
        if (!u) throw new CoreError("INTERNAL_ERROR", `useradd did not create ${name}.`);
      }
      const user: UserIdentity = { name, uid: u.uid, gid: u.gid, home };
      try {
        // home and runtime/tmp belong to the user; the runtime directory itself is root's (0711), so the
        // user cannot swap the files root writes there (X cookie, VNC password, openbox config, logs)
        // for symlinks
        for (const [dir, mode, owner] of [
          [home, 0o700, user],
          [runtimeDir, 0o711, null],
          [path.join(runtimeDir, "tmp"), 0o700, user],
        ] as const) {
          await mkdir(dir, { recursive: true, mode });
          await chown(dir, owner?.uid ?? 0, owner?.gid ?? 0);
          await chmod(dir, mode);
        }
        // the rest is created by the user itself
        await runChecked(
          "/bin/sh",
          ["-c", 'mkdir -p -- "$1/Desktop" "$1/Documents" "$1/Downloads" "$1/.tmp" "$1/.config"', "sh", home],
          { user, timeoutMs: 10_000 },
        );
        const vncPass = path.join(runtimeDir, "vnc.pass");
        if (!existsSync(vncPass)) {
          const pw = randomBytes(12)
            .toString("base64")
            .replace(/[^A-Za-z0-9]/g, "")
            .slice(0, 8)
            .padEnd(8, "x");
          await writeRootFile(vncPass, `${pw}\n`, 0o600, user);
        }
        const now = nowIso();
        const handle: LocalDesktopHandle = {
          provider: this.name,
          machine_id: p.machineId,
          display_name: p.displayName,
          status: "stopped",
          screen: p.screen,
          desktop_enabled: p.desktopEnabled,
          created_at: now,
          updated_at: now,
          user: name,
          uid: user.uid,
          gid: user.gid,
          home_dir: home,
          runtime_dir: runtimeDir,
          display: null,
          devtools_port: null,
          vnc_port: null,
          websocket_port: null,
          processes: [],
        };
        const existing = this.runtimes.get(p.machineId);
        if (existing && existing.handle.status === "running") return { ...existing.handle };
        this.runtimes.delete(p.machineId);
        const rt = this.runtime(handle);
        return await this.startInner(rt);
      } catch (e) {
        await this.terminateInner(p.machineId, name, home, runtimeDir, null).catch(() => {});
        throw e;
      }
    });
  }

  async start(handle: MachineHandle): Promise<MachineHandle> {
    const rt = this.runtime(handle);
    return rt.lifecycle.run(async () => {
      assertStatus(rt.handle, ["stopped"]);
      this.preflight(rt.handle.desktop_enabled);
      await this.ensureRoot();
      return this.startInner(rt);
    });
  }

  async stop(handle: MachineHandle): Promise<MachineHandle> {
    const rt = this.runtime(handle);
    return rt.lifecycle.run(async () => {
      assertStatus(rt.handle, ["running"]);
      return this.stopInner(rt);
    });
  }

  async restart(handle: MachineHandle): Promise<MachineHandle> {
    const rt = this.runtime(handle);
    return rt.lifecycle.run(async () => {
      assertStatus(rt.handle, ["running"]);
      await this.stopInner(rt);
      return this.startInner(rt);
    });
  }

  async terminate(handle: MachineHandle): Promise<TerminateResult> {
    const h = this.parseHandle(handle);
    return this.lockFor(h.machine_id).run(async () => {
      const rt = this.runtimes.get(h.machine_id);
      const leftover = await this.terminateInner(
        h.machine_id,
        h.user,
        h.home_dir,
        h.runtime_dir,
        rt?.handle.display ?? h.display,
        rt,
      );
      return { machine_id: h.machine_id, terminated: true, leftover_processes: leftover };
    });
  }

  /** Terminate for a machine id without a handle (a provision cut short): its user, home and processes. */
  async forget(machineId: string): Promise<TerminateResult> {
    const name = this.userNameFor(machineId);
    return this.lockFor(machineId).run(async () => {
      const u = await this.lookupUser(name);
      if (u && u.gecos !== this.gecosFor(machineId)) {
        throw new CoreError("INTERNAL_ERROR", `The system user ${name} exists and does not belong to this machine.`);
      }
      const rt = this.runtimes.get(machineId);
      const leftover = await this.terminateInner(
        machineId,
        name,
        path.join(this.rootDir, name),
        path.join(this.runtimeRoot, name),
        rt?.handle.display ?? null,
        rt,
      );
      return { machine_id: machineId, terminated: true, leftover_processes: leftover };
    });
  }

  /** Machine ids whose users this provider created (home under rootDir), from /etc/passwd. */
  async listMachineIds(): Promise<string[]> {
    const passwd = await readFile("/etc/passwd", "utf8");
    const ids: string[] = [];
    for (const line of passwd.split("\n")) {
      const f = line.split(":");
      const [name, , , , gecos, home] = f;
      if (!name?.startsWith(`${this.opts.userPrefix}-`) || home !== path.join(this.rootDir, name)) continue;
      const m = /^cua machine ([A-Za-z0-9_-]+)$/.exec(gecos ?? "");
      if (m && this.userNameFor(m[1]!) === name) ids.push(m[1]!);
    }
    return ids;
  }

  private gecosFor(machineId: string): string {
    return `cua machine ${machineId.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  }

  private async terminateInner(
    machineId: string,
    name: string,
    home: string,
    runtimeDir: string,
    display: number | null,
    rt?: Runtime,
  ): Promise<number> {
    rt?.terminals.closeAll();
    rt?.xdo.kill();
    await rt?.browser.dispose();
    this.runtimes.delete(machineId);
    let leftover = 0;
    const u = await this.lookupUser(name);
    if (u && u.uid !== 0) {
      leftover = await reapUid(u.uid, 2000);
      // orphaned children (Chromium's renderers, crashpad) linger as zombies until init reaps them
      await waitFor(async () => (await processesOfUid(u.uid, true)).length === 0, 5000, 50);
      await this.isolation.leave(name);
      await this.userAdminRun("userdel", [name]).catch(async (e) => {
        // a process that appeared between the reap and userdel: reap once more and retry
        await reapUid(u.uid, 500);
        await this.userAdminRun("userdel", [name]).catch(() => {
          throw e;
        });
      });
    }
    for (const [dir, parent] of [
      [home, this.rootDir],
      [runtimeDir, this.runtimeRoot],
    ] as const) {
      if (path.dirname(dir) === parent && path.basename(dir) === name) await rm(dir, { recursive: true, force: true });
    }
    if (display !== null) await this.cleanStaleX(display);
    if (u) leftover = (await processesOfUid(u.uid)).length;
    return leftover;
  }

  private async cleanStaleX(display: number): Promise<void> {
    const lock = `/tmp/.X${display}-lock`;
    try {
      const pid = Number((await readFile(lock, "utf8")).trim());
      if (pid > 0 && (await isAlive(pid))) return;
      await unlink(lock).catch(() => {});
    } catch {}
    await unlink(`/tmp/.X11-unix/X${display}`).catch(() => {});
    this.claimedDisplays.delete(display);
  }

  private async pickDisplay(): Promise<number> {
    const [lo, hi] = this.opts.displayRange;
    // isolated machines' X sockets and lock files are in their own /tmp: their X servers are found by process
    const running = await xServerDisplays();
    for (let n = lo; n <= hi; n++) {
      if (this.claimedDisplays.has(n) || running.has(n)) continue;
      if (existsSync(`/tmp/.X${n}-lock`) || existsSync(`/tmp/.X11-unix/X${n}`)) continue;
      const ports = [this.opts.devtoolsPortBase + n, this.opts.vncPortBase + n, this.opts.websocketPortBase + n];
      const free = await Promise.all(ports.map((p) => portFree(p)));
      if (free.every(Boolean)) {
        this.claimedDisplays.add(n);
        return n;
      }
    }
    throw new CoreError("UPSTREAM_UNAVAILABLE", "No free X display or ports for another desktop on this host.");
  }

  private async startInner(rt: Runtime): Promise<LocalDesktopHandle> {
    const h = rt.handle;
    // a stopped machine has no processes; leftovers (a provision interrupted by a crash) would
    // otherwise run a second desktop for the same user
    if ((await processesOfUid(rt.user.uid)).length > 0) await reapUid(rt.user.uid, 2000);
    await this.isolate(rt);
    if (!h.desktop_enabled) return this.touch(rt, { status: "running", processes: [] });
    let display: number | null = null;
    const xvfbLogFrom = await this.logSize(path.join(h.runtime_dir, "xvfb.log"));
    try {
      let xvfb: { pid: number } | null = null;
      for (let attempt = 0; attempt < 20 && !xvfb; attempt++) {
        display = await this.pickDisplay();
        xvfb = await this.startXvfb(rt, display);
        if (!xvfb) {
          // another process took the display between the check and Xvfb's lock: try the next one
          display = null;
        }
      }
      if (!xvfb || display === null)
        throw new CoreError(
          "UPSTREAM_UNAVAILABLE",
          `Xvfb (${this.bin("Xvfb")}, Debian package xvfb) did not start${await this.logTail(path.join(h.runtime_dir, "xvfb.log"), xvfbLogFrom)}. Check that program, or reinstall the desktop packages (scripts/install-desktop-deps.sh).`,
        );
      this.touch(rt, {
        display,
        devtools_port: this.opts.devtoolsPortBase + display,
        vnc_port: this.opts.vncPortBase + display,
        websocket_port: this.opts.websocketPortBase + display,
      });
      await this.startOpenbox(rt);
      await rt.browserStart.run(() => this.ensureChromium(rt));
      const processes = await this.recordProcesses(rt);
      this.lastDesktopStart = { ok: true, at: nowIso(), detail: "started" };
      return this.touch(rt, { status: "running", processes });
    } catch (e) {
      await this.stopProcesses(rt);
      await this.unisolate(rt).catch(() => {});
      if (display !== null) {
        await this.cleanStaleX(display);
        this.claimedDisplays.delete(display);
      }
      this.touch(rt, {
        status: "stopped",
        display: null,
        devtools_port: null,
        vnc_port: null,
        websocket_port: null,
        processes: [],
      });
      const err =
        e instanceof CoreError
          ? e
          : new CoreError(
              "UPSTREAM_UNAVAILABLE",
              e instanceof SpawnError
                ? this.spawnFailureMessage(e)
                : `The desktop did not start: ${e instanceof Error ? e.message : String(e)}`,
            );
      this.lastDesktopStart = { ok: false, at: nowIso(), detail: err.message };
      throw err;
    }
  }

  private spawnFailureMessage(e: SpawnError): string {
    this.requirementsCache = null;
    const name = path.posix.basename(e.command);
    const req = REQUIREMENTS.find((r) => r.binary === name || (r.binary === "chromium" && name.startsWith("chromium")));
    const pkg = req?.package ?? name;
    return `The desktop cannot start on this host: ${name} (Debian package ${pkg}) at ${e.command} could not be started (not found, or not executable by the machine's user). Install the desktop packages (scripts/install-desktop-deps.sh, or apt-get install ${pkg}) and try again.`;
  }

  private async logSize(file: string): Promise<number> {
    return stat(file).then(
      (st) => st.size,
      () => 0,
    );
  }

  /** ": <last lines the program wrote since offset>" for error messages, or "" when it wrote nothing. */
  private async logTail(file: string, from: number): Promise<string> {
    try {
      const fh = await open(file, fsc.O_RDONLY | fsc.O_NOFOLLOW);
      try {
        const size = (await fh.stat()).size;
        const start = Math.max(from, size - 16_384);
        const buf = Buffer.alloc(Math.max(0, size - start));
        await fh.read(buf, 0, buf.length, start);
        const lines = buf
          .toString("utf8")
          .split("\n")
          .map((l) => l.trim())
          .filter((l, i, all) => l && l !== all[i - 1]) // a program retried prints the same line each time
          .slice(-6);
        const text = lines.join(" | ").slice(-900);
        return text ? `; its last output: ${text}` : "";
      } finally {
        await fh.close();
      }
    } catch {
      return "";
    }
  }

  private async startXvfb(rt: Runtime, display: number): Promise<{ pid: number } | null> {
    const h = rt.handle;
    const authFile = path.join(h.runtime_dir, "Xauthority");
    await writeRootFile(authFile, xauthEntry(display, randomBytes(16)), 0o600, rt.user);
    // the framebuffer file (framebuffer.ts): created afresh by root in the root-owned runtime directory and
    // given to the user, so Xvfb (as the user) can map it but the user cannot swap it for a link
    await writeRootFile(path.join(h.runtime_dir, FRAMEBUFFER_FILE), "", 0o600, rt.user);
    const { child, pid } = spawnDaemon(
      rt.user,
      this.bin("Xvfb"),
      [
        `:${display}`,
        "-screen",
        "0",
        `${h.screen.width}x${h.screen.height}x24`,
        "-auth",
        authFile,
        "-nolisten",
        "tcp",
        "-noreset",
        "-dpi",
        "96",
        // screenshots read the screen from this file (framebuffer.ts); no pointer is drawn into it, as an
        // X GetImage (scrot) never showed it either
        "-fbdir",
        h.runtime_dir,
        "-nocursor",
      ],
      { env: userEnv(rt.user), logFile: path.join(h.runtime_dir, "xvfb.log") },
    );
    let exited = false;
    child.once("exit", () => {
      exited = true;
    });
    const ready = await waitFor(
      async () => {
        if (exited) return true;
        try {
          const lockPid = Number((await readFile(`/proc/${pid}/root/tmp/.X${display}-lock`, "utf8")).trim());
          return lockPid === pid && (await canConnectUnix(x11SocketOf(pid, display)));
        } catch {
          return false;
        }
      },
      Math.min(this.opts.startTimeoutMs, 10_000),
    );
    if (ready && !exited) return { pid };
    signalGroup(pid, "SIGKILL");
    this.claimedDisplays.delete(display);
    return null;
  }

  private async startOpenbox(rt: Runtime): Promise<void> {
    const h = rt.handle;
    const rc = path.join(h.runtime_dir, "openbox-rc.xml");
    const stock = await readFile(OPENBOX_SYSTEM_RC, "utf8").catch(() => null);
    const menu = path.join(h.runtime_dir, "openbox-menu.xml");
    await writeRootFile(menu, desktopMenuXml([this.bin("chromium"), ...this.chromiumArgs(rt)]), 0o644, null);
    await writeRootFile(rc, openboxConfig(stock, menu), 0o644, null);
    spawnDaemon(rt.user, this.bin("openbox"), ["--sm-disable", "--config-file", rc], {
      env: this.envFor(rt),
      logFile: path.join(h.runtime_dir, "openbox.log"),
    });
  }

  private chromiumArgs(rt: Runtime): string[] {
    const h = rt.handle;
    const args = [
      `--user-data-dir=${path.join(h.home_dir, CHROMIUM_PROFILE)}`,
      `--remote-debugging-port=${h.devtools_port}`,
      "--remote-debugging-address=127.0.0.1",
      "--test-type",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-breakpad",
      "--disable-crash-reporter",
      "--password-store=basic",
      "--hide-crash-restore-bubble",
      // a scroll lands at once: a screenshot right after it shows where the page stopped, not a frame of
      // an animation (an agent clicked where a button had been a moment before)
      "--disable-smooth-scrolling",
      "--noerrdialogs",
      "--disable-features=Translate,MediaRouter,DialMediaRouteProvider",
      "--window-position=0,0",
      `--window-size=${h.screen.width},${h.screen.height}`,
      "--start-maximized",
    ];
    if (!this.opts.chromiumSandbox) args.push("--no-sandbox");
    args.push("about:blank");
    return args;
  }

  private isChromiumMain(p: ProcInfo, rt: Runtime): boolean {
    const profile = `--user-data-dir=${path.join(rt.handle.home_dir, CHROMIUM_PROFILE)}`;
    return (
      basename(p.cmdline[0]) === basename(this.opts.chromiumPath) &&
      p.cmdline.includes(profile) &&
      !p.cmdline.some((a) => a.startsWith("--type="))
    );
  }

  private async devtoolsReady(port: number, host = "127.0.0.1"): Promise<boolean> {
    try {
      const r = await fetch(`http://${host}:${port}/json/version`, { signal: AbortSignal.timeout(1000) });
      return r.ok;
    } catch {
      return false;
    }
  }

  /**
   * Whether other local users are kept off the desktops' DevTools ports (installed once per provider,
   * before the first Chromium starts).
   */
  devtoolsIsolation(): Promise<DevtoolsGuardState> {
    if (!this.devtoolsGuardState) {
      const [lo, hi] = this.opts.displayRange;
      const range: [number, number] = [this.opts.devtoolsPortBase + lo, this.opts.devtoolsPortBase + hi];
      const uid = process.getuid?.() ?? 0;
      this.devtoolsGuardState = (
        this.opts.devtoolsGuard
          ? guardDevtoolsPorts(range, uid)
          : Promise.resolve<DevtoolsGuardState>({ enforced: false, reason: "disabled by configuration" })
      ).then((st) => {
        if (!st.enforced)
          this.opts.onWarning(
            `machines: DevTools ports ${range[0]}-${range[1]} are not guarded (${st.reason}); any local user can drive the desktops' browsers`,
          );
        return st;
      });
    }
    return this.devtoolsGuardState;
  }

  /** Starts Chromium when its DevTools endpoint does not answer; true when it started it. */
  private async ensureChromium(rt: Runtime): Promise<boolean> {
    const h = rt.handle;
    if (h.display === null || h.devtools_port === null)
      throw new MachineOpError("BROWSER_UNAVAILABLE", "The machine has no desktop running.");
    const port = h.devtools_port;
    await this.devtoolsIsolation();
    const host = h.net_address ?? "127.0.0.1";
    if (await this.devtoolsReady(port, host)) return false;
    await this.chromiumPolicies();
    // a stale profile lock (after a kill or a snapshot restore) would make Chromium hand off and exit
    await run("/bin/sh", ["-c", 'rm -f -- "$1"/Singleton*', "sh", path.join(h.home_dir, CHROMIUM_PROFILE)], {
      user: rt.user,
      timeoutMs: 5000,
    });
    const chromiumLog = path.join(h.runtime_dir, "chromium.log");
    const chromiumLogFrom = await this.logSize(chromiumLog);
    const { child, pid } = spawnDaemon(rt.user, this.bin("chromium"), this.chromiumArgs(rt), {
      env: {
        ...this.envFor(rt),
        XDG_CONFIG_HOME: path.join(h.home_dir, ".config"),
        XDG_CACHE_HOME: path.join(h.home_dir, ".cache"),
      },
      logFile: chromiumLog,
    });
    let exited = false;
    child.once("exit", () => {
      exited = true;
    });
    const ok = await waitFor(
      async () => exited || (await this.devtoolsReady(port, host)),
      this.opts.startTimeoutMs,
      50,
    );
    if (!ok || exited) {
      signalGroup(pid, "SIGKILL");
      const tail = await this.logTail(chromiumLog, chromiumLogFrom);
      // the usual cause on containers and hardened hosts: no unprivileged user namespaces for its sandbox
      const hint = /no usable sandbox/i.test(tail)
        ? " Chromium's sandbox needs unprivileged user namespaces on this host (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1, or an AppArmor profile that allows them); or run the desktops' browsers without it: MACHINE_CHROMIUM_SANDBOX=0."
        : "";
      throw new MachineOpError(
        "BROWSER_UNAVAILABLE",
        `Chromium did not open its DevTools endpoint ${exited ? "(it exited)" : `within ${this.opts.startTimeoutMs} ms`}${tail}${hint}`,
      );
    }
    // DevTools answers before the window is on screen: wait (bounded) until it is mapped, then focus it
    // (otherwise focus arrives with the first click, racing it)
    await run("xdotool", ["search", "--sync", "--onlyvisible", "--class", "chromium", "windowactivate", "--sync"], {
      user: rt.user,
      env: this.envFor(rt),
      timeoutMs: 10_000,
    });
    return true;
  }

  private policyWrite: Promise<void> | null = null;

  /** The Chromium policies, written once per provider (a failure is a warning: the browser still starts). */
  private chromiumPolicies(): Promise<void> {
    const file = this.opts.chromiumPolicyFile;
    if (!file) return Promise.resolve();
    this.policyWrite ??= writeChromiumPolicies(file).then(
      () => {},
      (e: unknown) =>
        this.opts.onWarning(
          `machines: could not write the browsers' policies to ${file} (${e instanceof Error ? e.message : String(e)}); Chromium's save-password and other prompts may cover pages`,
        ),
    );
    return this.policyWrite;
  }

  private async stopChromium(rt: Runtime): Promise<void> {
    const mains = (await processesOfUid(rt.user.uid)).filter((p) => this.isChromiumMain(p, rt));
    for (const p of mains) signalGroup(p.pgid, "SIGTERM");
    const gone = await waitFor(
      async () => !(await processesOfUid(rt.user.uid)).some((p) => this.isChromiumMain(p, rt)),
      5000,
      50,
    );
    if (!gone) for (const p of mains) signalGroup(p.pgid, "SIGKILL");
    // its renderers share the main process's group
    for (const p of mains) signalGroup(p.pgid, "SIGKILL");
  }

  private roleOf(p: ProcInfo, rt: Runtime): string | null {
    const exe = basename(p.cmdline[0]);
    if (exe === "Xvfb" && p.cmdline[1] === `:${rt.handle.display}`) return "xvfb";
    if (exe === "openbox") return "openbox";
    if (this.isChromiumMain(p, rt)) return "chromium";
    if (exe === "x11vnc") return "x11vnc";
    if (p.cmdline.some((a) => basename(a) === "websockify")) return "websockify";
    return null;
  }

  private async recordProcesses(rt: Runtime): Promise<{ role: string; pid: number; start_time: number }[]> {
    const out: { role: string; pid: number; start_time: number }[] = [];
    for (const p of await processesOfUid(rt.user.uid)) {
      const role = this.roleOf(p, rt);
      if (role) out.push({ role, pid: p.pid, start_time: p.start_time });
    }
    return out.sort((a, b) => a.pid - b.pid);
  }

  /** Ends every process of the machine: Chromium first (so it saves its profile), then everything else. */
  private async stopProcesses(rt: Runtime): Promise<void> {
    rt.terminals.closeAll();
    rt.xdo.kill();
    await rt.browser.dispose();
    await this.stopChromium(rt);
    await reapUid(rt.user.uid, 3000);
  }

  private async stopInner(rt: Runtime): Promise<LocalDesktopHandle> {
    const display = rt.handle.display;
    rt.lastFrame?.clear();
    await this.stopProcesses(rt);
    await this.unisolate(rt);
    if (display !== null) {
      await this.cleanStaleX(display);
      this.claimedDisplays.delete(display);
    }
    return this.touch(rt, {
      status: "stopped",
      display: null,
      devtools_port: null,
      vnc_port: null,
      websocket_port: null,
      processes: [],
    });
  }

  async reconcile(handles: MachineHandle[]): Promise<ReconcileResult[]> {
    await this.sweepIsolationOnce();
    const out: ReconcileResult[] = [];
    for (const raw of handles) {
      const h = this.parseHandle(raw);
      const r = await this.lockFor(h.machine_id).run(() => this.reconcileOne(h));
      out.push(r);
    }
    return out;
  }

  private async reconcileOne(h: LocalDesktopHandle): Promise<ReconcileResult> {
    const u = await this.lookupUser(h.user);
    const homeOk = existsSync(h.home_dir);
    if (!u || u.uid !== h.uid || !homeOk) {
      this.runtimes.delete(h.machine_id);
      return {
        machine_id: h.machine_id,
        status: "lost",
        handle: { ...h },
        changed: true,
        detail: !u ? "the machine's user is gone" : "the machine's home directory is gone",
      };
    }
    const rt = this.runtime(h);
    rt.handle = h;
    rt.user.jail = this.jailOf(h);
    if (h.status === "stopped") {
      const leftovers = await processesOfUid(h.uid);
      if (leftovers.length > 0) await reapUid(h.uid, 2000);
      await this.isolation.leave(h.user);
      return {
        machine_id: h.machine_id,
        status: "stopped",
        handle: { ...rt.handle },
        changed: false,
        detail: leftovers.length > 0 ? `reaped ${leftovers.length} stray processes` : "stopped",
      };
    }
    if (this.isolation.mode === "namespaces" && !(h.net_address && (await this.isolation.exists(h.user)))) {
      const stopped = await this.stopInner(rt);
      return {
        machine_id: h.machine_id,
        status: "stopped",
        handle: stopped,
        changed: true,
        detail: "it was running without its namespaces (gone, or started before isolation); stopped",
      };
    }
    if (!h.desktop_enabled) {
      return {
        machine_id: h.machine_id,
        status: "running",
        handle: { ...rt.handle },
        changed: false,
        detail: "re-adopted (no desktop)",
      };
    }
    const procs = await processesOfUid(h.uid);
    const xvfb = procs.find((p) => this.roleOf(p, rt) === "xvfb");
    const xAlive = h.display !== null && !!xvfb && (await canConnectUnix(x11SocketOf(xvfb.pid, h.display)));
    if (!xAlive) {
      const stopped = await this.stopInner(rt);
      return {
        machine_id: h.machine_id,
        status: "stopped",
        handle: stopped,
        changed: true,
        detail: "the desktop's X server had exited; remaining processes reaped",
      };
    }
    this.claimedDisplays.add(h.display!);
    const repaired: string[] = [];
    if (!procs.some((p) => this.roleOf(p, rt) === "openbox")) {
      await this.startOpenbox(rt);
      repaired.push("openbox");
    }
    try {
      if (await rt.browserStart.run(() => this.ensureChromium(rt))) repaired.push("chromium");
    } catch {
      repaired.push("chromium (failed)");
    }
    const handle = this.touch(rt, { processes: await this.recordProcesses(rt) });
    return {
      machine_id: h.machine_id,
      status: "running",
      handle,
      changed: false,
      detail: repaired.length > 0 ? `re-adopted; restarted ${repaired.join(", ")}` : "re-adopted",
    };
  }

  // -------------------------------------------------------------------------------------------
  // screen and input

  async screenshot(handle: MachineHandle): Promise<Screenshot> {
    const rt = this.running(handle);
    assertDesktop(rt.handle);
    return this.capture(rt);
  }

  /**
   * The screen, from Xvfb's framebuffer file when this desktop's Xvfb keeps one (framebuffer.ts), else
   * (a desktop started by an older version, a layout the reader does not know) through scrot.
   * `source` forces one way (benchmarks compare them in one run).
   */
  async screenshotVia(handle: MachineHandle, source: "framebuffer" | "scrot"): Promise<Screenshot> {
    const rt = this.running(handle);
    assertDesktop(rt.handle);
    if (source === "scrot") return this.captureWithPrograms(rt);
    const shot = await this.captureFramebuffer(rt);
    if (!shot) throw new CoreError("SCREENSHOT_FAILED", "This desktop's X server keeps no framebuffer file.");
    return shot;
  }

  private async capture(rt: Runtime): Promise<Screenshot> {
    const shot = await this.captureFramebuffer(rt).catch((e: unknown) => {
      if (!this.framebufferWarned) {
        this.framebufferWarned = true;
        this.opts.onWarning(
          `machines: a screenshot could not be read from Xvfb's framebuffer (${e instanceof Error ? e.message : String(e)}); capturing through scrot instead (slower)`,
        );
      }
      return null;
    });
    return shot ?? this.captureWithPrograms(rt);
  }
  private framebufferWarned = false;

  /**
   * Reads and encodes the framebuffer file of the desktop's live Xvfb; null when there is none to read (no
   * Xvfb running with -fbdir: a dead X server must fail through the programs' path, never show its last frame).
   */
  private async captureFramebuffer(rt: Runtime): Promise<Screenshot | null> {
    const h = rt.handle;
    const rec = h.processes.find((p) => p.role === "xvfb");
    if (!rec || h.display === null) return null;
    // alive and still the same process: one small synchronous read of /proc per shot (three async reads
    // through procInfo cost more than the read of the frame under load); its command line once per process
    const live = xvfbLiveness(rec.pid);
    if (!live || live.start_time !== rec.start_time || live.uid !== rt.user.uid) return null;
    const key = `${rec.pid}:${rec.start_time}:${h.display}`;
    if (rt.framebufferXvfb !== key) {
      const info = await procInfo(rec.pid);
      if (!info || info.cmdline[1] !== `:${h.display}` || !info.cmdline.includes("-fbdir")) return null;
      rt.framebufferXvfb = key;
    }
    const captured_at = nowIso();
    const frame = await readFramebuffer(path.join(h.runtime_dir, FRAMEBUFFER_FILE), rt.user.uid, h.screen);
    const { width, height } = frame.layout;
    rt.lastFrame ??= new LastFrame();
    const png = await rt.lastFrame.encode(frame, { level: this.opts.screenshotLevel });
    return { png, mime_type: "image/png", width, height, captured_at };
  }

  private async captureWithPrograms(rt: Runtime): Promise<Screenshot> {
    const env = this.envFor(rt);
    // scrot cannot write to "-" when stdout is a socket (how Node wires child stdio): it writes a file
    // in the machine's runtime/tmp (the user's) and the service reads it back without following links
    const file = path.join(rt.handle.runtime_dir, "tmp", `shot-${randomBytes(6).toString("hex")}.png`);
    const attempts: [string, string[], "file" | "stdout"][] = [
      [this.bin("scrot"), ["-z", "-o", "-q", String(this.opts.screenshotQuality), file], "file"],
      [this.bin("import"), ["-window", "root", "png:-"], "stdout"],
    ];
    let last = "";
    try {
      for (const [cmd, args, via] of attempts) {
        try {
          const r = await run(cmd, args, { user: rt.user, env, timeoutMs: 10_000 });
          const png = via === "file" && r.code === 0 ? await readUserFile(file, rt.user.uid) : r.stdout;
          if (r.code === 0 && png.length > 0) {
            const { width, height } = pngSize(png);
            return { png, mime_type: "image/png", width, height, captured_at: nowIso() };
          }
          last = `${cmd}: ${r.timedOut ? "timed out" : r.stderr.trim() || `exit ${r.code}`}`;
        } catch (e) {
          last = `${cmd}: ${e instanceof Error ? e.message : String(e)}`;
        }
      }
    } finally {
      await unlink(file).catch(() => {});
    }
    throw new CoreError("SCREENSHOT_FAILED", `The capture failed: ${last}`);
  }

  private async input(rt: Runtime, a: InputAction, signal: AbortSignal): Promise<void> {
    const { args, input } = xdotoolArgs(a);
    await rt.input.run(async () => {
      if (input === undefined && XdotoolSession.canScript(args)) {
        try {
          await rt.xdo.run(args, signal);
          return;
        } catch (e) {
          if (signal.aborted) throw new MachineOpError("TIMEOUT", "The input action was stopped at the deadline.");
          throw new MachineOpError("INPUT_FAILED", `xdotool: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      const r = await run("xdotool", args, {
        user: rt.user,
        env: this.envFor(rt),
        ...(input !== undefined ? { input } : {}),
        signal,
        timeoutMs: 120_000,
      });
      if (r.code !== 0)
        throw new MachineOpError(
          "INPUT_FAILED",
          `xdotool: ${r.timedOut ? "stopped at the deadline" : r.stderr.trim() || `exit ${r.code}`}`,
        );
    });
  }

  private backend(rt: Runtime): CommandBackend {
    return {
      input: (a, signal) => this.input(rt, a, signal),
      screenshot: () => this.capture(rt),
      browser: (op, timeoutMs) => rt.browser.run(op, timeoutMs),
      browserExecute: (script, timeoutMs) => rt.browser.execute(script, timeoutMs),
      terminal: (t) => rt.terminals.run(t),
      file: (op) => runFileOp(rt.fs, op),
    };
  }

  private needsDesktop(parsed: ParsedCommand): boolean {
    return !["wait", "terminal_execute", "file_read", "file_write"].includes(parsed.command);
  }

  async execute(
    handle: MachineHandle,
    command: string,
    parameters: unknown,
    options: ExecuteOptions = {},
  ): Promise<CommandResult> {
    const parsed = parseCommand(command, parameters);
    const timeoutMs = parseTimeout(options.timeoutMs);
    const rt = this.running(handle);
    if (this.needsDesktop(parsed)) assertDesktop(rt.handle);
    checkOnScreen(parsed, rt.handle.screen);
    return runCommand(this.backend(rt), parsed, timeoutMs);
  }

  async executeBatch(handle: MachineHandle, body: unknown): Promise<BatchResult> {
    const batch = parseBatch(body);
    const rt = this.running(handle);
    batch.steps.forEach((s, i) => {
      if (this.needsDesktop(s.parsed)) assertDesktop(rt.handle);
      checkOnScreen(s.parsed, rt.handle.screen, `body.steps.${i}.parameters`);
    });
    const backend = this.backend(rt);
    return runBatch(batch, (parsed, timeoutMs) => {
      assertStatus(rt.handle, ["running"]);
      return runCommand(backend, parsed, timeoutMs);
    });
  }

  async browser(
    handle: MachineHandle,
    op: string,
    parameters: unknown,
    options: ExecuteOptions = {},
  ): Promise<OpResult> {
    const parsed = parseBrowserOp(op, parameters);
    const timeoutMs = parseTimeout(options.timeoutMs);
    const rt = this.running(handle);
    assertDesktop(rt.handle);
    return rt.browser.run(parsed, timeoutMs);
  }

  async terminal(handle: MachineHandle, input: unknown): Promise<OpResult> {
    const t = parseTerminal(input);
    const rt = this.running(handle);
    return rt.terminals.run(t);
  }

  async files(handle: MachineHandle, op: string, parameters: unknown): Promise<OpResult> {
    const parsed = parseFileOp(op, parameters);
    const rt = this.running(handle);
    return runFileOp(rt.fs, parsed);
  }

  // -------------------------------------------------------------------------------------------
  // snapshots

  private snapshotPaths(id: string): { archive: string; meta: string } {
    if (!SNAPSHOT_ID.test(id)) throw new CoreError("NOT_FOUND", `Snapshot ${id} does not exist.`);
    return { archive: path.join(this.snapshotDir, `${id}.tar.gz`), meta: path.join(this.snapshotDir, `${id}.json`) };
  }

  /** Runs tar as the machine's user, streaming the archive to/from a file only the service can read. */
  private tarAs(rt: Runtime, args: string[], io: { out?: string; in?: string }): Promise<void> {
    return new Promise((resolve, reject) => {
      const how = userSpawn(rt.user, "tar", args, rt.user.home);
      const child = spawn(how.command, how.args, {
        ...how.ids,
        cwd: rt.user.home,
        env: userEnv(rt.user, { LC_ALL: "C" }) as NodeJS.ProcessEnv,
        detached: true,
        stdio: [io.in ? "pipe" : "ignore", io.out ? "pipe" : "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr!.on("data", (d: Buffer) => {
        if (stderr.length < 8000) stderr += d.toString();
      });
      const streams: Promise<void>[] = [];
      if (io.out) streams.push(pipeline(child.stdout!, createWriteStream(io.out, { mode: 0o600 })));
      if (io.in) streams.push(pipeline(createReadStream(io.in), child.stdin!));
      child.on("error", reject);
      child.on("close", async (code) => {
        try {
          await Promise.all(streams);
        } catch (e) {
          return reject(e);
        }
        // GNU tar: 1 = some files changed while being read (a live machine); 2 = fatal
        if (code === 0 || code === 1) resolve();
        else reject(new Error(`tar exit ${code}: ${stderr.trim()}`));
      });
    });
  }

  async snapshot(handle: MachineHandle, name: string): Promise<SnapshotInfo> {
    const rt = this.runtime(handle);
    if (typeof name !== "string" || name.length === 0 || name.length > 200) {
      throw new CoreError("VALIDATION_ERROR", "body.name: 1 to 200 characters", {
        details: [{ path: "body.name", message: "1 to 200 characters" }],
      });
    }
    return rt.lifecycle.run(async () => {
      await this.ensureRoot();
      const snapshot_id = `snap_${randomBytes(12).toString("hex")}`;
      const { archive, meta } = this.snapshotPaths(snapshot_id);
      try {
        await this.tarAs(
          rt,
          ["-C", rt.user.home, "--exclude=./.cache", `--exclude=./${CHROMIUM_PROFILE}/Singleton*`, "-czf", "-", "."],
          { out: archive },
        );
      } catch (e) {
        await rm(archive, { force: true });
        throw new CoreError("INTERNAL_ERROR", `The snapshot failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      const info: SnapshotInfo = {
        snapshot_id,
        machine_id: rt.handle.machine_id,
        name,
        size_bytes: (await stat(archive)).size,
        created_at: nowIso(),
      };
      await writeFile(meta, JSON.stringify(info), { mode: 0o600 });
      return info;
    });
  }

  async restoreFromSnapshot(handle: MachineHandle, snapshotId: string): Promise<MachineHandle> {
    const rt = this.runtime(handle);
    const { archive } = this.snapshotPaths(snapshotId);
    if (!existsSync(archive)) throw new CoreError("NOT_FOUND", `Snapshot ${snapshotId} does not exist.`);
    return rt.lifecycle.run(async () => {
      const wasRunning = rt.handle.status === "running";
      if (wasRunning) await this.stopInner(rt);
      const home = rt.user.home;
      if (!isInside(this.rootDir, home) || home === this.rootDir)
        throw new CoreError("INTERNAL_ERROR", "refusing to clear a home outside rootDir");
      await runChecked("find", [home, "-mindepth", "1", "-delete"], { user: rt.user, timeoutMs: 120_000 });
      await this.tarAs(rt, ["-C", home, "-xzf", "-"], { in: archive });
      await runChecked("/bin/sh", ["-c", 'mkdir -p -- "$1/Downloads" "$1/.tmp"', "sh", home], {
        user: rt.user,
        timeoutMs: 10_000,
      });
      if (wasRunning) return this.startInner(rt);
      return this.touch(rt, {});
    });
  }

  // -------------------------------------------------------------------------------------------
  // connection (VNC / noVNC)

  async connection(handle: MachineHandle): Promise<ConnectionInfo> {
    const rt = this.running(handle);
    assertDesktop(rt.handle);
    return rt.lifecycle.run(() =>
      this.connectionInner(rt).catch((e) => {
        throw e instanceof SpawnError ? new CoreError("UPSTREAM_UNAVAILABLE", this.spawnFailureMessage(e)) : e;
      }),
    );
  }

  private async connectionInner(rt: Runtime): Promise<ConnectionInfo> {
    {
      const h = rt.handle;
      const vncPort = h.vnc_port!;
      const wsPort = h.websocket_port!;
      const passFile = path.join(h.runtime_dir, "vnc.pass");
      const password = (await readFile(passFile, "utf8")).trim();
      const procs = await processesOfUid(rt.user.uid);
      const env = this.envFor(rt);
      if (!procs.some((p) => this.roleOf(p, rt) === "x11vnc")) {
        spawnDaemon(
          rt.user,
          this.bin("x11vnc"),
          [
            "-display",
            `:${h.display}`,
            "-auth",
            path.join(h.runtime_dir, "Xauthority"),
            "-rfbport",
            String(vncPort),
            "-localhost",
            "-passwdfile",
            passFile,
            "-forever",
            "-shared",
            "-noxdamage",
            // Xvfb runs with -nocursor (screenshots come from its framebuffer): viewers get a plain arrow
            "-cursor",
            "arrow",
            "-quiet",
          ],
          { env, logFile: path.join(h.runtime_dir, "x11vnc.log") },
        );
        if (!(await waitFor(() => portOpen(vncPort, h.net_address ?? "127.0.0.1"), this.opts.startTimeoutMs, 50))) {
          throw new CoreError("UPSTREAM_UNAVAILABLE", "The VNC server did not start.");
        }
      }
      if (!procs.some((p) => this.roleOf(p, rt) === "websockify")) {
        // isolated: websockify listens on the machine's loopback; the host forwards to it (below)
        const listen = h.net_address ? "127.0.0.1" : this.opts.websocketListenHost;
        spawnDaemon(
          rt.user,
          this.bin("websockify"),
          ["--web", this.opts.novncWebDir, `${listen}:${wsPort}`, `127.0.0.1:${vncPort}`],
          {
            env,
            logFile: path.join(h.runtime_dir, "websockify.log"),
          },
        );
        if (
          !(await waitFor(
            () => portOpen(wsPort, h.net_address ?? (listen === "0.0.0.0" ? "127.0.0.1" : listen)),
            this.opts.startTimeoutMs,
            50,
          ))
        ) {
          throw new CoreError("UPSTREAM_UNAVAILABLE", "websockify did not start.");
        }
      }
      if (h.net_address) {
        const fw = this.isolation.forwarders;
        try {
          await fw.ensure(rt.user.name, "127.0.0.1", vncPort, h.net_address, vncPort);
          await fw.ensure(rt.user.name, this.opts.websocketListenHost, wsPort, h.net_address, wsPort);
        } catch (e) {
          throw new CoreError(
            "UPSTREAM_UNAVAILABLE",
            `The VNC ports of this machine are taken on the host: ${e instanceof Error ? e.message : String(e)}`,
          );
        }
      }
      this.touch(rt, { processes: await this.recordProcesses(rt) });
      const host = this.opts.publicHost;
      return {
        machine_id: h.machine_id,
        host,
        ssh_port: null,
        ssh_username: null,
        ssh_private_key_pem: null,
        vnc_port: vncPort,
        vnc_password: password,
        websocket_url: `ws://${host}:${wsPort}/websockify`,
        novnc_url: `http://${host}:${wsPort}/vnc.html?path=websockify&autoconnect=1`,
      };
    }
  }

  /** The machine's current handle as this provider knows it (after connection() or browser close/open). */
  currentHandle(machineId: string): MachineHandle | null {
    const rt = this.runtimes.get(machineId);
    return rt ? { ...rt.handle } : null;
  }

  /** Drops connections and terminal shells; desktops keep running and are re-adopted by reconcile. */
  async close(): Promise<void> {
    this.isolation.forwarders.closeAll();
    for (const rt of this.runtimes.values()) {
      rt.terminals.closeAll();
      rt.xdo.kill();
      await rt.browser.dispose();
    }
    this.runtimes.clear();
  }

  /** pids and roles of a machine's processes right now (diagnostics, tests) */
  async processes(handle: MachineHandle): Promise<{ role: string | null; pid: number; cmd: string }[]> {
    const rt = this.runtime(handle);
    return (await processesOfUid(rt.user.uid)).map((p) => ({
      role: this.roleOf(p, rt),
      pid: p.pid,
      cmd: p.cmdline.join(" ").slice(0, 200),
    }));
  }
}
