// The /v1 REST facade: every JSON operation of core's registry (packages/core/src/operations/registry.ts)
// compiled into a plain Fastify route, once, at start. Nothing about an operation is written here; a route is
// its definition's method and path, its credential rule (auth, scope, idempotency class), its input schema
// (zod 4 compiles object parsers on first use) and its /v1 output schema, around one `runOperation` call.
//
// Per request: [SSE branch] -> 415 for a non-JSON body -> API key chain (401 -> 429 -> 403 -> Idempotency-Key
// format, ./v1-auth.ts) -> input validation (422 paths body.x / query.x / path.id from the one mapper) ->
// runOperation (idempotency, handler, success status) -> output validation (strips what the schema does not
// name) -> request_id -> JSON. Errors are the envelope from core's table (./render-error.ts).
//
// What the route takes from the request is what trpc-to-openapi 3.3 took when it served /v1 (its
// adapters/node-http/core.ts), kept so that no answer changes:
// - POST/PUT/PATCH: `{...body, ...path params}`; GET/DELETE: `{...query, ...path params}`, where a query value
//   given once is a string, repeated an array, and empty ones are dropped; no input at all for a void schema.
// - Query values are strings: number/boolean/bigint/date fields of a query input are converted the way
//   zod's `coerce` does, and a single value of an array field becomes a one-element array. Bodies are never
//   coerced (`max_actions: "3"` is 422).
// - Path parameters are the raw (still percent-encoded) segments of the URL.
// - Paths that differ only by letter case or a trailing slash reach the operation (the catch-all route below);
//   HEAD on /v1 answers 204; any other /v1 path is 404 NOT_FOUND "No such route.".
import { CoreError } from "@cua/base/errors";
import { requestValidationError, type Where } from "@cua/base/validation";
import { apiKeyCaller } from "@cua/core/operations/caller";
import { type AnyOperation, pathParams, servedByRouter } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { AppDeps } from "../app-deps.ts";
import { baseUrlOf, type Ctx, responseStateOf, whereOf } from "../trpc/context.ts";
import { endpointOf, runOperation, v1Output } from "../trpc/operations.ts";
import { ReplayedResponse, renderError, toCoreError } from "./render-error.ts";
import { serveSseAnswer } from "./sse-predict.ts";
import { authorizeKey, type KeyRule } from "./v1-auth.ts";

type Coerce = "number" | "boolean" | "bigint" | "date";

export interface CompiledOperation {
  op: AnyOperation;
  /** "METHOD /v1/path/{param}": usage records and idempotency */
  endpoint: string;
  /** Fastify's form of the path: /v1/machines/:id/start */
  url: string;
  /** path parameter names, and the index of each one's segment in the URL path split by "/" */
  params: string[];
  segments: number[];
  /** the path, case-insensitive, for the catch-all route (trailing slash and letter case differences) */
  re: RegExp;
  where: Where;
  /** input from the JSON body (POST/PUT/PATCH), else from the query string */
  body: boolean;
  voidInput: boolean;
  /** query fields converted from strings (zod's coerce rules), and array fields */
  coerce: [string, Coerce, boolean][];
  arrays: string[];
  input: z.ZodType;
  output: z.ZodType;
  /** null: a public operation (no key) */
  rule: KeyRule | null;
  /** answers `Accept: text/event-stream` with keepalives then the result (./sse-predict.ts) */
  sse: boolean;
  /** the output schema names request_id (v1Output): a validated object lists it last, else first */
  requestIdLast: boolean;
  /** the handler's last frozen answer, validated and serialised (see staticAnswer) */
  constant?: { src: object; json: string };
}

const kindOf = (t: unknown): string | undefined => (t as { _zod?: { def?: { type?: string } } })?._zod?.def?.type;
const defOf = (t: unknown) => (t as { _zod: { def: Record<string, any> } })._zod.def;

/** trpc-to-openapi's unwrapping: the schema under optional/nullable/default/prefault/lazy (and pipes). */
function unwrap(t: z.ZodType, pipes: boolean): { inner: z.ZodType; array: boolean } {
  let cur = t;
  let array = false;
  for (let i = 0; i < 32; i++) {
    const k = kindOf(cur);
    const d = k ? defOf(cur) : undefined;
    if (k === "array") {
      array = true;
      cur = d!.element;
    } else if (k === "optional" || k === "nullable" || k === "default" || k === "prefault") cur = d!.innerType;
    else if (k === "lazy") cur = d!.getter();
    else if (k === "pipe" && pipes) cur = kindOf(d!.out) === "transform" ? d!.in : d!.out;
    else break;
  }
  return { inner: cur, array };
}

function compile(op: AnyOperation): CompiledOperation {
  const path = op.path!;
  const params = pathParams(path);
  const parts = `/v1${path}`.split("/");
  const body = op.method !== "GET" && op.method !== "DELETE";
  const top = unwrap(op.input, true).inner;
  const topKind = kindOf(top);
  const coerce: [string, Coerce, boolean][] = [];
  const arrays: string[] = [];
  if (!body && topKind === "object") {
    for (const [name, field] of Object.entries(defOf(top).shape as Record<string, z.ZodType>)) {
      const fk = kindOf(field);
      if (fk === "array" || (fk === "optional" && kindOf(defOf(field).innerType) === "array")) arrays.push(name);
      const { inner, array } = unwrap(field, false);
      const ik = kindOf(inner);
      if (ik === "number" || ik === "boolean" || ik === "bigint" || ik === "date") coerce.push([name, ik, array]);
    }
  }
  const dflt = body ? "body" : "query";
  const output = v1Output(op.output);
  return {
    op,
    endpoint: endpointOf(op),
    url: parts.map((p) => p.replace(/^\{(.+)\}$/, ":$1")).join("/"),
    params,
    segments: params.map((p) => parts.indexOf(`{${p}}`)),
    re: new RegExp(`^${path.replace(/\{(.+?)\}/g, (_, k) => `(?<${k}>[^/]+)`)}$`, "i"),
    where: params.length ? { default: dflt, pathParams: params } : dflt,
    body,
    voidInput: topKind === "void" || topKind === "undefined" || topKind === "never",
    coerce,
    arrays,
    input: op.input,
    output,
    rule:
      op.auth === "public"
        ? null
        : {
            ...(op.scope ? { scope: op.scope } : {}),
            idempotent: op.idempotency !== "none",
            idempotencyRequired: op.idempotency === "required-per-account",
          },
    sse: op.method === "POST" && Boolean(op.alsoServes?.includes("text/event-stream")),
    requestIdLast: output instanceof z.ZodObject && "request_id" in output.shape,
  };
}

/** Every JSON operation with a /v1 route, compiled, in the registry's order. */
export const v1Operations: readonly CompiledOperation[] = (operations as unknown as readonly AnyOperation[])
  .filter(servedByRouter)
  .map(compile);
const byId = new Map(v1Operations.map((c) => [c.op.id, c]));

/** zod's coerce, applied to a query string value before the schema sees it. */
function coerced(v: unknown, to: Coerce): unknown {
  try {
    if (to === "number") return Number(v);
    if (to === "boolean") return Boolean(v);
    if (to === "bigint") return BigInt(v as string);
    return new Date(v as string);
  } catch {
    return v;
  }
}

function queryInput(c: CompiledOperation, query: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (query && typeof query === "object") {
    for (const key of Object.keys(query)) {
      const v = (query as Record<string, unknown>)[key];
      if (v) out[key] = Array.isArray(v) && v.length === 1 ? v[0] : v;
    }
  }
  for (const key of c.arrays) if (out[key] !== undefined && !Array.isArray(out[key])) out[key] = [out[key]];
  for (const [key, to, array] of c.coerce) {
    const v = out[key];
    if (v === undefined) continue;
    out[key] = array && Array.isArray(v) ? v.map((x) => coerced(x, to)) : coerced(v, to);
  }
  return out;
}

// A path the WHATWG URL parser leaves as it is: printable ASCII without " # < > ? ` { } \ (which it would
// percent-encode or turn into "/"), and no "." or ".." segment (also spelled %2e), which it would resolve.
const URL_CLEAN = /^[\x21\x24-\x3b\x3d\x40-\x5b\x5d-\x5f\x61-\x7a\x7c\x7e]*$/;
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:\/|$)/i;

/** The raw path parameters of a request matched by the operation's own route; null when the path needs the
 * URL parser's normalisation or a parameter is empty (then the catch-all's matching decides, as before). */
function routeParams(c: CompiledOperation, url: string): Record<string, string> | null {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  if (!URL_CLEAN.test(path) || DOT_SEGMENT.test(path)) return null;
  const out: Record<string, string> = {};
  if (c.params.length === 0) return out;
  const parts = path.split("/");
  for (let i = 0; i < c.params.length; i++) {
    const v = parts[c.segments[i]!];
    if (!v) return null;
    out[c.params[i]!] = v;
  }
  return out;
}

function rawInput(c: CompiledOperation, req: FastifyRequest, params: Record<string, string>): unknown {
  if (c.voidInput) return undefined;
  // spread, not assignment: a body's own "__proto__" field stays a field (and is refused as unknown)
  return c.body ? { ...(req.body as object), ...params } : { ...queryInput(c, req.query), ...params };
}

/** zod's synchronous parse, or its async one when the schema has async refinements. */
async function safeParse(schema: z.ZodType, value: unknown) {
  try {
    return schema.safeParse(value);
  } catch (e) {
    if (e instanceof z.core.$ZodAsyncError) return schema.safeParseAsync(value);
    throw e;
  }
}

/** A request context for an operation (also for the plain routes that run one: ./machines-plain-routes.ts). */
export function operationCtx(deps: AppDeps, req: FastifyRequest, c: CompiledOperation): Ctx {
  const ctx: Ctx = {
    deps,
    req,
    requestId: String(req.id),
    transport: "rest",
    res: responseStateOf(req),
    endpoint: c.endpoint,
    pathParams: c.params,
  };
  req.svcCtx = ctx;
  return ctx;
}

/** A /v1 answer already serialised: the body text, sent as it is (a constant's, see staticAnswer). */
class JsonText {
  constructor(readonly text: string) {}
}

async function validOutput(c: CompiledOperation, answer: unknown): Promise<unknown> {
  const out = await safeParse(c.output, answer);
  if (!out.success) {
    throw Object.assign(new Error(`the answer of ${c.op.id} does not match its output schema`), {
      cause: out.error,
    });
  }
  return out.data;
}

/**
 * A handler's frozen answer (a constant: GET /v1/models' catalog) is validated and serialised once, not per
 * call (issue 16: its output parse and JSON.stringify were a seventh of the route's profile); each call only
 * adds its request_id to the text, where the validated object would have it (last when the output schema
 * names it, else first), so the body is byte for byte what the per-call path answers. Frozen means nothing
 * can change it after it was checked; another frozen object replaces the kept one.
 */
async function staticAnswer(c: CompiledOperation, answer: object, requestId: string): Promise<JsonText | unknown> {
  let k = c.constant;
  if (k?.src !== answer) {
    const data = await validOutput(c, answer);
    if (!data || typeof data !== "object" || Array.isArray(data) || Object.hasOwn(data, "request_id")) return data;
    k = { src: answer, json: JSON.stringify(data) };
    c.constant = k;
  }
  const id = `"request_id":${JSON.stringify(requestId)}`;
  const empty = k.json === "{}";
  return new JsonText(
    c.requestIdLast ? `${k.json.slice(0, -1)}${empty ? "" : ","}${id}}` : `{${id}${empty ? "" : ","}${k.json.slice(1)}`,
  );
}

/** The chain after the transport: credential, input, the operation, its output. Throws what it refuses.
 * `text`: a constant answer may come back already serialised (JsonText). */
async function execute(c: CompiledOperation, ctx: Ctx, raw: unknown, text = false): Promise<unknown> {
  const caller = c.rule ? apiKeyCaller(await authorizeKey(ctx, c.rule)) : null;
  const input = await safeParse(c.input, raw);
  if (!input.success) throw requestValidationError(input.error.issues as never, c.where);
  const answer = await runOperation(c.op, ctx, caller, input.data);
  if (text && c.op.idempotency === "none" && answer && typeof answer === "object" && Object.isFrozen(answer)) {
    const r = await staticAnswer(c, answer, ctx.requestId);
    if (r instanceof JsonText) return r;
  }
  const data = await validOutput(c, answer);
  // DECISIONS.md "Compatibility amendments": a /v1 JSON object body carries request_id (a replay keeps its own)
  if (data && typeof data === "object" && !Array.isArray(data) && !Object.hasOwn(data, "request_id"))
    return { request_id: ctx.requestId, ...(data as Record<string, unknown>) };
  return data;
}

/**
 * Runs a /v1 operation for a plain route that serves it another way (an image, an event stream's 404 and
 * auth): the same chain as its route; the ctx's endpoint becomes the operation's.
 */
export function callOperation(ctx: Ctx, id: string, input: unknown): Promise<unknown> {
  const c = byId.get(id);
  if (!c) throw new Error(`no /v1 operation ${id}`);
  ctx.endpoint = c.endpoint;
  ctx.pathParams = c.params;
  return execute(c, ctx, input);
}

const JSON_TYPE = "application/json";

function sendJson(reply: FastifyReply, status: number, headers: Record<string, string>, body: unknown) {
  return reply
    .code(status)
    .headers(headers)
    .header("content-type", JSON_TYPE)
    .send(body === undefined ? undefined : body instanceof JsonText ? body.text : JSON.stringify(body));
}

/** An operation's error as the envelope, with the headers the request earned (rate limit, key kind...). */
export function sendOperationError(ctx: Ctx, reply: FastifyReply, e: unknown) {
  if (e instanceof ReplayedResponse) {
    const b = e.body as { error?: unknown } | null;
    const body = b && typeof b === "object" && b.error && typeof b.error === "object" ? { error: b.error } : b;
    return sendJson(reply, e.status, { ...ctx.res.headers, ...e.headers, "X-Service-Idempotent-Replay": "true" }, body);
  }
  const ce = toCoreError(e, whereOf(ctx));
  if (ce.code === "INTERNAL_ERROR")
    ctx.req.log.error({ err: (ce as { original?: unknown }).original ?? e, reqId: ctx.requestId }, "internal error");
  const r = renderError(ce, ctx.requestId, baseUrlOf(ctx));
  return sendJson(reply, r.status, { ...ctx.res.headers, ...r.headers }, r.body);
}

/** An error before an operation's context exists (no such route, not JSON). */
function sendBareError(deps: AppDeps, req: FastifyRequest, reply: FastifyReply, ce: CoreError) {
  const r = renderError(ce, String(req.id), baseUrlOf({ deps, req }));
  return sendJson(reply, r.status, r.headers, r.body);
}

async function serve(
  deps: AppDeps,
  c: CompiledOperation,
  req: FastifyRequest,
  reply: FastifyReply,
  params: Record<string, string>,
) {
  if (c.sse && (req.headers.accept ?? "").includes("text/event-stream")) {
    const ctx = operationCtx(deps, req, c);
    return serveSseAnswer(deps, req, reply, ctx, () => execute(c, ctx, rawInput(c, req, params)));
  }
  if (c.body) {
    const type = req.headers["content-type"];
    if (!type?.startsWith(JSON_TYPE)) {
      const message = type ? `Unsupported content-type "${type}` : "Missing content-type header";
      return sendBareError(deps, req, reply, new CoreError("UNSUPPORTED_MEDIA_TYPE", message));
    }
  }
  const ctx = operationCtx(deps, req, c);
  try {
    const out = await execute(c, ctx, rawInput(c, req, params), true);
    return sendJson(reply, ctx.res.status ?? 200, ctx.res.headers, out);
  } catch (e) {
    return sendOperationError(ctx, reply, e);
  }
}

const V1_METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE"] as const;

/**
 * Registers one route per compiled operation, plus the /v1 catch-all. `servedElsewhere`: operations whose
 * method and path a plain route registers itself because it serves another representation too (the
 * screenshot's `Accept: image/png`); that route runs the operation through `callOperation`.
 */
export function registerV1Routes(
  app: FastifyInstance,
  deps: AppDeps,
  opts: { servedElsewhere?: (op: AnyOperation) => boolean } = {},
): void {
  // trpc-to-openapi's matching: the URL parser's path (dot segments resolved, some characters encoded), one
  // slash trimmed at each end, then the first operation of the method whose path matches, ignoring case
  const matchAny = (req: FastifyRequest, reply: FastifyReply) => {
    const rest = req.url.replace("/v1", "");
    const path = `/${new URL(`http://127.0.0.1${rest}`).pathname.replace(/^\/|\/$/g, "")}`;
    for (const c of v1Operations) {
      if (c.op.method !== req.method) continue;
      const m = c.re.exec(path);
      if (m) return serve(deps, c, req, reply, { ...m.groups });
    }
    return sendBareError(deps, req, reply, new CoreError("NOT_FOUND", "No such route."));
  };
  for (const c of v1Operations) {
    if (opts.servedElsewhere?.(c.op)) continue;
    app.route({
      method: c.op.method,
      url: c.url,
      exposeHeadRoute: false,
      handler: (req, reply) => {
        const params = routeParams(c, req.url);
        return params ? serve(deps, c, req, reply, params) : matchAny(req, reply);
      },
    });
  }
  app.route({ method: [...V1_METHODS], url: "/v1/*", exposeHeadRoute: false, handler: matchAny });
  // trpc-to-openapi answered HEAD on any /v1 path with an empty 204 (a warm-up probe)
  app.head("/v1/*", (_req, reply) => reply.code(204).header("content-type", JSON_TYPE).send());
}
