// The machine service's runtime resources: which provider serves which machines, in-process signals
// that wake long polls and waiting dispatchers, and the background work (provisioning) in flight.
// One instance per API process; passed in as `deps.machines` (no container).

import { EventEmitter } from "node:events";
import type { MachineProvider } from "@cua/machines/provider";
import type { CoreDeps } from "../deps.ts";

export const EXTERNAL_PROVIDER = "external";

export interface MachinesRuntimeOptions {
  /** live managed machines; null when the host cannot run desktops (provision answers 503) */
  managed: MachineProvider | null;
  /** test keys' mock machines */
  mock: MachineProvider;
  /** how often a waiting long poll / dispatcher re-reads the database (other API processes) */
  pollIntervalMs?: number;
  /** base URL of this service, used in connection answers (websocket URLs behind the API) */
  publicBaseUrl?: string;
  /** length of a billing/TTL minute in ms (60000; tests shorten it to drive metering and TTL fast) */
  minuteMs?: number;
}

export interface ArmedWake {
  /**
   * resolves on the first notification since arming, or after ms; with the notification's payload when it
   * carried one (undefined after a timeout, an abort or a bare notification)
   */
  wait(ms: number, signal?: AbortSignal): Promise<unknown>;
  /** drops the subscription without waiting */
  cancel(): void;
}

/**
 * Per-machine wake-ups: "commands" (something to deliver), "results" (a command finished). A notification may
 * carry a payload (the queued command, the recorded result) so that a waiter in the same process answers from
 * memory instead of reading back the row that was just written; the row stays the record, and a waiter that
 * gets no payload (or one it cannot use) reads the database as before.
 */
export class MachineSignals {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  notify(machineId: string, kind: "commands" | "results", payload?: unknown): void {
    this.emitter.emit(`${kind}:${machineId}`, payload);
  }
  /**
   * Arms a wake-up before the caller reads the database, so a notification that lands between the
   * read and the wait is not lost: `const w = arm(); read(); await w(ms)`. Resolves on the first
   * notification since arming or after ms (whichever first); never rejects.
   */
  arm(machineId: string, kind: "commands" | "results"): ArmedWake {
    const event = `${kind}:${machineId}`;
    let fired = false;
    let payload: unknown;
    let wake: (() => void) | null = null;
    const onEvent = (p?: unknown) => {
      if (!fired) payload = p;
      fired = true;
      wake?.();
    };
    this.emitter.on(event, onEvent);
    const cancel = () => this.emitter.off(event, onEvent);
    const wait = (ms: number, signal?: AbortSignal) =>
      new Promise<unknown>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          cancel();
          signal?.removeEventListener("abort", done);
          resolve(fired ? payload : undefined);
        };
        const timer = setTimeout(done, Math.max(0, ms));
        if (fired || signal?.aborted) return done();
        wake = done;
        signal?.addEventListener("abort", done, { once: true });
      });
    return { wait, cancel };
  }

  /** resolves on the next notification or after ms (whichever first); never rejects */
  wait(machineId: string, kind: "commands" | "results", ms: number, signal?: AbortSignal): Promise<unknown> {
    return this.arm(machineId, kind).wait(ms, signal);
  }
}

/** A decrypted observation frame kept in memory (the frame store's row stays the record). */
export interface CachedFrame {
  frameId: string;
  png: Buffer;
  mime: string;
  width: number;
  height: number;
  storedAt: Date;
  expiresAt: Date;
}

/**
 * The newest frame of each external machine whose driver posted it to this process, so that the owner's
 * answers (an action's screen after it, a screenshot command) skip the frame's read and decryption. Bounded
 * by total bytes (least recently used out first); a frame is served only under its own id and until it
 * expires, so another process's newer frame (a different last_frame_id) is read from the database.
 */
export class FrameCache {
  private readonly byMachine = new Map<string, CachedFrame>();
  private bytes = 0;
  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  set(machineId: string, f: CachedFrame): void {
    this.drop(machineId);
    if (f.png.length > this.maxBytes / 4) return;
    this.byMachine.set(machineId, f);
    this.bytes += f.png.length;
    for (const [id, old] of this.byMachine) {
      if (this.bytes <= this.maxBytes) break;
      this.byMachine.delete(id);
      this.bytes -= old.png.length;
    }
  }

  get(machineId: string, frameId: string, now: Date): CachedFrame | undefined {
    const f = this.byMachine.get(machineId);
    if (!f || f.frameId !== frameId || f.expiresAt <= now) return undefined;
    this.byMachine.delete(machineId); // most recently used last
    this.byMachine.set(machineId, f);
    return f;
  }

  drop(machineId: string): void {
    const f = this.byMachine.get(machineId);
    if (!f) return;
    this.byMachine.delete(machineId);
    this.bytes -= f.png.length;
  }
}

export class MachinesRuntime {
  readonly managed: MachineProvider | null;
  readonly mock: MachineProvider;
  readonly signals = new MachineSignals();
  readonly frames = new FrameCache();
  readonly pollIntervalMs: number;
  readonly publicBaseUrl: string | undefined;
  readonly minuteMs: number;
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(options: MachinesRuntimeOptions) {
    this.managed = options.managed;
    this.mock = options.mock;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.publicBaseUrl = options.publicBaseUrl;
    this.minuteMs = options.minuteMs ?? 60_000;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** run background work tracked for shutdown (errors are the task's own business) */
  track(task: Promise<unknown>): void {
    const p = task.catch(() => {}).finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  /** waits for the background work in flight (provisioning, reconcile) */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  /**
   * waits for background work and releases the providers' own resources; machines keep running unless
   * the machine background stopped them first (startMachineBackground's stopDesktopsOnStop)
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inflight]);
    await this.mock.close().catch(() => {});
    await this.managed?.close().catch(() => {});
  }
}

export interface MachinesDeps extends CoreDeps {
  machines: MachinesRuntime;
}
