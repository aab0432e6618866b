// One long-lived `xdotool -` (script mode) per desktop: each action is one script line, followed by
// an `exec --sync` of a tiny shell that writes a sequence number to an extra pipe (fd 3) as the
// acknowledgement. This saves xdotool's start-up (X connection, keymap) on every action: ~2 ms per
// click instead of ~7 ms with a process per action (measured on Xvfb, 2 cores).
// Only plain tokens (numbers, key names, option names) go through the script; anything else (typed
// text) uses a process per action with the text on stdin.

import { type ChildProcess, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import type { InputAction } from "./commands.ts";
import { toKeysym } from "./keys.ts";
import type { UserIdentity } from "./process-utils.ts";
import { signalGroup, userSpawn } from "./process-utils.ts";
import { MachineOpError } from "./provider.ts";

export const SCRIPT_SAFE_TOKEN = /^[A-Za-z0-9_.+-]{1,64}$/;

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
}

export class XdotoolSession {
  private proc: ChildProcess | null = null;
  private readonly waiters = new Map<number, Waiter>();
  private seq = 0;
  private buf = "";

  constructor(
    private readonly user: UserIdentity,
    private readonly env: () => Record<string, string>,
  ) {}

  static canScript(args: string[]): boolean {
    return args.length > 0 && args.every((a) => SCRIPT_SAFE_TOKEN.test(a));
  }

  private start(): ChildProcess {
    const how = userSpawn(this.user, "xdotool", ["-"], this.user.home);
    const proc = spawn(how.command, how.args, {
      ...how.ids,
      cwd: this.user.home,
      env: this.env() as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["pipe", "ignore", "pipe", "pipe"],
    });
    const ack = proc.stdio[3] as Readable;
    ack.on("data", (d: Buffer) => {
      this.buf += d.toString("utf8");
      for (let i = this.buf.indexOf("\n"); i >= 0; i = this.buf.indexOf("\n")) {
        const n = Number(this.buf.slice(0, i));
        this.buf = this.buf.slice(i + 1);
        const w = this.waiters.get(n);
        this.waiters.delete(n);
        w?.resolve();
      }
    });
    ack.on("error", () => {});
    proc.stderr!.on("data", () => {});
    (proc.stdin as Writable).on("error", () => {});
    const onEnd = () => {
      if (this.proc === proc) this.proc = null;
      for (const w of this.waiters.values()) w.reject(new Error("xdotool exited"));
      this.waiters.clear();
    };
    proc.on("exit", onEnd);
    proc.on("error", onEnd);
    this.proc = proc;
    return proc;
  }

  /** Runs one xdotool command line and resolves when it has finished. */
  run(args: string[], signal?: AbortSignal): Promise<void> {
    if (!XdotoolSession.canScript(args)) return Promise.reject(new Error("token not allowed in xdotool script mode"));
    const proc = this.proc ?? this.start();
    const n = ++this.seq;
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.kill();
        reject(new Error("aborted"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.set(n, {
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      });
      (proc.stdin as Writable).write(`${args.join(" ")}\nexec --sync /bin/sh -c "echo ${n} >&3"\n`);
    });
  }

  kill(): void {
    const p = this.proc;
    this.proc = null;
    if (p?.pid !== undefined) signalGroup(p.pid, "SIGKILL");
  }
}

/** The xdotool command line for one input action: what managed desktops and the driver both send. */
export function xdotoolArgs(a: InputAction): { args: string[]; input?: string } {
  const buttonNo = (b: "left" | "right" | "middle") => (b === "left" ? "1" : b === "middle" ? "2" : "3");
  const syms = (keys: string[]) =>
    keys.map((k) => {
      const s = toKeysym(k);
      if (!s) throw new MachineOpError("INVALID_KEY", `Unknown key ${k}.`);
      return s;
    });
  const hold = (keys: string[]) => syms(keys).flatMap((k) => ["keydown", k]);
  const release = (keys: string[]) =>
    syms(keys)
      .reverse()
      .flatMap((k) => ["keyup", k]);
  switch (a.kind) {
    case "click": {
      // press + release; xdotool's own `click` would sleep its --delay (100 ms by default) after every
      // click. Rapid clicks were dropped only while openbox grabbed client windows (see openboxConfig).
      const b = buttonNo(a.button);
      const clicks = Array.from({ length: a.clicks }, (_, i) => [
        ...(i > 0 ? ["sleep", "0.04"] : []),
        "mousedown",
        b,
        "mouseup",
        b,
      ]).flat();
      return {
        args: ["mousemove", String(a.x), String(a.y), ...hold(a.hold_keys), ...clicks, ...release(a.hold_keys)],
      };
    }
    case "move":
      return { args: ["mousemove", String(a.x), String(a.y)] };
    case "type":
      return { args: ["type", "--delay", "12", "--file", "-"], input: a.text };
    case "keys":
      return a.chord
        ? { args: ["key", "--delay", "20", syms(a.keys).join("+")] }
        : { args: ["key", "--delay", "20", ...syms(a.keys)] };
    case "scroll": {
      if (a.clicks === 0)
        return {
          args: a.x !== undefined && a.y !== undefined ? ["mousemove", String(a.x), String(a.y)] : ["sleep", "0"],
        };
      const button = a.direction === "vertical" ? (a.clicks > 0 ? "4" : "5") : a.clicks > 0 ? "7" : "6";
      const move = a.x !== undefined && a.y !== undefined ? ["mousemove", String(a.x), String(a.y)] : [];
      return { args: [...move, "click", "--repeat", String(Math.abs(a.clicks)), "--delay", "20", button] };
    }
    case "drag": {
      const b = buttonNo(a.button);
      const mx = Math.round((a.x1 + a.x2) / 2);
      const my = Math.round((a.y1 + a.y2) / 2);
      return {
        args: [
          "mousemove",
          String(a.x1),
          String(a.y1),
          ...hold(a.hold_keys),
          "mousedown",
          b,
          "sleep",
          "0.05",
          "mousemove",
          String(mx),
          String(my),
          "sleep",
          "0.05",
          "mousemove",
          String(a.x2),
          String(a.y2),
          "sleep",
          "0.05",
          "mouseup",
          b,
          ...release(a.hold_keys),
        ],
      };
    }
  }
}
