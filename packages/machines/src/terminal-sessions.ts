// Terminal for local machines: bash running as the machine's user. A session_id keeps one shell alive
// between calls (cwd, variables, functions persist); without one a fresh shell runs the command.
// Output (stdout and stderr merged) is capped at 5000 characters; a timed-out command ends its shell.

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import type { TerminalInput } from "./commands.ts";
import { DEFAULT_TIMEOUT_MS, TERMINAL_OUTPUT_LIMIT } from "./commands.ts";
import type { UserIdentity } from "./process-utils.ts";
import { signalGroup, userSpawn } from "./process-utils.ts";
import type { OpResult } from "./provider.ts";
import { opFail, opOk } from "./provider.ts";

export const MAX_SESSIONS_PER_MACHINE = 16;
export const SESSION_IDLE_MS = 30 * 60 * 1000;
const TAIL_KEEP = 1024;

function b64(s: string): string {
  return Buffer.from(s, "utf8").toString("base64");
}

interface Pending {
  nonce: string;
  resolve: (r: { output: string; total: number; exitCode: number | null; cwd: string | null; ended: boolean }) => void;
}

class Shell {
  readonly proc: ChildProcessWithoutNullStreams;
  lastUsed = Date.now();
  private decoder = new StringDecoder("utf8");
  private buf = "";
  private head = "";
  private tail = "";
  private total = 0;
  private truncatedMode = false;
  private pending: Pending | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  exited = false;

  constructor(user: UserIdentity, env: Record<string, string>) {
    const how = userSpawn(user, "/bin/bash", ["--noprofile", "--norc"], user.home);
    this.proc = spawn(how.command, how.args, {
      ...how.ids,
      cwd: user.home,
      env: { ...env, TERM: "dumb", HISTFILE: "/dev/null", PS1: "", PS2: "" } as unknown as NodeJS.ProcessEnv,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    }) as ChildProcessWithoutNullStreams;
    this.proc.on("error", () => this.onExit());
    // "close" comes after the output pipes drained; "exit" alone can beat the last output chunk, so it
    // only arms a fallback (a background child may hold the pipe open)
    this.proc.on("close", () => this.onExit());
    this.proc.on("exit", () => setTimeout(() => this.onExit(), 150).unref());
    this.proc.stdin.on("error", () => {});
    this.proc.stdout.on("data", (d: Buffer) => this.onData(this.decoder.write(d)));
    this.proc.stderr.on("data", () => {});
    this.proc.stdin.write("exec 2>&1\n");
  }

  private onData(chunk: string): void {
    if (!this.pending) return;
    if (!this.truncatedMode) {
      this.buf += chunk;
      if (this.buf.length > TERMINAL_OUTPUT_LIMIT * 2 + TAIL_KEEP) {
        this.truncatedMode = true;
        this.head = this.buf.slice(0, TERMINAL_OUTPUT_LIMIT);
        this.total = this.buf.length;
        this.tail = this.buf.slice(-TAIL_KEEP);
        this.buf = "";
      }
    } else {
      this.total += chunk.length;
      this.tail = (this.tail + chunk).slice(-TAIL_KEEP);
    }
    const hay = this.truncatedMode ? this.tail : this.buf;
    const re = new RegExp(`\\n__CUA_DONE_${this.pending.nonce}_(\\d+)_([A-Za-z0-9+/=]*)\\n`);
    const m = re.exec(hay);
    if (!m) return;
    const sentinelLen = hay.length - m.index;
    const output = this.truncatedMode ? this.head : this.buf.slice(0, m.index);
    const total = this.truncatedMode ? this.total - sentinelLen : m.index;
    const cwd = Buffer.from(m[2] ?? "", "base64").toString("utf8");
    this.finish({ output, total, exitCode: Number(m[1]), cwd, ended: false });
  }

  private finish(r: {
    output: string;
    total: number;
    exitCode: number | null;
    cwd: string | null;
    ended: boolean;
  }): void {
    const p = this.pending;
    this.pending = null;
    this.buf = "";
    this.head = "";
    this.tail = "";
    this.total = 0;
    this.truncatedMode = false;
    p?.resolve(r);
  }

  private onExit(): void {
    if (this.exited) return;
    this.exited = true;
    const output = this.truncatedMode ? this.head : this.buf;
    const total = this.truncatedMode ? this.total : this.buf.length;
    this.finish({ output, total, exitCode: this.proc.exitCode, cwd: null, ended: true });
  }

  /** Runs one command; serialised per shell. */
  run(command: string, cwd: string | undefined, timeoutMs: number): Promise<OpResult & { killed: boolean }> {
    const next = this.queue.then(() => this.runNow(command, cwd, timeoutMs));
    this.queue = next.catch(() => {});
    return next;
  }

  private runNow(command: string, cwd: string | undefined, timeoutMs: number): Promise<OpResult & { killed: boolean }> {
    this.lastUsed = Date.now();
    if (this.exited) return Promise.resolve({ ...opFail("SESSION_ENDED", "The shell has exited."), killed: true });
    const nonce = randomBytes(12).toString("hex");
    const cd = cwd === undefined ? "true" : `cd -- "$(printf '%s' '${b64(cwd)}' | base64 -d)"`;
    const script =
      `if ${cd}; then eval "$(printf '%s' '${b64(command)}' | base64 -d)" </dev/null; else false; fi\n` +
      `printf '\\n__CUA_DONE_${nonce}_%s_%s\\n' "$?" "$(printf '%s' "$PWD" | base64 -w0)"\n`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        // the command overran: end the whole shell (its process group) and report what it printed
        if (this.proc.pid !== undefined) signalGroup(this.proc.pid, "SIGKILL");
      }, timeoutMs);
      this.pending = {
        nonce,
        resolve: (r) => {
          clearTimeout(timer);
          this.lastUsed = Date.now();
          const result = {
            output: r.output.slice(0, TERMINAL_OUTPUT_LIMIT),
            exit_code: r.exitCode,
            timed_out: false,
            truncated: r.total > TERMINAL_OUTPUT_LIMIT,
            output_length: r.total,
          };
          if (r.ended) {
            const timedOut = this.proc.signalCode === "SIGKILL";
            if (timedOut) {
              resolve({
                ...opFail("TIMEOUT", `The command did not finish within ${timeoutMs} ms; its shell was ended.`, {
                  ...result,
                  exit_code: null,
                  timed_out: true,
                }),
                killed: true,
              });
            } else {
              // the command ended the shell itself (exit)
              resolve({ ...opOk({ ...result, session_ended: true }), killed: true });
            }
            return;
          }
          resolve({ ...opOk({ ...result, cwd: r.cwd }), killed: false });
        },
      };
      this.proc.stdin.write(script);
    });
  }

  kill(): void {
    if (this.proc.pid !== undefined) signalGroup(this.proc.pid, "SIGKILL");
  }
}

/** The terminals of one machine. */
export class TerminalSessions {
  private readonly sessions = new Map<string, Shell>();

  constructor(
    private readonly user: UserIdentity,
    private readonly env: () => Record<string, string>,
  ) {}

  private sweep(): void {
    const now = Date.now();
    for (const [id, s] of this.sessions) {
      if (s.exited || now - s.lastUsed > SESSION_IDLE_MS) {
        s.kill();
        this.sessions.delete(id);
      }
    }
  }

  async run(input: TerminalInput): Promise<OpResult> {
    this.sweep();
    const timeoutMs = input.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    const cwd = input.cwd === undefined ? undefined : input.cwd.replace(/^~(?=\/|$)/, this.user.home);
    if (!input.session_id) {
      const shell = new Shell(this.user, this.env());
      try {
        const r = await shell.run(input.command, cwd ?? this.user.home, timeoutMs);
        return { success: r.success, result: { ...r.result, session_id: null }, error: r.error };
      } finally {
        shell.kill();
      }
    }
    let shell = this.sessions.get(input.session_id);
    if (!shell) {
      if (this.sessions.size >= MAX_SESSIONS_PER_MACHINE) {
        return opFail(
          "TOO_MANY_SESSIONS",
          `At most ${MAX_SESSIONS_PER_MACHINE} terminal sessions per machine; idle ones end after 30 minutes.`,
        );
      }
      shell = new Shell(this.user, this.env());
      this.sessions.set(input.session_id, shell);
    }
    const r = await shell.run(input.command, cwd, timeoutMs);
    if (r.killed) {
      this.sessions.delete(input.session_id);
      shell.kill();
    }
    return { success: r.success, result: { ...r.result, session_id: input.session_id }, error: r.error };
  }

  closeAll(): void {
    for (const s of this.sessions.values()) s.kill();
    this.sessions.clear();
  }

  get size(): number {
    return this.sessions.size;
  }
}
