// Hears key revocations made by any API process (PostgreSQL LISTEN on KEY_EVENTS_CHANNEL, notified in the
// revoking transaction by core's revokeKey) and drops them from this process's key cache. A heartbeat on
// the same connection confirms every second that nothing can have been missed; an unconfirmed cache falls
// back to its short TTL (packages/core/src/keys/key-cache.ts has the bounds; docs/api.md "API keys").
import { KEY_EVENTS_CHANNEL, type KeyCache } from "@cua/core/keys/key-cache";
import pg from "pg";

/** the listener's connection, as pg_stat_activity names it */
export const KEY_EVENTS_APPLICATION = "cua-key-events";

export interface KeyEventsListener {
  stop(): Promise<void>;
}

export function listenKeyEvents(
  databaseUrl: string,
  cache: KeyCache,
  opts: { heartbeatMs?: number; now?: () => number; onError?: (err: unknown) => void } = {},
): KeyEventsListener {
  const heartbeatMs = opts.heartbeatMs ?? 1000;
  const now = opts.now ?? Date.now;
  let client: pg.Client | null = null;
  let connecting: pg.Client | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;

  const lost = (err?: unknown) => {
    cache.listenerLost();
    if (err) opts.onError?.(err);
    const c = client;
    client = null;
    c?.end().catch(() => {});
    if (!stopped) schedule(1000, connect);
  };
  const schedule = (ms: number, f: () => void) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(f, ms);
    timer.unref();
  };
  const heartbeat = async () => {
    const c = client;
    if (!c || stopped) return;
    try {
      // notifications sent before this answer were read before it, on the same connection
      await c.query("SELECT 1");
      if (c === client) cache.confirmListener(now());
      schedule(heartbeatMs, () => void heartbeat());
    } catch (err) {
      if (c === client) lost(err);
    }
  };
  async function connect() {
    if (stopped) return;
    const c = new pg.Client({
      connectionString: databaseUrl,
      application_name: KEY_EVENTS_APPLICATION,
      keepAlive: true,
      query_timeout: 5000,
    });
    c.on("error", (err) => {
      if (c === client) lost(err);
    });
    c.on("end", () => {
      if (c === client) lost();
    });
    c.on("notification", (m) => {
      if (m.channel === KEY_EVENTS_CHANNEL) cache.onEvent(m.payload ?? "");
    });
    connecting = c;
    try {
      await c.connect();
      await c.query(`LISTEN ${KEY_EVENTS_CHANNEL}`);
    } catch (err) {
      c.end().catch(() => {});
      if (!stopped) {
        opts.onError?.(err);
        schedule(1000, connect);
      }
      return;
    } finally {
      connecting = null;
    }
    if (stopped) {
      await c.end().catch(() => {});
      return;
    }
    client = c;
    // what was revoked while nobody listened is unknown: start over
    cache.clear();
    cache.confirmListener(now());
    schedule(heartbeatMs, () => void heartbeat());
  }
  void connect();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      cache.listenerLost();
      const c = client;
      client = null;
      await Promise.all([c?.end().catch(() => {}), connecting?.end().catch(() => {})]);
    },
  };
}
