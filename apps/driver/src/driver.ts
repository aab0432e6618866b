// The driver loop (protocol version 1; docs/driver.md):
//   start    heartbeat -> last_sequence / last_frame_id (so the next observation is last_sequence + 1)
//   loop     long-poll commands after the persisted cursor; for each command: answer from the stored
//            results when its id was processed before (deduplication), else verify protocol, capability,
//            deadline, fencing token and frame precondition, execute, store the result durably, post it;
//            persist next_cursor once every command of the page is processed (at-least-once delivery)
//   revoked  a 401 INVALID_DEVICE_TOKEN stops the driver (the owner deleted the machine)
import { CoreError } from "@cua/base/errors";
import {
  MAX_TIMEOUT_MS,
  MIN_TIMEOUT_MS,
  parseBrowserOp,
  parseCommand,
  parseFileOp,
  runCommand,
} from "@cua/machines/commands";
import { PROTOCOL_VERSION } from "@cua/machines/driver-wire";
import type { OpResult } from "@cua/machines/provider";
import { ApiError, type DriverClient, type WireCommand } from "./client.ts";
import type { DisplayBackend } from "./display-backend.ts";
import { type DriverState, rememberResult, StateWriter, type StoredResult } from "./state.ts";

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface DriverOptions {
  stateFile: string;
  state: DriverState;
  client: DriverClient;
  display: DisplayBackend;
  log: Logger;
  /** long-poll wait (seconds, 0..30) */
  pollWaitSeconds?: number;
  heartbeatMs?: number;
}

export class DeviceRevoked extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Driver {
  private stopping = false;
  private readonly abort = new AbortController();
  private fence = 0;
  private readonly writer: StateWriter;

  constructor(private readonly o: DriverOptions) {
    this.writer = new StateWriter(o.stateFile, o.state, (e) =>
      o.log.warn("writing the state file failed", { err: e instanceof Error ? e.message : String(e) }),
    );
  }

  private get state(): DriverState {
    return this.o.state;
  }

  /**
   * Writes the state file in the background (atomic, fsync'd; coalesced): a command's round trip never
   * waits for the disk. Order still holds where it matters: a result is remembered in memory before it is
   * posted, and the service only stops redelivering a command once it recorded its result, so a crash
   * before the write lands redelivers (and re-runs) the command exactly as a crash during it did.
   */
  private save(): void {
    void this.writer.save();
  }

  stop(): void {
    this.stopping = true;
    this.abort.abort();
  }

  /** Runs until stop() or until the device token is revoked (throws DeviceRevoked). */
  async run(): Promise<void> {
    await this.retrying(async () => {
      const hb = await this.o.client.heartbeat({ driver: "cua-driver", protocol_version: PROTOCOL_VERSION });
      this.state.last_sequence = hb.last_sequence;
      this.state.last_frame_id = hb.last_frame_id;
      this.fence = hb.fencing_token;
      await this.writer.save();
    });
    this.o.log.info("driver started", {
      machine_id: this.state.machine_id,
      cursor: this.state.cursor,
      last_sequence: this.state.last_sequence,
    });
    const hb = setInterval(() => {
      this.o.client.heartbeat().catch(() => {});
    }, this.o.heartbeatMs ?? 30_000);
    hb.unref();
    try {
      while (!this.stopping) {
        let page: Awaited<ReturnType<DriverClient["poll"]>>;
        try {
          page = await this.o.client.poll(this.state.cursor, this.o.pollWaitSeconds ?? 25, this.abort.signal);
        } catch (e) {
          if (this.stopping) break;
          await this.onError(e);
          continue;
        }
        this.fence = page.fencing_token;
        for (const cmd of page.commands) {
          if (this.stopping) return;
          await this.handle(cmd);
        }
        if (page.next_cursor !== this.state.cursor) {
          this.state.cursor = page.next_cursor;
          this.save();
        }
      }
    } finally {
      clearInterval(hb);
      await this.writer.flush();
    }
  }

  private async onError(e: unknown): Promise<void> {
    if (e instanceof ApiError && e.status === 401) {
      this.o.log.warn("device token rejected: the machine was deleted or the token revoked; stopping");
      throw new DeviceRevoked(e.message);
    }
    this.o.log.warn("driver request failed; retrying", { err: e instanceof Error ? e.message : String(e) });
    await sleep(e instanceof ApiError && e.status === 429 ? Number(e.body.retry_after ?? 1) * 1000 : 1000);
  }

  private async retrying<T>(fn: () => Promise<T>, until?: number): Promise<T | undefined> {
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof ApiError) || !e.transient || this.stopping) throw e;
        if (until !== undefined && Date.now() > until) return undefined;
        await this.onError(e);
      }
    }
  }

  private async handle(cmd: WireCommand): Promise<void> {
    const stored = this.state.results[cmd.id];
    if (stored) {
      this.o.log.info("redelivered command answered from the stored result", { command_id: cmd.id });
      await this.post(cmd, stored);
      return;
    }
    const echo = { fencing_token: cmd.fencing_token, precondition_frame_id: cmd.precondition_frame_id };
    const reject = (code: string, message: string): StoredResult => ({
      status: "rejected",
      result: {},
      error: { code, message },
      duration_ms: 0,
      ...echo,
    });
    let r: StoredResult;
    if (cmd.protocol_version !== PROTOCOL_VERSION)
      r = reject("UNSUPPORTED_PROTOCOL", `protocol ${cmd.protocol_version} is not 1`);
    else if (!this.state.capabilities.includes(cmd.capability))
      r = reject("CAPABILITY_NOT_ENROLLED", `no ${cmd.capability} capability`);
    else if (Date.parse(cmd.deadline) <= Date.now()) r = reject("DEADLINE_PASSED", "the command's deadline passed");
    else if (cmd.fencing_token !== this.fence) {
      this.o.log.warn("command of an old fence skipped", { command_id: cmd.id, fence: this.fence });
      return;
    } else if (cmd.precondition_frame_id !== null && cmd.precondition_frame_id !== this.state.last_frame_id)
      r = reject("FRAME_PRECONDITION_FAILED", "the precondition frame is not the newest frame");
    else {
      this.o.log.info("executing", { command_id: cmd.id, command: cmd.command });
      const out = await this.execute(cmd);
      r = {
        status: out.success ? "succeeded" : "failed",
        result: out.result,
        error: out.success ? null : (out.error ?? { code: "FAILED", message: "failed" }),
        duration_ms: out.duration_ms,
        ...echo,
      };
    }
    rememberResult(this.state, cmd.id, r);
    this.save();
    await this.post(cmd, r);
  }

  private async post(cmd: WireCommand, r: StoredResult): Promise<void> {
    try {
      await this.retrying(() => this.o.client.result(cmd.id, r), Date.parse(cmd.deadline) + 60_000);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) throw new DeviceRevoked(e.message);
      // 409 (cancelled by a newer fence, expired, conflicting) and 404: the service no longer wants it
      this.o.log.warn("result not accepted", { command_id: cmd.id, err: e instanceof Error ? e.message : String(e) });
    }
  }

  private async execute(cmd: WireCommand): Promise<OpResult & { duration_ms: number }> {
    const started = performance.now();
    const left = Date.parse(cmd.deadline) - Date.now();
    const timeoutMs = Math.max(MIN_TIMEOUT_MS, Math.min(MAX_TIMEOUT_MS, left));
    const backend = this.o.display.backend();
    const done = (r: OpResult) => ({ ...r, duration_ms: Math.round(performance.now() - started) });
    try {
      if (cmd.command === "screenshot") return done(await this.observe());
      if (cmd.command === "browser_op") {
        const p = cmd.parameters as { op: string; parameters: unknown; timeout_ms?: number };
        return done(await backend.browser(parseBrowserOp(p.op, p.parameters), p.timeout_ms ?? timeoutMs));
      }
      if (cmd.command === "file_op") {
        const p = cmd.parameters as { op: string; parameters: unknown };
        return done(await backend.file(parseFileOp(p.op, p.parameters)));
      }
      const r = await runCommand(backend, parseCommand(cmd.command, cmd.parameters), timeoutMs);
      return { success: r.success, result: r.result, error: r.error, duration_ms: r.duration_ms };
    } catch (e) {
      const code = e instanceof CoreError ? e.code : "DRIVER_ERROR";
      return done({ success: false, result: {}, error: { code, message: e instanceof Error ? e.message : String(e) } });
    }
  }

  /** Captures the screen and posts it as observation last_sequence + 1; the result names the frame. */
  private async observe(): Promise<OpResult> {
    const shot = await this.o.display.screenshot();
    for (let attempt = 0; ; attempt++) {
      try {
        const f = await this.o.client.observe(this.state.last_sequence + 1, shot.png);
        this.state.last_sequence = f.sequence;
        this.state.last_frame_id = f.frame_id;
        this.save();
        return {
          success: true,
          result: {
            frame_id: f.frame_id,
            sequence: f.sequence,
            width: shot.width,
            height: shot.height,
            digest: f.digest,
          },
          error: null,
        };
      } catch (e) {
        if (e instanceof ApiError && e.code === "SEQUENCE_CONFLICT" && attempt < 2) {
          this.state.last_sequence = Number(e.body.last_sequence ?? this.state.last_sequence);
          continue;
        }
        if (e instanceof ApiError && e.transient && attempt < 5) {
          await sleep(500);
          continue;
        }
        throw e;
      }
    }
  }
}
