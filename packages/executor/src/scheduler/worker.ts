// The worker loop of one lane: leases. It claims due items of the functions this process serves and of
// the lane's kinds (SELECT ... FOR UPDATE SKIP LOCKED), at most `concurrency` at once, renews each lease
// every third of `leaseMs` while the item is processed, and sleeps until the next item is due (at most
// `pollIntervalMs`) or until kick() says new work may be due. Processing an item may hand back the run's
// next item, already leased to this worker (a run going on from one step to the next): the slot goes on
// with it at once, without a claim or a poll, for at most `chainMs`; then the item is left to the queue,
// behind the work that waited meanwhile. A worker that dies leaves its leases to expire; another worker
// (or the restarted process) takes the items over. stop() waits for the items in flight, then gives the
// leases of the ones still running back.
import { LeaseLostError } from "../context.ts";
import { type ExecutorStore, type LaneKinds, leaseOf, type QueueItem } from "../store/store.ts";

/** The end of a lease taken now. */
export type ChainLease = () => Date;

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
  /** the item kinds this lane claims (undefined: every kind) */
  kinds?: LaneKinds;
  /** kinds claimed before any other due item */
  first?: LaneKinds;
  /** how long one slot may go on with a run's next items before leaving them to the queue (default 2 s) */
  chainMs?: number;
  /**
   * Process one leased item; isAbandoned() turns true once stop() gave its lease back. With `chainLease`,
   * it may return the run's next item, leased to this worker until chainLease() (asked when the lease is
   * taken), to be processed next in this slot.
   */
  process(item: QueueItem, isAbandoned: () => boolean, chainLease: ChainLease | null): Promise<QueueItem | null>;
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
  private readonly inFlight = new Set<InFlight>();
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
    const pending = [...this.inFlight];
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
    const abandoned = [...this.inFlight];
    for (const a of abandoned) a.abandoned = true;
    if (abandoned.length > 0) {
      this.opts.log.warn(
        `stopping with ${abandoned.length} call(s) still running; their leases are released and they will be retried`,
      );
      await this.opts.store.release(abandoned.map((a) => ({ itemId: a.item.id, owner: leaseOf(a.item) })));
    }
    this.running = false;
  }

  /** Process one leased item (and the items it hands on) while a heartbeat renews the current lease. */
  private async processLeased(entry: InFlight): Promise<void> {
    const { store, log, leaseMs, now } = this.opts;
    const heartbeat = setInterval(
      () => {
        const item = entry.item;
        store.heartbeat(item.id, leaseOf(item), new Date(now().getTime() + leaseMs)).then(
          (ok) => {
            if (!ok) log.warn("lease lost while processing", { itemId: item.id, runId: item.runId });
          },
          (e) => log.warn(`heartbeat failed: ${(e as Error).message}`),
        );
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    const chainEnds = Date.now() + (this.opts.chainMs ?? 2000);
    try {
      for (let item: QueueItem | null = entry.item; item; ) {
        entry.item = item;
        const current: QueueItem = item;
        const chain = !this.stopping && Date.now() < chainEnds;
        try {
          item = await this.opts.process(
            current,
            () => entry.abandoned,
            chain ? () => new Date(now().getTime() + leaseMs) : null,
          );
        } catch (e) {
          if (e instanceof LeaseLostError)
            log.info("lease lost; result discarded", { itemId: current.id, runId: current.runId });
          else {
            this.lastError = (e as Error).message;
            log.error(`processing ${current.kind} item of run ${current.runId} failed: ${(e as Error).message}`);
            // other errors (database down, timeouts) leave the lease to expire: the item is retried then
            await this.opts.onError(current, e as Error);
          }
          item = null;
        }
        if (item && (this.stopping || entry.abandoned)) {
          // stopping: the run's next item goes back to the queue (stop() gives the current lease back)
          await store.release([{ itemId: item.id, owner: leaseOf(item) }]).catch(() => {});
          item = null;
        }
      }
    } finally {
      clearInterval(heartbeat);
    }
  }

  private spawn(item: QueueItem): void {
    const entry: InFlight = { item, promise: Promise.resolve(), abandoned: false };
    entry.promise = this.processLeased(entry).finally(() => {
      this.inFlight.delete(entry);
      this.kick();
    });
    this.inFlight.add(entry);
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

  /** Lease up to `limit` due items; also when the next item is due (one round trip). */
  private async pollDue(limit: number): Promise<{ items: QueueItem[]; nextDueAt: Date | null }> {
    const { store, now, leaseMs, workerId } = this.opts;
    const at = now();
    const polled = await store.poll({
      workerId,
      now: at,
      leaseUntil: new Date(at.getTime() + leaseMs),
      limit,
      functionIds: this.opts.functionIds(),
      ...(this.opts.kinds ? { kinds: this.opts.kinds } : {}),
      ...(this.opts.first ? { first: this.opts.first } : {}),
    });
    this.lastPollAt = at;
    return polled;
  }

  private async loop(): Promise<void> {
    const { log, pollIntervalMs, concurrency, now } = this.opts;
    let failures = 0;
    while (!this.stopping) {
      const free = concurrency - this.inFlight.size;
      // idle until the next item is due, at most pollIntervalMs (other processes enqueue too)
      let wait = pollIntervalMs;
      if (free > 0) {
        try {
          const { items, nextDueAt } = await this.pollDue(free);
          if (failures > 0) log.info("claiming work again after database errors", { failures });
          failures = 0;
          this.lastError = null;
          for (const item of items) this.spawn(item);
          if (items.length === free) continue; // more may be due; in-flight completions kick the loop
          if (nextDueAt) wait = Math.max(5, Math.min(pollIntervalMs, nextDueAt.getTime() - now().getTime()));
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
      await this.idle(wait);
    }
  }
}
