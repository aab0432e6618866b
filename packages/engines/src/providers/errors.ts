// Maps what the provider SDKs throw to the service's CoreError codes (SPEC "Errors", DECISIONS "Engines").
//
//   401/403 from the provider            -> LLM_KEY_INVALID (422)      (managed key: UPSTREAM_UNAVAILABLE)
//   402 / billing or quota exhausted      -> LLM_KEY_INVALID (422)      (managed key: UPSTREAM_UNAVAILABLE)
//   timeout (SDK timeout or our deadline) -> UPSTREAM_TIMEOUT (504)
//   429 / 5xx / 529 / connection failure  -> UPSTREAM_UNAVAILABLE (503)
//   anything else (400, 404, 413, ...)    -> PREDICTION_FAILED (502), for ground too (GROUNDING_FAILED, 422, means
//                                            "nothing matches": DECISIONS.md Compatibility amendments)
//
// Messages never carry the API key: the key, and anything shaped like a provider key, is redacted.
import * as AnthropicErrors from "@anthropic-ai/sdk/error";
import { CoreError, type ErrorCode, type ErrorExtras } from "@cua/base/errors";
import * as OpenAIErrors from "openai/error";

export type ProviderId = "anthropic" | "openai" | "openai-compatible";

/** Whose provider key the engine holds. A rejected managed key is our outage, not the caller's fault. */
export type KeySource = "byok" | "managed";

export type EngineOperation = "predict" | "ground";

export interface ErrorContext {
  provider: ProviderId;
  operation: EngineOperation;
  keySource: KeySource;
  /** the key in use, redacted from every message */
  apiKey?: string;
  /** aborted when the engine's own deadline passed */
  deadline?: AbortSignal;
}

const KEY_SHAPES = [
  /\bsk-ant-[A-Za-z0-9_*.-]{4,}/g,
  /\bsk-(?:proj|svcacct|admin|live|test)?-?[A-Za-z0-9_*.-]{6,}/g,
  /\bBearer\s+[A-Za-z0-9_*.-]{6,}/gi,
];

/** Removes the key itself and anything that looks like a provider key (providers echo masked keys). */
export function redactSecrets(text: string, apiKey?: string): string {
  let out = text;
  if (apiKey && apiKey.length >= 4) out = out.split(apiKey).join("[redacted]");
  for (const re of KEY_SHAPES) out = out.replace(re, "[redacted]");
  return out;
}

const PROVIDER_NAME: Record<ProviderId, string> = {
  anthropic: "Anthropic",
  openai: "OpenAI",
  "openai-compatible": "The OpenAI-compatible upstream",
};

function failureCode(_operation: EngineOperation): ErrorCode {
  return "PREDICTION_FAILED";
}

/** A model answer the engine cannot use (malformed JSON, unknown action, missing coordinates, ...). */
export function outputError(operation: EngineOperation, provider: ProviderId, detail: string): CoreError {
  const what = operation === "ground" ? "grounding answer" : "prediction";
  return new CoreError(failureCode(operation), `${PROVIDER_NAME[provider]} returned an unusable ${what}: ${detail}`, {
    provider,
  });
}

interface SdkErrorView {
  kind: "abort" | "timeout" | "connection" | "status";
  status?: number;
  type?: string | null;
  code?: string | null;
  apiMessage?: string | null;
  requestId?: string | null;
  retryAfter?: number;
}

function retryAfterSeconds(headers: Headers | undefined): number | undefined {
  const raw = headers?.get("retry-after");
  if (!raw) return undefined;
  const n = Number(raw);
  if (Number.isFinite(n) && n >= 0) return Math.ceil(n);
  const at = Date.parse(raw);
  if (Number.isFinite(at)) return Math.max(0, Math.ceil((at - Date.now()) / 1000));
  return undefined;
}

function view(err: unknown): SdkErrorView | null {
  // Order matters: the timeout classes extend the connection classes, which extend APIError.
  if (err instanceof AnthropicErrors.APIConnectionTimeoutError || err instanceof OpenAIErrors.APIConnectionTimeoutError)
    return { kind: "timeout" };
  if (err instanceof AnthropicErrors.APIUserAbortError || err instanceof OpenAIErrors.APIUserAbortError)
    return { kind: "abort" };
  if (err instanceof AnthropicErrors.APIConnectionError || err instanceof OpenAIErrors.APIConnectionError)
    return { kind: "connection" };
  if (err instanceof AnthropicErrors.APIError) {
    return {
      kind: "status",
      status: err.status,
      type: err.type,
      code: err.errorCode,
      apiMessage: err.apiMessage,
      requestId: err.requestID,
      retryAfter: retryAfterSeconds(err.headers),
    };
  }
  if (err instanceof OpenAIErrors.APIError) {
    const body = err.error as { message?: unknown } | undefined;
    return {
      kind: "status",
      status: err.status,
      type: err.type ?? null,
      code: err.code ?? null,
      apiMessage: typeof body?.message === "string" ? body.message : null,
      requestId: err.requestID,
      retryAfter: retryAfterSeconds(err.headers),
    };
  }
  if (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError")) return { kind: "abort" };
  return null;
}

const QUOTA_CODES = new Set(["insufficient_quota", "billing_hard_limit_reached", "billing_not_active"]);

function isQuotaError(v: SdkErrorView): boolean {
  if (v.status === 402) return true;
  if (v.type === "billing_error") return true;
  if (v.code && QUOTA_CODES.has(v.code)) return true;
  return /credit balance is too low/i.test(v.apiMessage ?? "");
}

/**
 * Converts anything thrown while calling a provider into a CoreError. A CoreError passes through unchanged.
 * An abort that came from the caller's own signal (not our deadline) is rethrown as is by the engines before
 * they call this; here every remaining abort counts as our timeout.
 */
export function mapProviderError(err: unknown, ctx: ErrorContext): CoreError {
  if (err instanceof CoreError) return err;
  const name = PROVIDER_NAME[ctx.provider];
  const base: ErrorExtras = { provider: ctx.provider };
  const v = view(err);

  if (!v) {
    const raw = err instanceof Error ? err.message : String(err);
    return new CoreError(failureCode(ctx.operation), redactSecrets(`${name} call failed: ${raw}`, ctx.apiKey), base);
  }
  if (v.kind === "timeout" || v.kind === "abort" || ctx.deadline?.aborted) {
    return new CoreError("UPSTREAM_TIMEOUT", `${name} did not answer in time.`, base);
  }
  if (v.kind === "connection") {
    return new CoreError("UPSTREAM_UNAVAILABLE", `${name} could not be reached.`, base);
  }

  const status = v.status ?? 0;
  const extras: ErrorExtras = { ...base, upstream_status: status };
  if (v.requestId) extras.upstream_request_id = v.requestId;
  const detail = v.apiMessage ? `: ${redactSecrets(v.apiMessage, ctx.apiKey)}` : "";

  if (status === 401 || status === 403 || isQuotaError(v)) {
    const why =
      status === 401
        ? "rejected the API key"
        : status === 403
          ? "refused the API key for this request"
          : "reports that the account behind the API key has no usable credit or quota";
    if (ctx.keySource === "managed") {
      // The caller cannot fix the operator's key: report an upstream outage, without the provider's words.
      return new CoreError("UPSTREAM_UNAVAILABLE", `The managed engine's upstream ${why} (HTTP ${status}).`, extras);
    }
    return new CoreError("LLM_KEY_INVALID", `${name} ${why} (HTTP ${status}).`, extras);
  }
  if (status === 408) {
    return new CoreError("UPSTREAM_TIMEOUT", `${name} timed out (HTTP 408).`, extras);
  }
  if (status === 429 || status >= 500) {
    if (v.retryAfter !== undefined) extras.retry_after = v.retryAfter;
    const what = status === 429 ? "is rate limiting requests" : status === 529 ? "is overloaded" : "had a server error";
    return new CoreError("UPSTREAM_UNAVAILABLE", `${name} ${what} (HTTP ${status})${detail}`, extras);
  }
  return new CoreError(
    failureCode(ctx.operation),
    `${name} rejected the request (HTTP ${status}${v.type ? ` ${v.type}` : ""})${detail}`,
    extras,
  );
}
