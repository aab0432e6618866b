// The tool call path. A tool with a REST route runs exactly that route: the arguments become the request
// (path parameters into the path; the rest into the query for GET/DELETE, else the JSON body) and the
// caller's own credential goes with it, so authentication, rate limit, scope, test mode, validation,
// idempotency, billing, usage records and the error envelope are the route's own (docs/mcp.md "Why tools
// run the REST route"). The answer becomes the tool result: the JSON body as structuredContent and as
// text, every base64 image in it (a screenshot) as image content, and an error status as isError with the
// envelope. A definition without a REST route (the public discovery operations) runs its handler here.
import { randomBytes } from "node:crypto";
import type { CoreError } from "@cua/base/errors";
import { detailsError, requestValidationError, type Where } from "@cua/base/validation";
import { pathParams } from "@cua/core/operations/define";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { toCoreError } from "../http/render-error.ts";
import type { McpOperation } from "./operations.ts";

export interface RestRequest {
  method: string;
  /** "/v1/machines/mch_test_1/start?x=1" */
  url: string;
  body?: unknown;
  /** the call's Idempotency-Key (from the tools/call request's `_meta["svc/idempotency_key"]`) */
  idempotencyKey?: string;
}

/** `_meta` key of a tools/call request that carries an Idempotency-Key for the REST request (docs/mcp.md). */
export const IDEMPOTENCY_META = "svc/idempotency_key";

export interface RestAnswer {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  /** raw body bytes */
  body: Buffer;
}

/** Sends one request to the service's REST API with the MCP caller's credential. */
export type RestForward = (req: RestRequest) => Promise<RestAnswer>;

/** Renders a CoreError as the SPEC envelope (the API's renderer, passed in so both transports share it). */
export type RenderEnvelope = (err: CoreError) => { status: number; body: unknown };

function queryOf(args: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, typeof x === "object" ? JSON.stringify(x) : String(x));
    else q.append(k, typeof v === "object" ? JSON.stringify(v) : String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The REST request a tool call stands for. A missing path parameter cannot reach the route: the arguments
 * are then validated here by the operation's own schema and the one mapper (path.id, body.x), as the route
 * would have answered. */
export function restRequestOf(op: McpOperation, args: Record<string, unknown> | undefined): RestRequest {
  if (!op.path) throw new Error(`${op.id} has no REST route`);
  const rest: Record<string, unknown> = { ...(args ?? {}) };
  let path: string = op.path;
  const params = pathParams(op.path);
  const where: Where = {
    default: op.method === "GET" || op.method === "DELETE" ? "query" : "body",
    pathParams: params,
  };
  for (const p of params) {
    const v = rest[p];
    delete rest[p];
    if (typeof v !== "string" && typeof v !== "number") {
      const r = op.input.safeParse(args ?? {});
      if (!r.success) throw requestValidationError(r.error.issues, where);
      throw detailsError([{ path: `path.${p}`, message: "Required" }]);
    }
    path = path.replace(`{${p}}`, encodeURIComponent(String(v)));
  }
  const url = `/v1${path}`;
  if (op.method === "GET" || op.method === "DELETE") return { method: op.method, url: url + queryOf(rest) };
  const bodiless = op.input instanceof z.ZodVoid && Object.keys(rest).length === 0;
  return bodiless ? { method: op.method, url } : { method: op.method, url, body: rest };
}

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
const JPEG = Buffer.from([0xff, 0xd8, 0xff]);
const IMAGE_KEYS = new Set(["screenshot", "image_b64", "image"]);

/** The image type of a base64 string (PNG or JPEG, optionally a data URI), else null. */
function imageOf(v: string): { data: string; mimeType: string } | null {
  if (v.length < 64) return null;
  const m = /^data:(image\/(?:png|jpeg));base64,(.*)$/s.exec(v);
  const data = m ? m[2]! : v;
  const head = Buffer.from(data.slice(0, 16), "base64");
  if (head.subarray(0, 4).equals(PNG)) return { data, mimeType: "image/png" };
  if (head.subarray(0, 3).equals(JPEG)) return { data, mimeType: "image/jpeg" };
  return null;
}

/** Every base64 image under an image-named key (depth-first, top first); the text copy names them instead. */
function extractImages(body: unknown): { images: { data: string; mimeType: string }[]; text: unknown } {
  const images: { data: string; mimeType: string }[] = [];
  const walk = (v: unknown, depth: number): unknown => {
    if (depth > 6 || v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const img = IMAGE_KEYS.has(k) && typeof x === "string" ? imageOf(x) : null;
      if (img) {
        images.push(img);
        out[k] = `<${img.mimeType}, ${Math.floor((img.data.length * 3) / 4)} bytes: image content #${images.length}>`;
      } else out[k] = walk(x, depth + 1);
    }
    return out;
  };
  return { images, text: walk(body, 0) };
}

function header(h: RestAnswer["headers"], name: string): string | undefined {
  const v = h[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v === undefined ? undefined : String(v);
}

/** A REST answer as a tool result. */
export function toolResultOf(ans: RestAnswer): CallToolResult {
  const ctype = header(ans.headers, "content-type") ?? "";
  const meta: Record<string, unknown> = { "svc/http_status": ans.status };
  for (const h of [
    "x-service-request-id",
    "x-credits-charged",
    "x-service-key-kind",
    "x-service-test-mode",
    "x-service-idempotent-replay",
  ]) {
    const v = header(ans.headers, h);
    if (v !== undefined) meta[`svc/${h}`] = v;
  }
  const isError = ans.status >= 400;
  if (ctype.startsWith("image/")) {
    return {
      content: [{ type: "image", data: ans.body.toString("base64"), mimeType: ctype.split(";")[0]! }],
      _meta: meta,
      ...(isError ? { isError } : {}),
    };
  }
  const text = ans.body.toString("utf8");
  let json: unknown;
  try {
    json = text.length ? JSON.parse(text) : {};
  } catch {
    return { content: [{ type: "text", text }], _meta: meta, ...(isError ? { isError } : {}) };
  }
  const structured = json !== null && typeof json === "object" && !Array.isArray(json) ? json : { result: json };
  const { images, text: shown } = extractImages(structured);
  return {
    content: [
      { type: "text", text: JSON.stringify(shown) },
      ...images.map((i) => ({ type: "image" as const, data: i.data, mimeType: i.mimeType })),
    ],
    structuredContent: structured as Record<string, unknown>,
    _meta: meta,
    ...(isError ? { isError } : {}),
  };
}

/** An error raised before any REST call (a missing path parameter, a discovery input) as a tool result. */
export function errorResult(err: CoreError, render: RenderEnvelope): CallToolResult {
  const r = render(err);
  return {
    content: [{ type: "text", text: JSON.stringify(r.body) }],
    structuredContent: r.body as Record<string, unknown>,
    _meta: { "svc/http_status": r.status },
    isError: true,
  };
}

/** A request id for answers that never reach the REST API (same form as the API's: req_<24 hex>). */
export function localRequestId(): string {
  return `req_${randomBytes(12).toString("hex")}`;
}

/** Validation of a discovery operation's input by the API's one zod mapper (paths "body.x", as /v1). */
export function validateLocal(op: McpOperation, args: unknown): unknown {
  const r = op.input.safeParse(args ?? {});
  if (r.success) return r.data;
  throw toCoreError(r.error, "body");
}
