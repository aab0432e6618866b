// OpenAPI entries of the registry's operations that are not plain JSON procedures (SSE streams, raw
// images, the external driver's device-token routes): rendered from their definitions, with the same
// error renderer as the generated ones (errorResponses/commonErrors in ./openapi.ts).
import { type ErrorCode, OUTCOME_CODES } from "@cua/base/errors";
import { type AnyOperation, pathParams, servedByRouter } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";
import { z } from "zod";
import { commonErrors, errorResponses } from "./openapi.ts";

type Json = Record<string, any>;

export const jsonOut = (schema: z.ZodType): Json =>
  z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as Json;
export const jsonIn = (schema: z.ZodType): Json =>
  z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Json;

function strip(schema: Json): Json {
  const { $schema: _s, ...rest } = schema;
  return rest;
}

/** Cross-cutting codes the transport adds to an operation's own (auth, limits, bodies, idempotency). */
export function operationErrors(op: AnyOperation, hasBody: boolean): ErrorCode[] {
  const idem: ErrorCode[] =
    op.idempotency === "none"
      ? []
      : [
          ...(op.idempotency === "required-per-account" ? (["IDEMPOTENCY_KEY_REQUIRED"] as const) : []),
          "IDEMPOTENCY_IN_FLIGHT",
          "IDEMPOTENCY_KEY_REUSED",
          "INVALID_IDEMPOTENCY_KEY",
        ];
  if (op.auth === "device_token") {
    const codes: ErrorCode[] = ["INTERNAL_ERROR", "DB_UNAVAILABLE", "INVALID_DEVICE_TOKEN", "RATE_LIMIT_EXCEEDED"];
    if (hasBody) codes.push("MALFORMED_JSON", "PAYLOAD_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE");
    codes.push("VALIDATION_ERROR");
    return [...codes, ...op.errors, ...idem];
  }
  return commonErrors(
    { public: op.auth === "public", scope: op.scope, errors: [...op.errors, ...idem] },
    hasBody,
  ) as ErrorCode[];
}

const SECURITY: Record<string, Json[]> = {
  api_key: [{ ApiKeyHeader: [] }, { BearerAuth: [] }],
  device_token: [{ DeviceToken: [] }],
  public: [],
  signature: [],
};

/** The OpenAPI operation of a non-JSON (or Accept-selected) registry operation. */
export function renderPlainOperation(op: AnyOperation): Json {
  const shape: Record<string, z.ZodType> = op.input instanceof z.ZodObject ? (op.input.shape as never) : {};
  const inPath = pathParams(op.path);
  const parameters: Json[] = inPath.map((name) => ({
    name,
    in: "path",
    required: true,
    schema: strip(jsonIn(shape[name] ?? z.string())),
    ...(shape[name]?.description ? { description: shape[name]!.description } : {}),
  }));
  let requestBody: Json | undefined;
  const rest = Object.keys(shape).filter((k) => !inPath.includes(k));
  if (op.method === "GET") {
    for (const name of rest) {
      const f = shape[name]!;
      parameters.push({
        name,
        in: "query",
        required: !f.safeParse(undefined).success,
        schema: strip(jsonIn(f)),
        ...(f.description ? { description: f.description } : {}),
      });
    }
  } else if (rest.length > 0 && op.input instanceof z.ZodObject) {
    const body = op.input.omit(Object.fromEntries(inPath.map((k) => [k, true])) as never);
    requestBody = {
      required: !body.safeParse({}).success,
      content: { "application/json": { schema: strip(jsonIn(body)) } },
    };
  }
  for (const h of op.requestHeaders ?? []) {
    parameters.push({
      name: h.name,
      in: "header",
      required: false,
      schema: { type: "string" },
      description: h.description,
    });
  }
  const content: Json = {};
  if (op.transport === "sse") {
    content["text/event-stream"] = { schema: { type: "string" }, "x-frame-schema": strip(jsonOut(op.output)) };
  } else if (op.transport === "image") {
    content["image/png"] = { schema: { type: "string", format: "binary" } };
  } else {
    content["application/json"] = { schema: strip(jsonOut(op.output)) };
  }
  if (op.alsoServes?.includes("image/png")) content["image/png"] = { schema: { type: "string", format: "binary" } };
  if (op.alsoServes?.includes("text/event-stream"))
    content["text/event-stream"] = { schema: { type: "string" }, description: "keepalive events, then one result" };
  const out: Json = {
    summary: op.docs.summary,
    description: op.docs.description,
    tags: op.docs.tags,
    operationId: op.id.replace(".", "-"),
    parameters,
    ...(requestBody ? { requestBody } : {}),
    security: SECURITY[op.auth],
    ...(op.scope ? { "x-required-scope": op.scope } : {}),
    "x-billing": op.billing,
    responses: {
      [String(op.successStatus)]: {
        description: op.docs.summary,
        headers: { "X-Service-Request-Id": { schema: { type: "string" } } },
        content,
      },
      ...errorResponses(operationErrors(op, Boolean(requestBody))),
    },
  };
  return out;
}

/** Registry operations served outside the generated router (transport other than json), by path. */
export function plainOperations(): AnyOperation[] {
  return (operations as unknown as readonly AnyOperation[]).filter((o) => o.path && !servedByRouter(o));
}

/** Adds every plain operation's entry and the Accept-selected variants of JSON ones to the document. */
export function addRegistryOperations(doc: Json): void {
  for (const op of plainOperations()) {
    doc.paths[op.path!] ??= {};
    doc.paths[op.path!][op.method.toLowerCase()] = renderPlainOperation(op);
  }
  for (const op of operations as unknown as readonly AnyOperation[]) {
    if (!op.path) continue;
    const entry = doc.paths[op.path]?.[op.method.toLowerCase()];
    if (!entry) continue;
    entry["x-billing"] = op.billing;
    if (op.transport !== "json" || !op.alsoServes) continue;
    const ok = entry.responses?.[String(op.successStatus)];
    if (!ok) continue;
    ok.content ??= {};
    if (op.alsoServes.includes("image/png")) ok.content["image/png"] = { schema: { type: "string", format: "binary" } };
    if (op.alsoServes.includes("text/event-stream"))
      ok.content["text/event-stream"] = {
        schema: { type: "string" },
        description: "with Accept: text/event-stream: keepalive events every 5 s, then one result (or error) event",
      };
    for (const h of op.requestHeaders ?? []) {
      entry.parameters = [
        ...(entry.parameters ?? []),
        { name: h.name, in: "header", required: false, schema: { type: "string" }, description: h.description },
      ];
    }
  }
  // codes inside success bodies (run error.code, command results, fail actions): the same table in core
  doc["x-outcome-codes"] = OUTCOME_CODES;
  doc.components ??= {};
  doc.components.securitySchemes ??= {};
  doc.components.securitySchemes.DeviceToken = {
    type: "http",
    scheme: "bearer",
    description: "External machines' driver routes: Authorization: Bearer dtk_<64 hex> (never an API key)",
  };
}
