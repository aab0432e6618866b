// The executor of the managed desktops, pointed at an existing X display of the driver's own user:
// the same allowlist, validation and runner (core/machines/commands.ts), the same xdotool script
// session, terminal sessions, Chromium (DevTools) controller and file ops. Only what the
// managed provider owns itself (users, Xvfb, the Chromium process) is done here for the host.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { readFile, unlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CoreError } from "@cua/base/errors";
import { ChromiumBrowser } from "@cua/machines/browser-controller";
import type { CommandBackend, InputAction } from "@cua/machines/commands";
import { runFileOp } from "@cua/machines/file-ops";
import { LocalHomeFs } from "@cua/machines/local-fs";
import { pngSize } from "@cua/machines/png";
import type { UserIdentity } from "@cua/machines/process-utils";
import { run, signalGroup, spawnDaemon, userEnv, waitFor } from "@cua/machines/process-utils";
import type { Screenshot } from "@cua/machines/provider";
import { MachineOpError } from "@cua/machines/provider";
import { TerminalSessions } from "@cua/machines/terminal-sessions";
import { XdotoolSession, xdotoolArgs } from "@cua/machines/xdotool-session";

export interface DisplayOptions {
  /** X display, e.g. ":0" */
  display: string;
  /** XAUTHORITY file of that display, if it needs one */
  xauthority?: string;
  /** relative file paths and the terminal start here (default: the user's home) */
  home: string;
  /**
   * Refuse file paths outside `home` (the owner's opt-in `--confine-files`). By default an absolute path
   * reaches what the driver's user may touch (DECISIONS.md "Compatibility amendments", machines).
   */
  confineFiles?: boolean;
  /** DevTools port for the driver's Chromium (default 9333) */
  devtoolsPort?: number;
  chromiumPath?: string;
}

export class DisplayBackend {
  readonly user: UserIdentity;
  private readonly env: Record<string, string>;
  private readonly xdo: XdotoolSession;
  private readonly terminals: TerminalSessions;
  private readonly browser: ChromiumBrowser;
  private readonly fs: LocalHomeFs;
  private readonly devtoolsPort: number;
  private readonly chromiumPath: string;
  private chromiumPid: number | null = null;
  private inputChain: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: DisplayOptions) {
    const info = os.userInfo();
    this.user = { name: info.username, uid: info.uid, gid: info.gid, home: path.resolve(opts.home) };
    for (const d of [this.user.home, path.join(this.user.home, ".tmp"), path.join(this.user.home, "Downloads")]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
    }
    this.env = userEnv(this.user, {
      DISPLAY: opts.display,
      ...(opts.xauthority ? { XAUTHORITY: opts.xauthority } : {}),
    });
    this.devtoolsPort = opts.devtoolsPort ?? 9333;
    this.chromiumPath =
      opts.chromiumPath ?? (existsSync("/usr/lib/chromium/chromium") ? "/usr/lib/chromium/chromium" : "chromium");
    this.xdo = new XdotoolSession(this.user, () => this.env);
    this.terminals = new TerminalSessions(this.user, () => this.env);
    this.fs = new LocalHomeFs(this.user, opts.confineFiles === true);
    this.browser = new ChromiumBrowser({
      devtoolsPort: () => this.devtoolsPort,
      ensureRunning: () => this.ensureChromium(),
      stopBrowser: () => this.stopChromium(),
    });
  }

  /** screen size of the display (xdotool getdisplaygeometry) */
  async geometry(): Promise<{ width: number; height: number }> {
    const r = await run("xdotool", ["getdisplaygeometry"], { user: this.user, env: this.env, timeoutMs: 10_000 });
    const m = /^(\d+)\s+(\d+)/.exec(r.stdout.toString("utf8"));
    if (r.code !== 0 || !m)
      throw new Error(`cannot read the display geometry of ${this.opts.display}: ${r.stderr.trim()}`);
    return { width: Number(m[1]), height: Number(m[2]) };
  }

  backend(): CommandBackend {
    return {
      input: (a, signal) => this.input(a, signal),
      screenshot: () => this.screenshot(),
      browser: (op, timeoutMs) => this.browser.run(op, timeoutMs),
      browserExecute: (script, timeoutMs) => this.browser.execute(script, timeoutMs),
      terminal: (t) => this.terminals.run(t),
      file: (op) => runFileOp(this.fs, op),
    };
  }

  private input(a: InputAction, signal: AbortSignal): Promise<void> {
    const next = this.inputChain.then(async () => {
      const { args, input } = xdotoolArgs(a);
      if (input === undefined && XdotoolSession.canScript(args)) {
        try {
          await this.xdo.run(args, signal);
          return;
        } catch (e) {
          if (signal.aborted) throw new MachineOpError("TIMEOUT", "The input action was stopped at the deadline.");
          throw new MachineOpError("INPUT_FAILED", `xdotool: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      const r = await run("xdotool", args, {
        user: this.user,
        env: this.env,
        ...(input !== undefined ? { input } : {}),
        signal,
        timeoutMs: 120_000,
      });
      if (r.code !== 0) throw new MachineOpError("INPUT_FAILED", `xdotool: ${r.stderr.trim() || `exit ${r.code}`}`);
    });
    this.inputChain = next.catch(() => {});
    return next;
  }

  async screenshot(): Promise<Screenshot> {
    const file = path.join(this.user.home, ".tmp", `shot-${randomBytes(6).toString("hex")}.png`);
    try {
      const r = await run("scrot", ["-z", "-o", "-q", "75", file], {
        user: this.user,
        env: this.env,
        timeoutMs: 10_000,
      });
      if (r.code !== 0) throw new CoreError("SCREENSHOT_FAILED", `scrot: ${r.stderr.trim() || `exit ${r.code}`}`);
      const png = await readFile(file);
      const { width, height } = pngSize(png);
      return { png, mime_type: "image/png", width, height, captured_at: new Date().toISOString() };
    } finally {
      await unlink(file).catch(() => {});
    }
  }

  private async devtoolsReady(): Promise<boolean> {
    try {
      const r = await fetch(`http://127.0.0.1:${this.devtoolsPort}/json/version`, {
        signal: AbortSignal.timeout(1000),
      });
      return r.ok;
    } catch {
      return false;
    }
  }

  private async ensureChromium(): Promise<boolean> {
    if (await this.devtoolsReady()) return false;
    const profile = path.join(this.user.home, ".config", "cua-driver-chromium");
    mkdirSync(profile, { recursive: true, mode: 0o700 });
    await run("/bin/sh", ["-c", 'rm -f -- "$1"/Singleton*', "sh", profile], { user: this.user, timeoutMs: 5000 });
    const { width, height } = await this.geometry();
    const args = [
      `--user-data-dir=${profile}`,
      `--remote-debugging-port=${this.devtoolsPort}`,
      "--remote-debugging-address=127.0.0.1",
      "--test-type",
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--password-store=basic",
      "--noerrdialogs",
      "--window-position=0,0",
      `--window-size=${width},${height}`,
      ...(this.user.uid === 0 ? ["--no-sandbox"] : []),
      "about:blank",
    ];
    const { child, pid } = spawnDaemon(this.user, this.chromiumPath, args, {
      env: {
        ...this.env,
        XDG_CONFIG_HOME: path.join(this.user.home, ".config"),
        XDG_CACHE_HOME: path.join(this.user.home, ".cache"),
      },
      logFile: path.join(this.user.home, ".tmp", "chromium.log"),
    });
    this.chromiumPid = pid;
    let exited = false;
    child.once("exit", () => {
      exited = true;
    });
    const ok = await waitFor(async () => exited || (await this.devtoolsReady()), 30_000, 50);
    if (!ok || exited) {
      signalGroup(pid, "SIGKILL");
      throw new MachineOpError("BROWSER_UNAVAILABLE", "Chromium did not open its DevTools endpoint.");
    }
    await run("xdotool", ["search", "--sync", "--onlyvisible", "--class", "chromium", "windowactivate", "--sync"], {
      user: this.user,
      env: this.env,
      timeoutMs: 10_000,
    });
    return true;
  }

  private async stopChromium(): Promise<void> {
    if (this.chromiumPid !== null) signalGroup(this.chromiumPid, "SIGTERM");
    this.chromiumPid = null;
  }

  async close(): Promise<void> {
    this.terminals.closeAll();
    this.xdo.kill();
    await this.browser.dispose().catch(() => {});
    await this.stopChromium();
  }
}
