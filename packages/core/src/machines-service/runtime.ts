// The machine service's runtime resources: which provider serves which machines, in-process signals
// that wake long polls and waiting dispatchers, and the background work (provisioning) in flight.
// One instance per API process; passed in as `deps.machines` (no container).

import { EventEmitter } from "node:events";
import type { CoreDeps } from "../deps.ts";
import type { MachineProvider } from "../machines/provider.ts";

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

/** Per-machine wake-ups: "commands" (something to deliver), "results" (a command finished). */
export class MachineSignals {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  notify(machineId: string, kind: "commands" | "results"): void {
    this.emitter.emit(`${kind}:${machineId}`);
  }
  /** resolves on the next notification or after ms (whichever first); never rejects */
  wait(machineId: string, kind: "commands" | "results", ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const event = `${kind}:${machineId}`;
      const done = () => {
        clearTimeout(timer);
        this.emitter.off(event, done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.emitter.on(event, done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}

export class MachinesRuntime {
  readonly managed: MachineProvider | null;
  readonly mock: MachineProvider;
  readonly signals = new MachineSignals();
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

  /** waits for background work; providers keep their machines running (they are reconciled at start) */
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
