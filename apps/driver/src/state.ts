// The driver's durable state: one JSON file (mode 0600) written atomically (temp file, fsync, rename).
// It holds the device token, the command cursor, the observation sequence and the results of the most
// recent commands (so a redelivered command is answered from here instead of being run twice).
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { open, rename } from "node:fs/promises";
import path from "node:path";
import type { DriverResult } from "@cua/machines/driver-wire";

/** A command's result as posted to the service (the shared wire schema). */
export type StoredResult = DriverResult;

export interface DriverState {
  api_url: string;
  /** the enrollment's Idempotency-Key, saved before the request so a retry gets the same token back */
  enrollment_key: string;
  machine_id: string | null;
  device_token: string | null;
  capabilities: string[];
  screen: { width: number; height: number } | null;
  /** next_cursor of the last fully processed poll */
  cursor: string;
  /** last observation sequence the service accepted */
  last_sequence: number;
  last_frame_id: string | null;
  /** command id -> its result (the newest MAX_RESULTS), for deduplication */
  results: Record<string, StoredResult>;
  /** ids in the order their results were stored */
  result_order: string[];
}

export const MAX_RESULTS = 500;

export function loadState(file: string): DriverState | null {
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as DriverState;
}

export function saveState(file: string, state: DriverState): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, JSON.stringify(state, null, 2));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dir = openSync(path.dirname(path.resolve(file)), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

/**
 * The driver loop's writer of the state file: the same atomic write (temp file, fsync, rename, directory
 * fsync), done in the background so that a command's round trip does not wait for the disk. At most one
 * write runs at a time; saves requested meanwhile are coalesced into one write of the newest state.
 * `save()` resolves once a write that includes the state as it was at the call has completed.
 */
export class StateWriter {
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;

  constructor(
    private readonly file: string,
    private readonly state: DriverState,
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  save(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.running) return this.start();
    this.queued = this.running.then(() => {
      this.queued = null;
      return this.start();
    });
    return this.queued;
  }

  private start(): Promise<void> {
    const p = this.write().finally(() => {
      if (this.running === p) this.running = null;
    });
    this.running = p;
    return p;
  }

  /** waits for every requested write */
  async flush(): Promise<void> {
    while (this.queued || this.running) await (this.queued ?? this.running);
  }

  private async write(): Promise<void> {
    try {
      const text = JSON.stringify(this.state);
      const dir = path.dirname(path.resolve(this.file));
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const tmp = `${this.file}.${process.pid}.tmp`;
      const fh = await open(tmp, "w", 0o600);
      try {
        await fh.writeFile(text);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.file);
      const d = await open(dir, "r");
      try {
        await d.sync();
      } finally {
        await d.close();
      }
    } catch (e) {
      this.onError(e);
    }
  }
}

export function rememberResult(state: DriverState, id: string, r: StoredResult): void {
  if (!state.results[id]) state.result_order.push(id);
  state.results[id] = r;
  while (state.result_order.length > MAX_RESULTS) {
    const old = state.result_order.shift()!;
    delete state.results[old];
  }
}
