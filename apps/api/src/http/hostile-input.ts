// Answers the framework gives itself, made SPEC envelopes (issue 10, failure 3), each at the one place every
// request passes through:
// - Node's HTTP parser errors (431 oversized headers, malformed request lines or headers, 408 timeouts) reach
//   the server's 'clientError' event before Fastify sees a request: `clientErrorHandler` writes the envelope
//   with X-Service-Request-Id on the raw socket.
// - Fastify's router errors (FST_ERR_BAD_URL: malformed percent-encoding) go to `frameworkErrors`.
// - A body over the limit is drained before the 413 is written, so the client reads the answer instead of a
//   reset connection (a socket closed with unread bytes in its receive buffer sends RST).
// - Parsed JSON bodies are walked once, iteratively: nesting deeper than MAX_JSON_DEPTH (JSON.stringify, zod,
//   hashing and logging are recursive: 5,000 levels overflowed the stack), a NUL character or a lone
//   surrogate in a string or key (PostgreSQL text and jsonb refuse both) are 422 VALIDATION_ERROR with the path.
//   The same rule holds for query strings (a %00 there would reach a WHERE clause).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { CoreError, type ErrorCode } from "@cua/base/errors";
import { newRequestId } from "@cua/base/ids";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { renderError } from "./render-error.ts";

/** Deepest accepted nesting of a JSON body (workflow definitions nest 8 levels; nothing legitimate nears 64). */
export const MAX_JSON_DEPTH = 64;

const pathOf = (parts: readonly (string | number)[]) => ["body", ...parts.map(String)].join(".");

/**
 * One iterative walk over a parsed JSON body. `checkStrings` is false when the raw text holds no `\u` escape:
 * a NUL or a lone surrogate can only arrive escaped (raw control bytes are invalid JSON, and invalid UTF-8 is
 * decoded as U+FFFD), so the common body skips the string scans.
 */
export function inspectJson(value: unknown, checkStrings: boolean): CoreError | null {
  if (value === null || typeof value !== "object") {
    return checkStrings && typeof value === "string" ? stringProblem(value, []) : null;
  }
  const stack: { v: object; path: (string | number)[] }[] = [{ v: value as object, path: [] }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (path.length >= MAX_JSON_DEPTH) {
      const shown = pathOf(path.slice(0, 8));
      return new CoreError("VALIDATION_ERROR", `${shown}...: nesting deeper than ${MAX_JSON_DEPTH} levels`, {
        details: [{ path: shown, message: `JSON nesting deeper than ${MAX_JSON_DEPTH} levels is refused` }],
      });
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        const x = v[i];
        if (x !== null && typeof x === "object") stack.push({ v: x, path: [...path, i] });
        else if (checkStrings && typeof x === "string") {
          const p = stringProblem(x, [...path, i]);
          if (p) return p;
        }
      }
      continue;
    }
    for (const k of Object.keys(v)) {
      if (checkStrings) {
        const p = stringProblem(k, path, true);
        if (p) return p;
      }
      const x = (v as Record<string, unknown>)[k];
      if (x !== null && typeof x === "object") stack.push({ v: x, path: [...path, k] });
      else if (checkStrings && typeof x === "string") {
        const p = stringProblem(x, [...path, k]);
        if (p) return p;
      }
    }
  }
  return null;
}

function stringProblem(s: string, path: (string | number)[], isKey = false, location = "body"): CoreError | null {
  let message: string | null = null;
  if (s.includes("\u0000")) message = "must not contain the NUL character (\\u0000)";
  else if (!(s as string & { isWellFormed(): boolean }).isWellFormed())
    message = "must be valid Unicode (a lone surrogate \\ud800-\\udfff was sent)";
  if (!message) return null;
  const p = [location, ...path.map(String)].join(".");
  const what = isKey ? `a field name ${message}` : message;
  return new CoreError("VALIDATION_ERROR", `${p}: ${what}`, { details: [{ path: p, message: what }] });
}

/** 422 when a query value (or name) carries a NUL or a lone surrogate; null otherwise. */
export function inspectQuery(query: unknown): CoreError | null {
  if (!query || typeof query !== "object") return null;
  for (const [k, v] of Object.entries(query as Record<string, unknown>)) {
    const values = Array.isArray(v) ? v : [v];
    const p = stringProblem(k, [k], true, "query");
    if (p) return p;
    for (const x of values) {
      if (typeof x !== "string") continue;
      const q = stringProblem(x, [k], false, "query");
      if (q) return q;
    }
  }
  return null;
}

// --- 413: read the rest of the body before answering ---------------------------------------------------

/** At most this many further bytes (or this long) are read and dropped before a 413 is written. */
const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
const DRAIN_MAX_MS = 10_000;

export function drainRequest(raw: IncomingMessage): Promise<void> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.off("data", onData);
      raw.off("end", finish);
      raw.off("error", finish);
      raw.off("close", finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > DRAIN_MAX_BYTES) finish();
    };
    const timer = setTimeout(finish, DRAIN_MAX_MS);
    raw.on("data", onData);
    raw.on("end", finish);
    raw.on("error", finish);
    raw.on("close", finish);
    raw.resume();
  });
}

// --- errors raised before a request exists --------------------------------------------------------------

const CLIENT_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    code: "HEADERS_TOO_LARGE",
    message: "The request line and headers exceed the server's limit (16 KiB).",
  },
  ERR_HTTP_REQUEST_TIMEOUT: { code: "REQUEST_TIMEOUT", message: "The request was not received in time." },
  ERR_HTTP_HEADERS_TIMEOUT: { code: "REQUEST_TIMEOUT", message: "The request headers were not received in time." },
};

const answered = new WeakSet<Socket>();

/** Fastify's `clientErrorHandler`: the envelope on the raw socket (no request object exists yet). */
export function clientErrorHandler(deps: AppDeps) {
  return (err: NodeJS.ErrnoException, socket: Socket) => {
    if (answered.has(socket)) return; // the parser reports every further chunk of a refused request again
    answered.add(socket);
    if (err.code === "ECONNRESET" || socket.destroyed) return;
    const known = err.code ? CLIENT_ERRORS[err.code] : undefined;
    const ce = new CoreError(
      known?.code ?? "MALFORMED_REQUEST",
      known?.message ?? `The HTTP request could not be parsed (${err.code ?? "parse error"}).`,
    );
    const id = newRequestId();
    const r = renderError(ce, id, socketBaseUrl(deps, socket));
    const body = JSON.stringify(r.body);
    const headers: Record<string, string> = {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Length": String(Buffer.byteLength(body)),
      "X-Service-Request-Id": id,
      Connection: "close",
      ...r.headers,
    };
    if (socket.writable) {
      const head = Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      socket.write(`HTTP/1.1 ${r.status} ${statusText(r.status)}\r\n${head}\r\n${body}`);
    }
    // half-close and keep reading what the client is still sending, so closing does not reset the connection
    // before it reads the answer (the server sockets are allowHalfOpen); give up after 5 s
    socket.end();
    socket.resume();
    socket.once("end", () => socket.destroy());
    setTimeout(() => socket.destroy(), 5000).unref();
  };
}

function socketBaseUrl(deps: AppDeps, socket: Socket): string {
  if (deps.env.PUBLIC_BASE_URL) return deps.env.PUBLIC_BASE_URL.replace(/\/$/, "");
  const host = socket.localAddress ?? "127.0.0.1";
  return `http://${host.includes(":") ? `[${host}]` : host}:${socket.localPort ?? deps.env.PORT}`;
}

function statusText(status: number): string {
  return (
    { 400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large", 431: "Request Header Fields Too Large" }[
      status
    ] ?? "Error"
  );
}

/** Fastify's `frameworkErrors` (router-level errors such as FST_ERR_BAD_URL), rendered as envelopes. */
export function frameworkErrors(send: (req: FastifyRequest, reply: FastifyReply, err: CoreError) => unknown) {
  return (err: Error & { code?: string }, req: FastifyRequest, reply: FastifyReply) => {
    reply.header("X-Service-Request-Id", String(req.id));
    const ce =
      err.code === "FST_ERR_BAD_URL"
        ? new CoreError("MALFORMED_REQUEST", "The URL holds malformed percent-encoding.")
        : err.code === "FST_ERR_MAX_PARAM_LENGTH"
          ? new CoreError("NOT_FOUND", "No such resource (a path segment is too long).")
          : new CoreError("MALFORMED_REQUEST", "The request could not be routed.");
    return send(req, reply, ce);
  };
}

/**
 * Two more answers Node's HTTP server would write itself, without the envelope: 417 for an `Expect` other than
 * 100-continue (the expectation is ignored instead, as RFC 9110 allows) and 400 for an HTTP/1.1 request without
 * Host (the server runs with `requireHostHeader: false`; this hook answers 400 MALFORMED_REQUEST instead).
 */
export function installTransportGuards(
  app: FastifyInstance,
  send: (req: FastifyRequest, reply: FastifyReply, err: CoreError) => unknown,
): void {
  app.server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => app.routing(req, res));
  app.addHook("onRequest", async (req, reply) => {
    if (req.raw.httpVersion === "1.1" && req.headers.host === undefined) {
      reply.header("X-Service-Request-Id", String(req.id));
      return send(req, reply, new CoreError("MALFORMED_REQUEST", "An HTTP/1.1 request must carry a Host header."));
    }
  });
}
