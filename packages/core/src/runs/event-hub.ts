// Fan-out of run events to SSE subscribers in this process. One channel per run with subscribers: a
// notification (a transition in this process) or the poll timer (events written by other processes)
// triggers ONE database read of the frames after the lowest cursor among the channel's subscribers,
// and each subscriber gets the frames past its own cursor, in seq order. Reads are coalesced: while
// one runs, further wake-ups just ask for one more read afterwards.
import type { Db } from "@cua/db/client";
import type { RunEventNotifier } from "./ports.ts";

export interface RunEventFrame {
  seq: number;
  event: string;
  data: unknown;
  created_at: string;
}

export interface Subscription {
  close(): void;
}

interface Subscriber {
  cursor: number;
  deliver(frames: RunEventFrame[]): void;
  fail(e: unknown): void;
}

interface Channel {
  runId: string;
  subs: Set<Subscriber>;
  reading: boolean;
  again: boolean;
}

const PAGE = 500;

export class RunEventHub implements RunEventNotifier {
  private readonly channels = new Map<string, Channel>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly opts: { pollMs?: number } = {},
  ) {}

  get subscriberCount(): number {
    let n = 0;
    for (const c of this.channels.values()) n += c.subs.size;
    return n;
  }

  /** Frames with seq > after, now and as they come. */
  subscribe(
    runId: string,
    after: number,
    deliver: (frames: RunEventFrame[]) => void,
    fail: (e: unknown) => void,
  ): Subscription {
    let ch = this.channels.get(runId);
    if (!ch) {
      ch = { runId, subs: new Set(), reading: false, again: false };
      this.channels.set(runId, ch);
    }
    const sub: Subscriber = { cursor: after, deliver, fail };
    ch.subs.add(sub);
    this.ensureTimer();
    this.read(ch);
    const channel = ch;
    return {
      close: () => {
        channel.subs.delete(sub);
        if (channel.subs.size === 0 && this.channels.get(runId) === channel) this.channels.delete(runId);
      },
    };
  }

  notify(runId: string): void {
    const ch = this.channels.get(runId);
    if (ch) this.read(ch);
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.channels.clear();
  }

  private ensureTimer() {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => {
      if (this.channels.size === 0) return;
      for (const ch of this.channels.values()) this.read(ch);
    }, this.opts.pollMs ?? 1000);
    this.timer.unref();
  }

  private read(ch: Channel): void {
    if (ch.reading) {
      ch.again = true;
      return;
    }
    ch.reading = true;
    void this.drain(ch).finally(() => {
      ch.reading = false;
      if (ch.again && ch.subs.size > 0) {
        ch.again = false;
        this.read(ch);
      }
    });
  }

  private async drain(ch: Channel): Promise<void> {
    for (;;) {
      ch.again = false;
      if (ch.subs.size === 0) return;
      let from = Number.POSITIVE_INFINITY;
      for (const s of ch.subs) from = Math.min(from, s.cursor);
      let rows: { seq: number; event: string; data: unknown; createdAt: Date }[];
      try {
        rows = await this.db.runEvent.findMany({
          where: { runId: ch.runId, seq: { gt: from } },
          orderBy: { seq: "asc" },
          take: PAGE,
          select: { seq: true, event: true, data: true, createdAt: true },
        });
      } catch (e) {
        for (const s of ch.subs) s.fail(e);
        return;
      }
      if (rows.length === 0) return;
      const frames = rows.map((r) => ({
        seq: r.seq,
        event: r.event,
        data: r.data,
        created_at: r.createdAt.toISOString(),
      }));
      for (const s of [...ch.subs]) {
        const mine = s.cursor === from ? frames : frames.filter((f) => f.seq > s.cursor);
        if (mine.length === 0) continue;
        s.cursor = mine.at(-1)!.seq;
        try {
          s.deliver(mine);
        } catch {}
      }
      if (rows.length < PAGE) return;
    }
  }
}
