// Renders any thrown value as the SPEC.md error envelope, from the one code table in core.

import { CoreError, ERROR_CODES, type ErrorCode, errorType } from "@cua/base/errors";
import { requestValidationError, type Where } from "@cua/base/validation";
import { isDbUnavailable } from "@cua/db/client";
import { TRPCError } from "@trpc/server";

export interface Envelope {
  error: {
    code: string;
    message: string;
    type: string;
    request_id: string;
    retryable: boolean;
    retry_with_same_idempotency_key: boolean;
    docs_url: string;
    [k: string]: unknown;
  };
}

/** A stored error response replayed for an Idempotency-Key. */
export class ReplayedResponse extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string>,
  ) {
    super("replayed");
  }
}

const TRPC_TO_CODE: Partial<Record<TRPCError["code"], ErrorCode>> = {
  NOT_FOUND: "NOT_FOUND",
  PARSE_ERROR: "MALFORMED_JSON",
  BAD_REQUEST: "VALIDATION_ERROR",
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  UNSUPPORTED_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  METHOD_NOT_SUPPORTED: "METHOD_NOT_ALLOWED",
  UNAUTHORIZED: "UNAUTHENTICATED",
  FORBIDDEN: "FORBIDDEN_ORIGIN",
};

const cache = new WeakMap<object, CoreError>();

/** Maps anything thrown to a CoreError (memoized per error object so status, body and logs agree). */
export function toCoreError(e: unknown, where: Where = "body"): CoreError {
  if (e && typeof e === "object" && cache.has(e)) return cache.get(e)!;
  let out: CoreError;
  const cause = e instanceof TRPCError ? e.cause : e;
  if (e instanceof CoreError) out = e;
  else if (cause instanceof CoreError) out = cause;
  else if (cause && (cause as any).name === "ZodError") out = requestValidationError((cause as any).issues, where);
  else if (isDbUnavailable(cause ?? e)) out = new CoreError("DB_UNAVAILABLE", undefined, { retry_after: 5 });
  else if ((cause as any)?.statusCode === 413 || (e as any)?.statusCode === 413)
    out = new CoreError("PAYLOAD_TOO_LARGE");
  else if (e instanceof TRPCError && TRPC_TO_CODE[e.code])
    out = new CoreError(TRPC_TO_CODE[e.code]!, e.code === "NOT_FOUND" ? "No such route." : e.message);
  else out = new CoreError("INTERNAL_ERROR");
  if (out.code === "INTERNAL_ERROR" && !(e instanceof CoreError) && !(cause instanceof CoreError)) {
    (out as any).original = e;
  }
  if (e && typeof e === "object") cache.set(e, out);
  return out;
}

export function renderError(
  err: CoreError,
  requestId: string,
  baseUrl: string,
): { status: number; body: Envelope; headers: Record<string, string> } {
  const info = ERROR_CODES[err.code];
  const docsUrl = `${baseUrl}/docs/errors#${err.code}`;
  const headers: Record<string, string> = { Link: `<${docsUrl}>; rel="help"`, ...err.headers };
  if (info.status === 401) headers["WWW-Authenticate"] = 'Bearer realm="svc"';
  const retryAfter = err.extras.retry_after ?? (info.status === 429 || info.status === 503 ? 5 : undefined);
  if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
  return {
    status: info.status,
    headers,
    body: {
      error: {
        code: err.code,
        message: err.message,
        type: errorType(info.status),
        request_id: requestId,
        retryable: info.retryable,
        retry_with_same_idempotency_key: info.sameKey,
        docs_url: docsUrl,
        ...err.extras,
        ...(retryAfter !== undefined ? { retry_after: retryAfter } : {}),
      },
    },
  };
}
