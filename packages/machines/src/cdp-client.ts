// A small Chrome DevTools Protocol client over the WebSocket built into Node (>= 22), with flat
// sessions (Target.attachToTarget {flatten: true}): one browser connection serves every tab.

export class CdpError extends Error {
  constructor(
    readonly method: string,
    readonly cdpCode: number,
    message: string,
  ) {
    super(`${method}: ${message}`);
  }
}

export interface CdpEvent {
  method: string;
  params: Record<string, any>;
  sessionId?: string;
}

interface Pending {
  method: string;
  resolve: (v: any) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class CdpConnection {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(e: CdpEvent) => void>();
  private isClosed = false;

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener("message", (ev) => this.onMessage(String(ev.data)));
    ws.addEventListener("close", () => this.onClose());
    ws.addEventListener("error", () => this.onClose());
  }

  /** Connects to the browser endpoint of a Chromium started with --remote-debugging-port. */
  static async connectToPort(port: number, timeoutMs = 5000, host = "127.0.0.1"): Promise<CdpConnection> {
    const res = await fetch(`http://${host}:${port}/json/version`, { signal: AbortSignal.timeout(timeoutMs) });
    const info = (await res.json()) as { webSocketDebuggerUrl?: string };
    if (!info.webSocketDebuggerUrl) throw new Error("DevTools endpoint gave no webSocketDebuggerUrl");
    return CdpConnection.connect(info.webSocketDebuggerUrl, timeoutMs);
  }

  static connect(url: string, timeoutMs = 5000): Promise<CdpConnection> {
    const WS = (globalThis as { WebSocket?: typeof WebSocket }).WebSocket;
    if (!WS) return Promise.reject(new Error("this Node has no global WebSocket (Node >= 22 needed)"));
    return new Promise((resolve, reject) => {
      const ws = new WS(url);
      const timer = setTimeout(() => {
        ws.close();
        reject(new Error("DevTools WebSocket connect timed out"));
      }, timeoutMs);
      ws.addEventListener("open", () => {
        clearTimeout(timer);
        resolve(new CdpConnection(ws));
      });
      ws.addEventListener("error", () => {
        clearTimeout(timer);
        reject(new Error("DevTools WebSocket connect failed"));
      });
    });
  }

  get closed(): boolean {
    return this.isClosed;
  }

  send<T = any>(
    method: string,
    params: Record<string, unknown> = {},
    sessionId?: string,
    timeoutMs = 30_000,
  ): Promise<T> {
    if (this.isClosed) return Promise.reject(new CdpError(method, -1, "connection closed"));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CdpError(method, -2, `no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { method, resolve, reject, timer });
      this.ws.send(JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params }));
    });
  }

  on(listener: (e: CdpEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the first matching event's params; rejects after timeoutMs. Call before the trigger. */
  waitFor(
    method: string,
    sessionId: string | undefined,
    timeoutMs: number,
    predicate: (p: any) => boolean = () => true,
  ): { promise: Promise<any>; cancel: () => void } {
    let off = () => {};
    let timer: NodeJS.Timeout | undefined;
    const promise = new Promise<any>((resolve, reject) => {
      off = this.on((e) => {
        if (e.method === method && (sessionId === undefined || e.sessionId === sessionId) && predicate(e.params)) {
          off();
          clearTimeout(timer);
          resolve(e.params);
        }
      });
      timer = setTimeout(() => {
        off();
        reject(new CdpError(method, -2, `event not seen within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    promise.catch(() => {});
    return {
      promise,
      cancel: () => {
        off();
        clearTimeout(timer);
      },
    };
  }

  close(): void {
    if (!this.isClosed) {
      try {
        this.ws.close();
      } catch {}
    }
    this.onClose();
  }

  private onMessage(text: string): void {
    let msg: any;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof msg.id === "number") {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error) p.reject(new CdpError(p.method, msg.error.code ?? -1, msg.error.message ?? "error"));
      else p.resolve(msg.result ?? {});
      return;
    }
    if (typeof msg.method === "string") {
      const ev: CdpEvent = { method: msg.method, params: msg.params ?? {}, sessionId: msg.sessionId };
      for (const l of [...this.listeners]) l(ev);
    }
  }

  private onClose(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new CdpError(p.method, -1, "connection closed"));
      this.pending.delete(id);
    }
  }
}
