// The one HTTP server: the /v1 REST facade (routes compiled from core's operation registry), /trpc for the
// console, OpenAPI and docs.
// Transport only: every rule lives in core; errors are rendered from core's one table.

import { isAscii } from "node:buffer";
import { CoreError } from "@cua/base/errors";
import { newRequestId } from "@cua/base/ids";
import { putPredecoded } from "@cua/base/images/screenshot";
import fastifyCompress from "@fastify/compress";
import { fastifyTRPCPlugin } from "@trpc/server/adapters/fastify";
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { AppDeps } from "./app-deps.ts";
import { registerDocs } from "./http/docs-page.ts";
import {
  clientErrorHandler,
  drainRequest,
  frameworkErrors,
  inspectJson,
  inspectQuery,
  installTransportGuards,
} from "./http/hostile-input.ts";
import { buildOpenApiDocument } from "./http/openapi.ts";
import { ReplayedResponse, renderError, toCoreError } from "./http/render-error.ts";
import { parseScreenshotBody } from "./http/screenshot-body.ts";
import { registerV1Routes } from "./http/v1-routes.ts";
import { baseUrlOf, type Ctx, createContextFactory, whereOf } from "./trpc/context.ts";
import { appRouter } from "./trpc/router.ts";

export const BODY_LIMIT = 15 * 1024 * 1024; // SPEC.md "Limits": 15,728,640 bytes

declare module "fastify" {
  interface FastifyRequest {
    svcCtx?: Ctx;
    /** drops the screenshot the JSON parser decoded for this request, if still unused (screenshot-body.ts) */
    releaseScreenshot?: () => void;
  }
}

function sendError(req: FastifyRequest, reply: FastifyReply, deps: AppDeps, err: CoreError) {
  const r = renderError(err, String(req.id), baseUrlOf({ deps, req }));
  const extra = req.svcCtx?.res.headers ?? {};
  return reply
    .code(r.status)
    .headers({ ...extra, ...r.headers })
    .type("application/json")
    .send(r.body);
}

function fastifyErrorToCore(e: FastifyError): CoreError {
  switch (e.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new CoreError("PAYLOAD_TOO_LARGE", `The body exceeds ${BODY_LIMIT} bytes.`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new CoreError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json.");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new CoreError("MALFORMED_JSON", "Content-Length does not match the body.");
    default:
      return toCoreError(e);
  }
}

export async function buildServer(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: deps.env.LOG_LEVEL,
      redact: {
        paths: [
          'req.headers["x-api-key"]',
          "req.headers.authorization",
          'req.headers["x-llm-api-key"]',
          "req.headers.cookie",
        ],
        censor: "[redacted]",
      },
    },
    genReqId: () => newRequestId(),
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    // while closing, new requests get the envelope (SERVICE_UNAVAILABLE, onRequest below), not Fastify's own body
    return503OnClosing: false,
    // the routes judge their ids (INVALID_RUN_ID...); the URL is bounded by Node's 16 KiB header limit
    routerOptions: { maxParamLength: 16 * 1024 },
    // framework-level refusals are SPEC envelopes too (apps/api/src/http/hostile-input.ts)
    clientErrorHandler: clientErrorHandler(deps),
    frameworkErrors: frameworkErrors((req, reply, err) => sendError(req, reply, deps, err)),
    http: { requireHostHeader: false }, // a missing Host is answered with the envelope (installTransportGuards)
  });
  installTransportGuards(app, (req, reply, err) => sendError(req, reply, deps, err));

  // SPEC "Transport": gzip and br when the client accepts them. Request bodies are not decompressed (the raw
  // bytes stay what was signed); text/event-stream and images are never compressed (SSE routes are hijacked).
  await app.register(fastifyCompress, { encodings: ["br", "gzip"], globalDecompression: false });

  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onRequest", async (req, reply) => {
    reply.header("X-Service-Request-Id", String(req.id));
    if (closing) {
      reply.header("Connection", "close");
      return sendError(req, reply, deps, new CoreError("SERVICE_UNAVAILABLE", undefined, { retry_after: 1 }));
    }
    // A NUL or a lone surrogate in the query string is 422 before any route can take it to PostgreSQL.
    if (req.url.includes("%")) {
      const bad = inspectQuery(req.query);
      if (bad) return sendError(req, reply, deps, bad);
    }
    // A bodiless POST/DELETE (e.g. /cancel) needs no Content-Type.
    const len = req.headers["content-length"];
    if (!req.headers["content-type"] && (len === undefined || len === "0") && !req.headers["transfer-encoding"]) {
      req.headers["content-type"] = "application/json";
    }
  });

  // JSON; an empty body is "no input" (the webhook route keeps its raw bytes with a parser of its own).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "application/json",
    { parseAs: "buffer" },
    (req: FastifyRequest, body: Buffer | string, done: (err: Error | null, body?: unknown) => void) => {
      const buf = Buffer.isBuffer(body) ? body : Buffer.from(body);
      if (buf.length === 0) return done(null, undefined);
      // a large top-level screenshot: decoded from the bytes, not copied through a body string and JSON.parse
      // (http/screenshot-body.ts; null when the plain parse below must decide)
      const fast = parseScreenshotBody(buf);
      if (fast) {
        const bad = inspectJson(fast.value, fast.hasEscape);
        if (bad) return done(bad, undefined);
        const release = putPredecoded(fast.screenshot, fast.bytes);
        req.releaseScreenshot = release;
        return done(null, fast.value);
      }
      let value: unknown;
      try {
        // an all-ASCII body (any JSON whose non-ASCII is \u-escaped, a base64 screenshot) decodes as latin1: the
        // same string, built as one-byte text about twice as fast as UTF-8 decoding, and parsed faster too
        // (issue 16: the toString of predict's 345 KB body was 14% of its profile)
        value = JSON.parse(isAscii(buf) ? buf.toString("latin1") : buf.toString("utf8"));
      } catch {
        return done(new CoreError("MALFORMED_JSON", "The request body is not valid JSON."), undefined);
      }
      // too deep, NUL or lone surrogates: 422 here, before anything recursive or PostgreSQL sees the value
      const bad = inspectJson(value, buf.includes("\\u"));
      if (bad) return done(bad, undefined);
      done(null, value);
    },
  );

  app.setErrorHandler(async (err: FastifyError, req, reply) => {
    const ce = err instanceof CoreError ? err : fastifyErrorToCore(err);
    if (ce.code === "INTERNAL_ERROR") req.log.error({ err }, "internal error");
    // a body refused mid-upload: read the rest first, or closing resets the connection before the 413 is read
    if (ce.code === "PAYLOAD_TOO_LARGE") await drainRequest(req.raw);
    return sendError(req, reply, deps, ce);
  });

  app.setNotFoundHandler((req, reply) => {
    const legacy = req.url.startsWith("/api/v1/cua");
    return sendError(
      req,
      reply,
      deps,
      new CoreError(
        "NOT_FOUND",
        legacy ? "The /api/v1/cua prefix is not served." : `No route ${req.method} ${req.url.split("?")[0]}.`,
        {
          suggestion: legacy
            ? "Use the /v1 paths of the OpenAPI document at /openapi.json."
            : "See /docs for every route.",
        },
      ),
    );
  });

  const locationOf = whereOf; // body.x, query.x, path.id (packages/base/src/validation.ts)
  const responseMeta = ({ ctx, errors }: { ctx?: Ctx; errors: readonly unknown[] }) => {
    if (!ctx) return {};
    const first = errors[0] as { cause?: unknown } | undefined;
    if (first) {
      if (first.cause instanceof ReplayedResponse) {
        const c = first.cause;
        return {
          status: c.status,
          headers: { ...ctx.res.headers, ...c.headers, "X-Service-Idempotent-Replay": "true" },
        };
      }
      const r = renderError(toCoreError(first, locationOf(ctx)), ctx.requestId, baseUrlOf(ctx));
      return { status: r.status, headers: { ...ctx.res.headers, ...r.headers } };
    }
    return { status: ctx.transport === "rest" ? (ctx.res.status ?? 200) : 200, headers: ctx.res.headers };
  };
  const onError = ({ error, ctx }: { error: unknown; ctx?: Ctx }) => {
    const ce = toCoreError(error, ctx ? locationOf(ctx) : "body");
    if (ce.code === "INTERNAL_ERROR")
      app.log.error({ err: (ce as any).original ?? error, reqId: ctx?.requestId }, "internal error");
  };

  // /v1: one Fastify route per registry operation (apps/api/src/http/v1-routes.ts); the screenshot's route is
  // the plain one that also serves `Accept: image/png` (http/machines-plain-routes.ts) and runs the same chain
  registerV1Routes(app, deps, { servedElsewhere: (op) => Boolean(op.alsoServes?.includes("image/png")) });

  await app.register(fastifyTRPCPlugin, {
    prefix: "/trpc",
    trpcOptions: {
      router: appRouter,
      createContext: createContextFactory(deps, "trpc"),
      responseMeta: responseMeta as any,
      onError: onError as any,
    },
  });

  // a screenshot the parser decoded and nothing used (the call was refused before its use case) goes now
  const releaseScreenshot = async (req: FastifyRequest) => req.releaseScreenshot?.();
  app.addHook("onRequestAbort", releaseScreenshot);
  app.addHook("onResponse", async (req, reply) => {
    req.releaseScreenshot?.();
    const ctx = req.svcCtx;
    if (!ctx?.principal || !ctx.endpoint) return;
    deps.usage.record({
      accountId: ctx.principal.accountId,
      mode: ctx.principal.mode,
      apiKeyId: ctx.principal.keyId,
      method: req.method,
      endpoint: ctx.endpoint,
      status: reply.statusCode,
      creditsCharged: ctx.res.creditsCharged,
      requestId: String(req.id),
      at: new Date(),
    });
  });

  let doc: unknown;
  const openapi = (req: FastifyRequest) => {
    doc ??= buildOpenApiDocument(baseUrlOf({ deps, req }));
    return doc;
  };
  app.get("/openapi.json", async (req) => openapi(req));
  app.get("/.well-known/openapi.json", async (req) => openapi(req));
  registerDocs(app, () => buildOpenApiDocument(""));

  return app;
}
