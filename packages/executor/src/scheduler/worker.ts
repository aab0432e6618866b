// The worker loop: leases. It claims due items of the functions this process serves (SELECT ... FOR
// UPDATE SKIP LOCKED), at most `concurrency` at once, renews each lease every third of `leaseMs` while
// the item is processed, and sleeps until the next item is due (at most `pollIntervalMs`) or until
// kick() says new work may be due. A worker that dies leaves its leases to expire; another worker (or
// the restarted process) takes the items over. stop() waits for the items in flight, then gives the
// leases of the ones still running back.
import { LeaseLostError } from "../context.ts";
import type { ExecutorStore, QueueItem } from "../store/store.ts";
import type { ExecutorLogger } from "../types.ts";

export interface WorkerOptions {
  store: ExecutorStore;
  log: ExecutorLogger;
  now: () => Date;
  workerId: string;
  concurrency: number;
  pollIntervalMs: number;
  leaseMs: number;
  /** the functions whose items this worker claims */
  functionIds(): string[];
  /** process one leased item; isAbandoned() turns true once stop() gave its lease back */
  process(item: QueueItem, isAbandoned: () => boolean): Promise<void>;
  /** an item failed with an error other than a lost lease (its lease is left to expire) */
  onError(item: QueueItem, error: Error): Promise<void>;
}

interface InFlight {
  item: QueueItem;
  promise: Promise<void>;
  abandoned: boolean;
}

export class WorkerLoop {
  running = false;
  stopping = false;
  lastPollAt: Date | null = null;
  lastError: string | null = null;
  private readonly inFlight = new Map<string, InFlight>();
  private loopDone: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private kicked = false;

  constructor(private readonly opts: WorkerOptions) {}

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** New work may be due: end the current idle wait (or skip the next one). */
  kick(): void {
    this.kicked = true;
    this.wake?.();
  }

  start(): void {
    this.running = true;
    this.stopping = false;
    this.loopDone = this.loop().catch((e) => {
      this.lastError = (e as Error).message;
      this.opts.log.error(`executor loop crashed: ${(e as Error).message}`);
    });
  }

  async stop(timeoutMs: number): Promise<void> {
    if (!this.running) return;
    this.stopping = true;
    this.kick();
    await this.loopDone;
    const pending = [...this.inFlight.values()];
    if (pending.length > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(pending.map((p) => p.promise)),
        new Promise<void>((r) => {
          timer = setTimeout(r, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    }
    const abandoned = [...this.inFlight.values()];
    for (const a of abandoned) a.abandoned = true;
    if (abandoned.length > 0) {
      this.opts.log.warn(
        `stopping with ${abandoned.length} call(s) still running; their leases are released and they will be retried`,
      );
      await this.opts.store.release(
        abandoned.map((a) => a.item.id),
        this.opts.workerId,
      );
    }
    this.running = false;
  }

  /** Process one leased item while a heartbeat renews its lease. */
  private async processLeased(item: QueueItem, isAbandoned: () => boolean): Promise<void> {
    const { store, log, workerId, leaseMs, now } = this.opts;
    const heartbeat = setInterval(
      () => {
        store.heartbeat(item.id, workerId, new Date(now().getTime() + leaseMs)).then(
          (ok) => {
            if (!ok) log.warn("lease lost while processing", { itemId: item.id, runId: item.runId });
          },
          (e) => log.warn(`heartbeat failed: ${(e as Error).message}`),
        );
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    try {
      await this.opts.process(item, isAbandoned);
    } catch (e) {
      if (e instanceof LeaseLostError) log.info("lease lost; result discarded", { itemId: item.id, runId: item.runId });
      else {
        this.lastError = (e as Error).message;
        log.error(`processing ${item.kind} item of run ${item.runId} failed: ${(e as Error).message}`);
        // other errors (database down, timeouts) leave the lease to expire: the item is retried then
        await this.opts.onError(item, e as Error);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  private spawn(item: QueueItem): void {
    const entry: InFlight = { item, promise: Promise.resolve(), abandoned: false };
    entry.promise = this.processLeased(item, () => entry.abandoned).finally(() => {
      this.inFlight.delete(item.id);
      this.kick();
    });
    this.inFlight.set(item.id, entry);
  }

  private async idle(ms: number): Promise<void> {
    if (this.kicked) {
      this.kicked = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
    });
    this.kicked = false;
  }

  /** Lease up to `limit` due items. */
  private async claimDue(limit: number): Promise<QueueItem[]> {
    const { store, now, leaseMs, workerId } = this.opts;
    const at = now();
    const items = await store.claim({
      workerId,
      now: at,
      leaseUntil: new Date(at.getTime() + leaseMs),
      limit,
      functionIds: this.opts.functionIds(),
    });
    this.lastPollAt = at;
    return items;
  }

  /** How long to idle: until the next item is due, at most pollIntervalMs. */
  private async nextWait(): Promise<number> {
    const { store, now, pollIntervalMs, concurrency } = this.opts;
    let wait = pollIntervalMs;
    if (this.inFlight.size < concurrency) {
      try {
        const next = await store.nextDueAt(this.opts.functionIds());
        if (next) wait = Math.max(5, Math.min(pollIntervalMs, next.getTime() - now().getTime()));
      } catch {
        // the next claim reports database trouble
      }
    }
    return wait;
  }

  private async loop(): Promise<void> {
    const { log, pollIntervalMs, concurrency } = this.opts;
    let failures = 0;
    while (!this.stopping) {
      const free = concurrency - this.inFlight.size;
      if (free > 0) {
        try {
          const items = await this.claimDue(free);
          if (failures > 0) log.info("claiming work again after database errors", { failures });
          failures = 0;
          this.lastError = null;
          for (const item of items) this.spawn(item);
          if (items.length === free) continue; // more may be due; in-flight completions kick the loop
        } catch (e) {
          failures++;
          this.lastError = (e as Error).message;
          // log the first failure and then every doubling, and back off up to 5 s
          if ((failures & (failures - 1)) === 0)
            log.error(`claiming work failed (${failures}x): ${(e as Error).message}`);
          await this.idle(Math.min(pollIntervalMs * 2 ** failures, 5000));
          continue;
        }
      }
      if (this.stopping) break;
      await this.idle(await this.nextWait());
    }
  }
}
