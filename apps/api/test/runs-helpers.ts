// Shared by the runs-*.test.ts black-box tests: machines, waiting for run states, reading the SSE stream,
// and a local callback receiver that verifies Service-Signature.
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { MockMachineProvider } from "@cua/machines/mock-provider";
import { call, type Res, type TestServer } from "./helpers.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A mock machine through the machines API (test keys). */
export async function testMachine(s: TestServer, key: string): Promise<string> {
  const r = await call(s.url, "POST", "/v1/machines", {
    key,
    body: { display_name: "runs", os_type: "linux", desktop_enabled: true },
  });
  if (r.status !== 201) throw new Error(`machine: ${r.status} ${r.text}`);
  return r.body.machine.id;
}

/**
 * A live-mode machine served by the mock provider: billing of live runs is observable without a real
 * desktop (the one real-desktop run is in runs-desktop.test.ts). Only this setup touches the database.
 */
export async function liveMockMachine(s: TestServer, accountId: string, status = "running"): Promise<string> {
  const id = crypto.randomUUID();
  const handle = await new MockMachineProvider().provision({ machineId: id, displayName: "live-mock" });
  await s.app.deps.db.machine.create({
    data: {
      id,
      accountId,
      mode: "live",
      kind: "managed",
      isTest: false,
      displayName: "live-mock",
      status,
      provider: "mock",
      handle: handle as object,
      capabilities: ["screenshot", "mouse", "keyboard", "scroll"],
    },
  });
  return id;
}

export const createRun = (
  s: TestServer,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) => call(s.url, "POST", "/v1/runs", { key, body, headers });

export const getRun = (s: TestServer, key: string, id: string) => call(s.url, "GET", `/v1/runs/${id}`, { key });

export async function waitRun(s: TestServer, key: string, id: string, statuses: string[], ms = 30_000): Promise<any> {
  const started = Date.now();
  for (;;) {
    const r = await getRun(s, key, id);
    if (statuses.includes(r.body?.status)) return r.body;
    if (Date.now() - started > ms)
      throw new Error(`run ${id} did not reach ${statuses.join("|")}: ${r.text.slice(0, 600)}`);
    await sleep(50);
  }
}

export async function waitFor<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v).slice(0, 600)}`);
    await sleep(50);
  }
}

export interface SseFrame {
  id: number | null;
  event: string;
  data: any;
}

export interface SseRead {
  status: number;
  headers: Headers;
  frames: SseFrame[];
  comments: string[];
  /** true when the server closed the stream (false: we stopped reading at the timeout) */
  closed: boolean;
  error?: any;
}

/** Reads an event stream until the server closes it or `ms` pass; `onFrame` may stop early (return true). */
export async function readSse(
  url: string,
  key: string,
  opts: {
    headers?: Record<string, string>;
    ms?: number;
    onFrame?: (f: SseFrame, all: SseFrame[]) => boolean | undefined;
  } = {},
): Promise<SseRead> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), opts.ms ?? 20_000);
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  let res: Response;
  try {
    res = await fetch(url, { headers: { "X-API-Key": key, ...(opts.headers ?? {}) }, signal: ac.signal });
  } catch (e) {
    clearTimeout(timer);
    throw e;
  }
  if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    clearTimeout(timer);
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, headers: res.headers, frames, comments, closed: true, error: body };
  }
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let closed = false;
  let stopped = false;
  try {
    while (!stopped) {
      const { done, value } = await reader.read();
      if (done) {
        closed = true;
        break;
      }
      buf += dec.decode(value, { stream: true });
      let i = buf.indexOf("\n\n");
      while (i >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: SseFrame = { id: null, event: "message", data: undefined };
        let isFrame = false;
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) comments.push(line.slice(1).trim());
          else if (line.startsWith("id: ")) f.id = Number(line.slice(4));
          else if (line.startsWith("event: ")) f.event = line.slice(7);
          else if (line.startsWith("data: ")) {
            f.data = JSON.parse(line.slice(6));
            isFrame = true;
          }
        }
        if (isFrame) {
          frames.push(f);
          if (opts.onFrame?.(f, frames)) {
            stopped = true;
            ac.abort();
            break;
          }
        }
        i = buf.indexOf("\n\n");
      }
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
  }
  return { status: res.status, headers: res.headers, frames, comments, closed };
}

export interface Received {
  at: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
  signatureValid: boolean;
}

/** A local callback receiver (http; the tests set ALLOW_INSECURE_CALLBACKS=1). */
export async function callbackReceiver(): Promise<{
  url: string;
  received: Received[];
  secrets: Map<string, string>;
  /** answer this status for the next n requests (then 200) */
  failNext(n: number, status?: number): void;
  close(): Promise<void>;
}> {
  const received: Received[] = [];
  const secrets = new Map<string, string>(); // run id -> webhook secret
  let failing = 0;
  let failStatus = 500;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      let json: any = null;
      try {
        json = JSON.parse(body);
      } catch {}
      const secret = secrets.get(json?.data?.run?.id) ?? "";
      received.push({
        at: Date.now(),
        headers: req.headers,
        body,
        json,
        signatureValid: verify(secret, body, String(req.headers["service-signature"] ?? "")),
      });
      if (failing > 0) {
        failing--;
        res.writeHead(failStatus).end("nope");
      } else res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    secrets,
    failNext(n, status = 500) {
      failing = n;
      failStatus = status;
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** Service-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>, at most 5 minutes old. */
export function verify(secret: string, body: string, header: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m || !secret) return false;
  if (Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return false;
  const want = createHmac("sha256", secret).update(`${m[1]}.${body}`).digest();
  return timingSafeEqual(want, Buffer.from(m[2]!, "hex"));
}

export function expectOk(r: Res, status = 200): Res {
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status} ${r.text.slice(0, 500)}`);
  return r;
}
