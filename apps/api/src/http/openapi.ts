// The OpenAPI 3.1 document: generated from the tRPC procedures by trpc-to-openapi, then completed
// from the procedures' meta and core's error table (success statuses, every error status with the SPEC
// envelope, security schemes, Idempotency-Key headers); the registry's operations served outside tRPC are
// rendered from their definitions (./openapi-operations.ts).
import { ERROR_CODES, type ErrorCode } from "@cua/base/errors";
import { generateOpenApiDocument } from "trpc-to-openapi";
import type { Meta } from "../trpc/init.ts";
import { openApiRouter } from "../trpc/router.ts";
import { addRegistryOperations } from "./openapi-operations.ts";

type Json = Record<string, any>;

const ENVELOPE_REF = { $ref: "#/components/schemas/ErrorEnvelope" };

const ErrorEnvelopeSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message", "type", "request_id", "retryable", "retry_with_same_idempotency_key"],
      properties: {
        code: { type: "string", enum: Object.keys(ERROR_CODES), description: "stable; branch on it" },
        message: { type: "string", description: "human text" },
        type: {
          type: "string",
          enum: [
            "validation_error",
            "auth_error",
            "forbidden",
            "billing_error",
            "not_found_error",
            "state_error",
            "client_error",
            "rate_limit_error",
            "server_error",
          ],
          description:
            "by status (DECISIONS.md Compatibility amendments): 400/413/415/422 validation_error, 401 auth_error, 403 forbidden, 402 billing_error, 404 not_found_error, 409 state_error, 405/408/410 client_error, 429 rate_limit_error, 5xx server_error",
        },
        request_id: { type: "string" },
        retryable: { type: "boolean" },
        retry_with_same_idempotency_key: { type: "boolean" },
        docs_url: { type: "string", description: "{base_url}/docs/errors#CODE" },
        suggestion: { type: "string" },
        required_scope: { type: "string" },
        current_scopes: { type: "array", items: { type: "string" } },
        required: { type: "integer", description: "credits the call requires (402)" },
        balance: { type: "integer", description: "wallet balance (402)" },
        details: {
          type: "array",
          items: { type: "object", properties: { path: { type: "string" }, message: { type: "string" } } },
        },
        current_state: { type: "string" },
        allowed_from: { type: "array", items: { type: "string" } },
        retry_after: { type: "integer", description: "seconds" },
      },
    },
  },
};

function procedureMetas(): Map<string, Meta> {
  const out = new Map<string, Meta>();
  const procs = (openApiRouter as any)._def.procedures as Record<string, { _def: { meta?: Meta } }>;
  for (const p of Object.values(procs)) {
    const m = p._def.meta;
    if (m?.openapi) out.set(`${m.openapi.method.toLowerCase()} ${m.openapi.path}`, m);
  }
  return out;
}

const RATE_HEADERS = Object.fromEntries(
  [
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
  ].map((h) => [
    h,
    {
      schema: { type: "integer" },
      description: h.endsWith("Reset") ? "seconds until the window resets" : "per-key window",
    },
  ]),
);

// DECISIONS.md "Compatibility amendments": every response to an API key names the key's kind, and every JSON
// success body carries request_id (server.ts adds it to bodies that lack it).
const KEY_KIND_HEADER = { schema: { type: "string", enum: ["live", "test"] }, description: "the calling key's mode" };

/** Adds the required `request_id` property to a JSON object success response's schema. */
export function withRequestId(response: Json): void {
  const schema = response?.content?.["application/json"]?.schema;
  if (schema?.type !== "object" || !schema.properties) return;
  schema.properties.request_id ??= { type: "string", description: "the same value as X-Service-Request-Id" };
  schema.required = [...new Set([...(schema.required ?? []), "request_id"])];
}

export function errorResponses(codes: Iterable<ErrorCode>): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) {
    const s = ERROR_CODES[c].status;
    byStatus.set(s, [...new Set([...(byStatus.get(s) ?? []), c])]);
  }
  const out: Json = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const headers: Json = {
      "X-Service-Request-Id": { schema: { type: "string" } },
      Link: { schema: { type: "string" }, description: '<docs_url>; rel="help"' },
    };
    if (status === 401) headers["WWW-Authenticate"] = { schema: { type: "string" }, description: "Bearer" };
    if (status === 429 || status === 503)
      headers["Retry-After"] = { schema: { type: "integer" }, description: "seconds" };
    out[String(status)] = {
      description: list.map((c) => `${c}: ${ERROR_CODES[c].message}`).join(" | "),
      headers,
      content: { "application/json": { schema: ENVELOPE_REF } },
    };
  }
  return out;
}

/** The codes any request can be answered with before or around its operation (the transport's), plus the
 * credential, scope and body codes that apply; an operation's own codes follow. */
export function commonErrors(meta: Pick<Meta, "public" | "scope" | "errors">, hasBody: boolean): ErrorCode[] {
  // the HTTP layer (apps/api/src/http/hostile-input.ts, server.ts): bad URL encoding or request line, headers
  // too large, a request not received in time, NUL or lone surrogates in the query, shutting down
  const codes: ErrorCode[] = [
    "INTERNAL_ERROR",
    "DB_UNAVAILABLE",
    "SERVICE_UNAVAILABLE",
    "MALFORMED_REQUEST",
    "REQUEST_TIMEOUT",
    "HEADERS_TOO_LARGE",
  ];
  if (!meta.public) codes.push("INVALID_API_KEY", "RATE_LIMIT_EXCEEDED");
  if (meta.scope) codes.push("INSUFFICIENT_SCOPE");
  if (hasBody) codes.push("MALFORMED_JSON", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE");
  codes.push("VALIDATION_ERROR");
  return [...codes, ...(meta.errors ?? [])];
}

export function buildOpenApiDocument(baseUrl: string): Json {
  const doc = generateOpenApiDocument(openApiRouter, {
    title: "Computer-use agent service API",
    version: "1.0.0",
    baseUrl: `${baseUrl}/v1`,
    description:
      "Send a screenshot and an instruction, get structured actions back. Errors use one envelope (see ErrorEnvelope and /docs/errors). Every response carries X-Service-Request-Id; test keys add X-Service-Test-Mode: true.",
    securitySchemes: {
      ApiKeyHeader: {
        type: "apiKey",
        in: "header",
        name: "X-API-Key",
        description: "sk-svc-live-<48 hex> or sk-svc-test-<48 hex>; no Bearer prefix here",
      },
      BearerAuth: { type: "http", scheme: "bearer", description: "Authorization: Bearer <API key>" },
    },
  }) as Json;
  const metas = procedureMetas();
  for (const [path, item] of Object.entries(doc.paths ?? {}) as [string, Json][]) {
    for (const [method, op] of Object.entries(item) as [string, Json][]) {
      const meta = metas.get(`${method} ${path}`);
      if (!meta) continue;
      const success = meta.successStatus ?? 200;
      const ok = op.responses?.["200"] ?? { description: "Successful response" };
      ok.headers = {
        "X-Service-Request-Id": { schema: { type: "string" } },
        ...(meta.public ? {} : { "X-Service-Key-Kind": KEY_KIND_HEADER, ...RATE_HEADERS }),
      };
      withRequestId(ok);
      const hasBody = Boolean(op.requestBody);
      op.responses = { [String(success)]: ok, ...errorResponses(commonErrors(meta, hasBody)) };
      if (meta.public) op.security = [];
      else op.security = [{ ApiKeyHeader: [] }, { BearerAuth: [] }];
      if (meta.scope) op["x-required-scope"] = meta.scope;
      if (meta.idempotent) {
        op.parameters = [
          ...(op.parameters ?? []),
          {
            name: "Idempotency-Key",
            in: "header",
            required: false,
            description: "Reserve-and-replay: up to 128 characters of [A-Za-z0-9_-:]; results kept 24 h",
            schema: { type: "string", maxLength: 128, pattern: "^[A-Za-z0-9_\\-:]{1,128}$" },
          },
        ];
        op["x-idempotency"] = "reserve-and-replay";
      }
    }
  }
  // the registry's operations served by plain routes (SSE, images, the driver's) and Accept-selected variants
  addRegistryOperations(doc);
  doc.components ??= {};
  doc.components.schemas = { ...(doc.components.schemas ?? {}), ErrorEnvelope: ErrorEnvelopeSchema };
  doc["x-error-codes"] = Object.fromEntries(
    Object.entries(ERROR_CODES).map(([code, i]) => [
      code,
      { status: i.status, retryable: i.retryable, retry_with_same_idempotency_key: i.sameKey, message: i.message },
    ]),
  );
  return doc;
}
