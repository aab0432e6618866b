// Shared plumbing of the provider stand-ins: a node:http server on 127.0.0.1, port 0, that records every
// request and answers from a script the test fills. With nothing scripted it answers 500, so a test that
// forgot a reply fails loudly instead of hanging.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface RecordedRequest {
  method: string;
  /** path without the query string */
  path: string;
  query: URLSearchParams;
  /** lowercased header names */
  headers: Record<string, string>;
  rawBody: string;
  /** parsed JSON body, undefined when the body is not JSON */
  body: any;
}

export interface HttpReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Steps a script can hold besides plain replies. */
export type ScriptStep<R> =
  | R
  | { kind: "delay"; ms: number; then: ScriptStep<R> }
  /** closes the connection without an answer (the SDK sees a connection error) */
  | { kind: "hangup" };

export interface StandinCore<R> {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** queue replies, answered in order, one per request */
  enqueue(...steps: ScriptStep<R>[]): void;
  /** replies still queued */
  pending(): number;
  /** drops queued replies and recorded requests */
  reset(): void;
  close(): Promise<void>;
}

export interface Handler<R> {
  /** returns an HttpReply to send without consuming the script (validation failures, auth) or null */
  check(req: RecordedRequest): HttpReply | null;
  /** renders one scripted reply for this request */
  render(step: R, req: RecordedRequest, seq: number): HttpReply;
  /** the reply when the script is empty */
  empty(req: RecordedRequest): HttpReply;
}

function send(res: ServerResponse, reply: HttpReply): void {
  const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
  res.writeHead(reply.status, { "content-type": "application/json", ...(reply.headers ?? {}) });
  res.end(text);
}

export async function startStandin<R>(handler: Handler<R>): Promise<StandinCore<R>> {
  const script: ScriptStep<R>[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let seq = 0;

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rawBody = Buffer.concat(chunks).toString("utf8");
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      let body: any;
      try {
        body = rawBody ? JSON.parse(rawBody) : undefined;
      } catch {
        body = undefined;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : (v ?? "");
      const recorded: RecordedRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers,
        rawBody,
        body,
      };
      requests.push(recorded);
      seq += 1;
      const n = seq;

      const early = handler.check(recorded);
      if (early) return send(res, early);
      const step = script.shift();
      if (step === undefined) return send(res, handler.empty(recorded));

      const play = (s: ScriptStep<R>): void => {
        if (s && typeof s === "object" && "kind" in s && (s as { kind: string }).kind === "hangup") {
          req.socket.destroy();
          return;
        }
        if (s && typeof s === "object" && "kind" in s && (s as { kind: string }).kind === "delay") {
          const d = s as { ms: number; then: ScriptStep<R> };
          const timer = setTimeout(() => {
            if (!res.destroyed) play(d.then);
          }, d.ms);
          res.on("close", () => clearTimeout(timer));
          return;
        }
        send(res, handler.render(s as R, recorded, n));
      };
      play(step);
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    enqueue: (...steps) => script.push(...steps),
    pending: () => script.length,
    reset: () => {
      script.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Decodes a data: URI or raw base64 and tells whether it holds a PNG or JPEG. */
export function sniffImage(base64: string): "image/png" | "image/jpeg" | null {
  let bytes: Buffer;
  try {
    bytes = Buffer.from(base64, "base64");
  } catch {
    return null;
  }
  if (bytes.length > 8 && bytes.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10])))
    return "image/png";
  if (bytes.length > 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  return null;
}

export function pngSize(base64: string): { width: number; height: number } | null {
  const bytes = Buffer.from(base64, "base64");
  if (sniffImage(base64) !== "image/png" || bytes.length < 24) return null;
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}
