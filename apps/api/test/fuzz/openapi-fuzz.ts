// A fast-check fuzzer over every operation of a running service's /openapi.json (issue 10, failure 3):
// it walks the document (each path, method, parameter and JSON request body schema) and generates malformed
// and hostile requests: wrong types, deep nesting, huge strings, NUL bytes and lone surrogates, unicode,
// bad ids, bad or oversized headers, malformed JSON, missing and extra fields. `judge` names what is wrong
// with an answer: any 5xx, any error answer outside the SPEC envelope, a missing X-Service-Request-Id, or
// no answer at all. Used by apps/api/test/fuzz.test.ts (a fixed seed, CI-sized) and bench/fuzz.ts (bigger).
import http from "node:http";
import zlib from "node:zlib";
import fc from "fast-check";

type Json = any;

export interface Param {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Json;
}

export interface Operation {
  method: string;
  /** full path template, e.g. /v1/machines/{id} */
  path: string;
  params: Param[];
  body: Json | null;
  bodyRequired: boolean;
}

/** Every operation of an OpenAPI 3.1 document; paths are prefixed with the first server's path (/v1). */
export function operationsOf(doc: Json): Operation[] {
  const prefix = doc.servers?.[0]?.url ? new URL(doc.servers[0].url, "http://x").pathname.replace(/\/$/, "") : "";
  const ops: Operation[] = [];
  for (const [p, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((x: Json) => resolve(doc, x));
      const content = resolve(doc, op.requestBody ?? {})?.content ?? {};
      const json = content["application/json"]?.schema;
      ops.push({
        method: method.toUpperCase(),
        path: prefix + p,
        params: params.map((x: Json) => ({ name: x.name, in: x.in, required: !!x.required, schema: x.schema ?? {} })),
        body: json ? inline(doc, json, 0) : null,
        bodyRequired: !!op.requestBody?.required,
      });
    }
  }
  return ops;
}

function resolve(doc: Json, x: Json): Json {
  let v = x;
  for (let i = 0; i < 10 && v && typeof v === "object" && typeof v.$ref === "string"; i++) {
    v = v.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((o: Json, k: string) => o?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
  }
  return v;
}

/** The schema with $refs inlined (to a bounded depth: recursive schemas end in {}). */
function inline(doc: Json, s: Json, depth: number): Json {
  if (depth > 12 || !s || typeof s !== "object") return {};
  if (Array.isArray(s)) return s.map((x) => inline(doc, x, depth + 1));
  const r = resolve(doc, s);
  if (!r || typeof r !== "object") return {};
  const out: Json = {};
  for (const [k, v] of Object.entries(r)) {
    out[k] =
      k === "enum" || k === "const" || k === "default" || k === "examples" || k === "example"
        ? v
        : v && typeof v === "object"
          ? inline(doc, v, depth + 1)
          : v;
  }
  return out;
}

// --- values ------------------------------------------------------------------------------------------

/** JSON text inserted verbatim into a body (deep nesting is built as text: JSON.stringify would overflow). */
export class RawJson {
  constructor(readonly text: string) {}
}

export function toJsonText(v: unknown): string {
  if (v instanceof RawJson) return v.text;
  if (Array.isArray(v)) return `[${v.map(toJsonText).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}:${toJsonText(x)}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

const deepText = (n: number, kind: "obj" | "arr") =>
  kind === "obj" ? `${'{"a":'.repeat(n)}1${"}".repeat(n)}` : `${"[".repeat(n)}${"]".repeat(n)}`;

/** `arb` once in `n` samples, else undefined. */
const rarely = <T>(arb: fc.Arbitrary<T>, n: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: n - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });

/** Strings a careless service would choke on. */
const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string().map((s) => `${s}\u0000${s}`),
  fc.constantFrom(
    "\ud800",
    "a\udc00b",
    "😀",
    "\u202eevil",
    "\ufeff",
    "\uffff",
    "Ω≈ç√∫˜µ≤≥÷",
    "𝕳𝖊𝖑𝖑𝖔",
    "' OR 1=1 --",
    "$" + "{jndi:ldap://x}",
    "../../../../etc/passwd",
    "<script>alert(1)</script>",
    "%00",
    "\\u0000",
    "null",
    "",
    " ",
    "\r\n\r\n",
    "0",
    "-1",
    "1e309",
    "NaN",
  ),
  fc.string({ unit: "grapheme", maxLength: 30 }),
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.integer({ min: 1000, max: 200_000 }).map((n) => "A".repeat(n)),
);

const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  {
    weight: 3,
    arbitrary: fc.constantFrom(null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 1, [], {}, [null], "3"),
  },
  { weight: 1, arbitrary: fc.integer() },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: 60, max: 6000 }), fc.constantFrom<"obj" | "arr">("obj", "arr"))
      .map(([n, k]) => new RawJson(deepText(n, k))),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      new RawJson('{"__proto__":{"admin":true}}'),
      new RawJson('{"constructor":{"prototype":{"admin":true}}}'),
      new RawJson(`"${"\\u0000".repeat(10)}"`),
      new RawJson('"\\ud83d"'),
    ),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** A plausible value for a JSON schema (the starting point hostile mutations are applied to). */
export function plausibleValue(s: Json, depth = 0): fc.Arbitrary<unknown> {
  if (!s || typeof s !== "object" || depth > 6) return fc.jsonValue({ maxDepth: 1 });
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts) && alts.length) return fc.oneof(...alts.map((a: Json) => plausibleValue(a, depth + 1)));
  if (Array.isArray(s.allOf) && s.allOf.length) return plausibleValue(Object.assign({}, ...s.allOf), depth + 1);
  if (s.const !== undefined) return fc.constant(s.const);
  if (Array.isArray(s.enum) && s.enum.length) return fc.constantFrom(...s.enum);
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "string":
      if (s.format === "uuid") return fc.uuid();
      if (s.format === "date-time") return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (s.format === "uri") return fc.constantFrom("https://example.com/hook", "http://127.0.0.1:1/x");
      return fc.string({ minLength: Math.min(s.minLength ?? 0, 20), maxLength: Math.min(s.maxLength ?? 24, 24) });
    case "integer":
      return fc.integer({ min: s.minimum ?? -10, max: s.maximum ?? 1000 });
    case "number":
      return fc.double({ min: s.minimum ?? -10, max: s.maximum ?? 1000, noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return fc.array(plausibleValue(s.items ?? {}, depth + 1), { maxLength: Math.min(s.maxItems ?? 3, 3) });
    case "object": {
      const props = s.properties ?? {};
      const names = Object.keys(props);
      if (names.length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }));
      const rec: Record<string, fc.Arbitrary<unknown>> = {};
      for (const n of names) rec[n] = plausibleValue(props[n], depth + 1);
      return fc.record(rec, { requiredKeys: (s.required ?? []).filter((r: string) => r in rec) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A body for `schema`: plausible, or plausible with one field made hostile, missing, extra, or all hostile. */
function bodyOf(schema: Json | null): fc.Arbitrary<{ text: string | Buffer | undefined; what: string }> {
  const plausible = schema ? plausibleValue(schema) : fc.constant({});
  const props = Object.keys(schema?.properties ?? {});
  const asText = (what: string) => (v: unknown) => ({ text: toJsonText(v), what });
  const variants: fc.Arbitrary<{ text: string | Buffer | undefined; what: string }>[] = [
    plausible.map(asText("plausible body")),
    fc.tuple(plausible, hostileValue, fc.constantFrom(...(props.length ? props : ["x"]))).map(([v, h, k]) => ({
      text: toJsonText({ ...(v && typeof v === "object" && !Array.isArray(v) ? v : {}), [k]: h }),
      what: `hostile body.${k}`,
    })),
    fc.tuple(plausible, fc.constantFrom(...(schema?.required?.length ? schema.required : ["x"]))).map(([v, k]) => {
      const o = v && typeof v === "object" && !Array.isArray(v) ? { ...(v as object) } : {};
      delete (o as Record<string, unknown>)[k as string];
      return { text: toJsonText(o), what: `missing body.${k}` };
    }),
    fc.tuple(plausible, fc.string({ maxLength: 12 }), hostileValue).map(([v, k, h]) => ({
      text: toJsonText({ ...(v && typeof v === "object" && !Array.isArray(v) ? v : {}), [`x_${k}`]: h }),
      what: "extra field",
    })),
    hostileValue.map(asText("hostile whole body")),
    fc
      .constantFrom<string | Buffer>(
        "{",
        '{"a":',
        "[1,2",
        "nul",
        "{'a':1}",
        '{"a":1}}',
        "\ufeff{}",
        " ".repeat(100_000),
        Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
        Buffer.from('{"s":"\xc3\x28"}', "latin1"),
        '{"a":1,"a":2}',
        "1".repeat(5000),
        `{"n":${"9".repeat(400)}}`,
      )
      .map((text) => ({ text, what: "malformed JSON" })),
    fc.constant({ text: undefined, what: "no body" }),
  ];
  return fc.oneof(...variants);
}

// --- requests ----------------------------------------------------------------------------------------

export interface FuzzContext {
  keys: { live: string; test: string };
  /** real ids to aim at, by path parameter name (id, session_id, key_id...) */
  ids: Record<string, string[]>;
}

export interface FuzzRequest {
  method: string;
  /** the request target: path (already encoded, possibly deliberately badly) and query */
  target: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  op: string;
  what: string[];
}

/** Percent-encodes the UTF-8 bytes of `s` (lone surrogates become U+FFFD, as any client sends them). */
export function pct(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function pathValue(name: string, ctx: FuzzContext): fc.Arbitrary<{ v: string; what: string }> {
  const real = ctx.ids[name] ?? [];
  const enc = (what: string) => (s: string) => ({ v: pct(s), what });
  return fc.oneof(
    {
      weight: real.length ? 4 : 0,
      arbitrary: real.length ? fc.constantFrom(...real).map(enc("real id")) : fc.constant({ v: "x", what: "x" }),
    },
    { weight: 2, arbitrary: fc.uuid().map(enc("random uuid")) },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 1, maxLength: 32 })
        .map((h) => enc("test-shaped id")(`mch_test_${h}`)),
    },
    { weight: 3, arbitrary: hostileString.map((s) => enc("hostile id")(s.slice(0, 3000))) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom("%zz", "%E0%A4%A", "%", "a%2", "%C0%AF", "%ED%A0%80", "%00", "..%2F..", "%2e%2e")
        .map((v) => ({ v, what: "raw percent-encoding" })),
    },
    { weight: 1, arbitrary: fc.integer({ min: 129, max: 9000 }).map((n) => ({ v: "a".repeat(n), what: "long id" })) },
  );
}

function queryOf(params: Param[]): fc.Arbitrary<{ q: string; what: string[] }> {
  const qs = params.filter((p) => p.in === "query");
  const one = (p: Param) =>
    fc.oneof(
      plausibleValue(p.schema).map((v) => ({
        s: `${pct(p.name)}=${pct(String(v))}`,
        w: "",
      })),
      hostileString.map((v) => ({
        s: `${p.name}=${pct(v.slice(0, 2000))}`,
        w: `hostile query.${p.name}`,
      })),
      fc.constantFrom("%zz", "%00", "-1", "0", "201", "1e3", "1.5", "", "%ED%A0%80").map((v) => ({
        s: `${p.name}=${v}`,
        w: `odd query.${p.name}`,
      })),
      fc.constant({ s: `${p.name}=1&${p.name}=2`, w: `repeated query.${p.name}` }),
      fc.constant({ s: "", w: "" }),
    );
  return fc
    .tuple(
      fc.tuple(...qs.map(one)),
      rarely(fc.constantFrom("unknown=1", "__proto__[x]=1", "a[b]=c", "%zz=1", "&&&", "x=%E0%A4%A"), 5),
    )
    .map(([parts, extra]) => {
      const all = [...parts.map((p) => p.s), ...(extra ? [extra] : [])].filter(Boolean);
      return { q: all.length ? `?${all.join("&")}` : "", what: parts.map((p) => p.w).filter(Boolean) };
    });
}

function headersOf(ctx: FuzzContext): fc.Arbitrary<{ h: Record<string, string>; what: string[] }> {
  return fc
    .record({
      key: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom("live", "test", "bearer") },
        { weight: 1, arbitrary: fc.constantFrom("none", "garbage") },
      ),
      idem: fc.oneof(
        { weight: 4, arbitrary: fc.constant(undefined) },
        { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9_:-]{1,40}$/) },
        { weight: 1, arbitrary: fc.constantFrom("a b", "x".repeat(129), "é", "", "a;b") },
      ),
      ctype: fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom("application/json", "application/json; charset=utf-8") },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "application/json; charset=latin1",
            "",
          ),
        },
      ),
      accept: fc.constantFrom(undefined, undefined, "*/*", "text/event-stream", "image/png", "application/xml"),
      llm: rarely(
        fc.record({
          provider: fc.constantFrom("anthropic", "openai", "managed", "nope", ""),
          key: fc.option(fc.constantFrom("sk-bad", "x".repeat(5000)), { nil: undefined }),
        }),
        6,
      ),
      big: rarely(fc.integer({ min: 17_000, max: 40_000 }), 60),
      odd: rarely(fc.constantFrom("Content-Length: 0", "Origin: https://evil.example", "Cookie: session=x"), 10),
    })
    .map((r) => {
      const h: Record<string, string> = {};
      const what: string[] = [];
      if (r.key === "live") h["X-API-Key"] = ctx.keys.live;
      else if (r.key === "test") h["X-API-Key"] = ctx.keys.test;
      else if (r.key === "garbage") h["X-API-Key"] = "sk_live_garbage";
      else if (r.key === "bearer") h.Authorization = `Bearer ${ctx.keys.test}`;
      what.push(`key ${r.key}`);
      if (r.idem !== undefined) {
        h["Idempotency-Key"] = r.idem;
        what.push("idempotency key");
      }
      if (r.ctype) h["Content-Type"] = r.ctype;
      if (r.accept) h.Accept = r.accept;
      if (r.llm) {
        h["X-LLM-Provider"] = r.llm.provider;
        if (r.llm.key) h["X-LLM-Api-Key"] = r.llm.key;
        what.push("llm headers");
      }
      if (r.big) {
        h["X-Padding"] = "p".repeat(r.big);
        what.push("oversized headers");
      }
      if (r.odd) {
        const [k, v] = r.odd.split(": ") as [string, string];
        if (k !== "Content-Length") h[k] = v;
        what.push(r.odd);
      }
      return { h, what };
    });
}

/** Requests for one operation. */
function requestsFor(op: Operation, ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const pathParams = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  return fc
    .record({
      path: fc.tuple(...pathParams.map((n) => pathValue(n, ctx))),
      query: queryOf(op.params),
      headers: headersOf(ctx),
      body:
        op.method === "GET" || op.method === "DELETE" ? fc.constant({ text: undefined, what: "" }) : bodyOf(op.body),
      method: fc.constantFrom(op.method, op.method, op.method, op.method, op.method, op.method, "PUT", "PATCH"),
    })
    .map((r) => {
      let i = 0;
      const path = op.path.replace(/\{[^}]+\}/g, () => r.path[i++]!.v);
      const headers = { ...r.headers.h };
      if (r.body.text === undefined) delete headers["Content-Type"];
      return {
        method: r.method,
        target: path + r.query.q,
        headers,
        body: r.body.text,
        op: `${op.method} ${op.path}`,
        what: [r.body.what, ...r.path.map((p) => p.what), ...r.query.what, ...r.headers.what].filter(Boolean),
      };
    });
}

/** Requests over every operation of the document. */
export function requestArbitrary(ops: Operation[], ctx: FuzzContext): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(...ops.map((op) => requestsFor(op, ctx)));
}

// --- sending and judging -------------------------------------------------------------------------------

export interface Outcome {
  req: FuzzRequest;
  status: number | null;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** the client could not send this request at all (e.g. a header value Node's client refuses) */
  unsendable?: string;
  error?: string;
}

export function send(base: string, req: FuzzRequest, timeoutMs = 15_000): Promise<Outcome> {
  const u = new URL(base);
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Omit<Outcome, "req">) => {
      if (settled) return;
      settled = true;
      resolve({ req, ...o });
    };
    let r: http.ClientRequest;
    try {
      r = http.request(
        {
          host: u.hostname,
          port: u.port,
          method: req.method,
          path: req.target,
          headers: {
            ...req.headers,
            ...(req.body !== undefined ? { "Content-Length": Buffer.byteLength(req.body) } : {}),
          },
          agent: false,
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          const finish = () => {
            let buf = Buffer.concat(chunks);
            try {
              const enc = res.headers["content-encoding"];
              if (enc === "gzip") buf = zlib.gunzipSync(buf);
              else if (enc === "br") buf = zlib.brotliDecompressSync(buf);
              else if (enc === "deflate") buf = zlib.inflateSync(buf);
            } catch {}
            done({ status: res.statusCode ?? null, headers: res.headers, body: buf.toString("utf8") });
          };
          res.on("data", (c) => {
            chunks.push(c);
            // a stream (SSE) answered: its first bytes are enough
            if (String(res.headers["content-type"]).startsWith("text/event-stream")) {
              finish();
              r.destroy();
            }
          });
          res.on("end", finish);
          res.on("error", finish);
        },
      );
    } catch (e) {
      return done({ status: null, headers: {}, body: "", unsendable: (e as Error).message });
    }
    r.on("timeout", () => r.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    r.on("error", (e) => done({ status: null, headers: {}, body: "", error: (e as Error).message }));
    r.end(req.body);
  });
}

const ENVELOPE_KEYS = [
  "code",
  "message",
  "type",
  "request_id",
  "retryable",
  "retry_with_same_idempotency_key",
  "docs_url",
];

/**
 * A 5xx the service's configuration makes the right answer: live machine creation on a service started with
 * MACHINE_PROVIDER=none is 503 UPSTREAM_UNAVAILABLE by design (the fuzz must not start real desktops).
 */
export function designed5xx(o: Outcome): boolean {
  return (
    o.status === 503 &&
    o.body.includes('"code":"UPSTREAM_UNAVAILABLE"') &&
    o.body.includes("runs no managed machine provider")
  );
}

/** What is wrong with an answer (null: nothing). */
export function judge(o: Outcome): string | null {
  if (o.unsendable) return null;
  if (o.status === null) return `no answer (${o.error})`;
  if (o.status >= 500 && !designed5xx(o)) return `${o.status} ${o.body.slice(0, 300)}`;
  const rid = o.headers["x-service-request-id"];
  if (!rid) return `${o.status} without X-Service-Request-Id`;
  if (o.status < 400) {
    if (!String(o.headers["content-type"]).startsWith("application/json")) return null;
    try {
      JSON.parse(o.body);
      return null;
    } catch {
      return `${o.status} says JSON but is not: ${o.body.slice(0, 200)}`;
    }
  }
  if (!String(o.headers.link).includes(`/docs/errors#`)) return `${o.status} without Link rel="help"`;
  let body: Json;
  try {
    body = JSON.parse(o.body);
  } catch {
    return `${o.status} not JSON: ${o.body.slice(0, 200)}`;
  }
  const e = body?.error;
  if (!e || typeof e !== "object" || Object.keys(body).length !== 1)
    return `${o.status} not an envelope: ${o.body.slice(0, 200)}`;
  for (const k of ENVELOPE_KEYS) if (!(k in e)) return `${o.status} envelope lacks ${k}: ${o.body.slice(0, 200)}`;
  if (o.headers["x-service-idempotent-replay"] !== "true" && e.request_id !== rid)
    return `${o.status} request_id ${e.request_id} differs from the header ${rid}`;
  return null;
}

export interface FuzzTotals {
  sent: number;
  byStatus: Record<string, number>;
  outsideEnvelope: number;
  fiveXX: number;
  /** 503s of a dependency absent by configuration (see designed5xx), enveloped; not failures */
  designed503: number;
  noAnswer: number;
  unsendable: number;
  problems: { op: string; what: string[]; target: string; problem: string; body?: string }[];
}

/** Sends every request with `concurrency` in flight and tallies the answers. */
export async function runFuzz(base: string, reqs: FuzzRequest[], concurrency = 8): Promise<FuzzTotals> {
  const t: FuzzTotals = {
    sent: 0,
    byStatus: {},
    outsideEnvelope: 0,
    fiveXX: 0,
    designed503: 0,
    noAnswer: 0,
    unsendable: 0,
    problems: [],
  };
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const req = reqs[next++]!;
      const o = await send(base, req);
      t.sent++;
      if (o.unsendable) {
        t.unsendable++;
        continue;
      }
      const key = o.status === null ? "no answer" : String(o.status);
      t.byStatus[key] = (t.byStatus[key] ?? 0) + 1;
      const problem = judge(o);
      if (!problem) {
        if (designed5xx(o)) t.designed503++;
        continue;
      }
      if (o.status === null) t.noAnswer++;
      else if (o.status >= 500) t.fiveXX++;
      else t.outsideEnvelope++;
      const body = typeof req.body === "string" ? req.body.slice(0, 300) : undefined;
      t.problems.push({ op: req.op, what: req.what, target: req.target.slice(0, 300), problem, body });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return t;
}
