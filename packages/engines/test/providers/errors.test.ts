// The SDK error -> CoreError table, with errors built from the SDKs' own classes.
import * as A from "@anthropic-ai/sdk/error";
import { CoreError } from "@cua/base/errors";
import * as O from "openai/error";
import { describe, expect, it } from "vitest";
import { type ErrorContext, mapProviderError, outputError, redactSecrets } from "../../src/providers/errors.ts";

const KEY = "sk-ant-api03-SECRETSECRETSECRET-xyz";
const byok: ErrorContext = { provider: "anthropic", operation: "predict", keySource: "byok", apiKey: KEY };

const aHeaders = (extra: Record<string, string> = {}) => new Headers({ "request-id": "req_123", ...extra });
const oHeaders = (extra: Record<string, string> = {}) => new Headers({ "x-request-id": "req_456", ...extra });
const aErr = (status: number, type: string, message: string, headers = aHeaders()) =>
  A.APIError.generate(status, { type: "error", error: { type, message } }, undefined, headers);
const oErr = (status: number, type: string, code: string | null, message: string, headers = oHeaders()) =>
  O.APIError.generate(status, { error: { message, type, code, param: null } }, undefined, headers);

describe("mapProviderError", () => {
  const CASES: [string, unknown, ErrorContext, string, number][] = [
    ["anthropic 401", aErr(401, "authentication_error", "invalid x-api-key"), byok, "LLM_KEY_INVALID", 422],
    ["anthropic 403", aErr(403, "permission_error", "no access"), byok, "LLM_KEY_INVALID", 422],
    ["anthropic 402 billing", aErr(402, "billing_error", "credit balance is too low"), byok, "LLM_KEY_INVALID", 422],
    [
      "anthropic 400 low credit",
      aErr(400, "invalid_request_error", "Your credit balance is too low to access the API"),
      byok,
      "LLM_KEY_INVALID",
      422,
    ],
    ["anthropic 429", aErr(429, "rate_limit_error", "slow down"), byok, "UPSTREAM_UNAVAILABLE", 503],
    ["anthropic 500", aErr(500, "api_error", "oops"), byok, "UPSTREAM_UNAVAILABLE", 503],
    ["anthropic 503", aErr(503, "api_error", "unavailable"), byok, "UPSTREAM_UNAVAILABLE", 503],
    ["anthropic 529", aErr(529, "overloaded_error", "Overloaded"), byok, "UPSTREAM_UNAVAILABLE", 503],
    ["anthropic 408", aErr(408, "timeout_error", "slow"), byok, "UPSTREAM_TIMEOUT", 504],
    ["anthropic 400", aErr(400, "invalid_request_error", "bad"), byok, "PREDICTION_FAILED", 502],
    ["anthropic 413", aErr(413, "request_too_large", "big"), byok, "PREDICTION_FAILED", 502],
    [
      "anthropic 400 on ground",
      aErr(400, "invalid_request_error", "bad"),
      { ...byok, operation: "ground" },
      "PREDICTION_FAILED",
      502,
    ],
    ["anthropic timeout", new A.APIConnectionTimeoutError(), byok, "UPSTREAM_TIMEOUT", 504],
    ["anthropic abort", new A.APIUserAbortError(), byok, "UPSTREAM_TIMEOUT", 504],
    ["anthropic connection", new A.APIConnectionError({ message: "ECONNREFUSED" }), byok, "UPSTREAM_UNAVAILABLE", 503],
    [
      "openai 401",
      oErr(401, "invalid_request_error", "invalid_api_key", "Incorrect API key"),
      { ...byok, provider: "openai" },
      "LLM_KEY_INVALID",
      422,
    ],
    [
      "openai 429 quota",
      oErr(429, "insufficient_quota", "insufficient_quota", "quota"),
      { ...byok, provider: "openai" },
      "LLM_KEY_INVALID",
      422,
    ],
    [
      "openai 429 rate",
      oErr(429, "requests", "rate_limit_exceeded", "rate"),
      { ...byok, provider: "openai" },
      "UPSTREAM_UNAVAILABLE",
      503,
    ],
    [
      "openai 502",
      oErr(502, "server_error", null, "bad gateway"),
      { ...byok, provider: "openai" },
      "UPSTREAM_UNAVAILABLE",
      503,
    ],
    [
      "openai 404",
      oErr(404, "invalid_request_error", "model_not_found", "no model"),
      { ...byok, provider: "openai" },
      "PREDICTION_FAILED",
      502,
    ],
    ["openai timeout", new O.APIConnectionTimeoutError(), { ...byok, provider: "openai" }, "UPSTREAM_TIMEOUT", 504],
    [
      "openai connection",
      new O.APIConnectionError({ message: "socket hang up" }),
      { ...byok, provider: "openai" },
      "UPSTREAM_UNAVAILABLE",
      503,
    ],
    ["DOM AbortError", new DOMException("aborted", "AbortError"), byok, "UPSTREAM_TIMEOUT", 504],
    ["anything else", new TypeError("boom"), byok, "PREDICTION_FAILED", 502],
    [
      "managed 401",
      aErr(401, "authentication_error", "invalid"),
      { ...byok, keySource: "managed" },
      "UPSTREAM_UNAVAILABLE",
      503,
    ],
    [
      "managed quota",
      oErr(429, "insufficient_quota", "insufficient_quota", "quota"),
      { ...byok, provider: "openai", keySource: "managed" },
      "UPSTREAM_UNAVAILABLE",
      503,
    ],
  ];
  it.each(CASES)("%s -> %s", (_n, err, ctx, code, status) => {
    const mapped = mapProviderError(err, ctx);
    expect(mapped).toBeInstanceOf(CoreError);
    expect(mapped.code).toBe(code);
    expect(mapped.status).toBe(status);
    expect(mapped.extras.provider).toBe(ctx.provider);
  });

  it("a CoreError passes through", () => {
    const e = new CoreError("INTERNAL_ERROR");
    expect(mapProviderError(e, byok)).toBe(e);
  });

  it("our own deadline counts as a timeout whatever the SDK threw", () => {
    const ac = new AbortController();
    ac.abort();
    expect(mapProviderError(new A.APIConnectionError({ message: "x" }), { ...byok, deadline: ac.signal }).code).toBe(
      "UPSTREAM_TIMEOUT",
    );
  });

  it("keeps retry_after (seconds or HTTP date), the upstream status and request id", () => {
    const e = mapProviderError(aErr(429, "rate_limit_error", "x", aHeaders({ "retry-after": "12" })), byok);
    expect(e.extras).toMatchObject({ retry_after: 12, upstream_status: 429, upstream_request_id: "req_123" });
    const at = new Date(Date.now() + 30_000).toUTCString();
    const d = mapProviderError(oErr(503, "server_error", null, "x", oHeaders({ "retry-after": at })), {
      ...byok,
      provider: "openai",
    });
    expect(d.extras.retry_after).toBeGreaterThan(25);
    expect(d.extras.upstream_request_id).toBe("req_456");
  });

  it("never carries the key: not from an auth error, not when the provider echoes it", () => {
    const auth = mapProviderError(aErr(401, "authentication_error", `invalid x-api-key ${KEY}`), byok);
    const echoed = mapProviderError(aErr(400, "invalid_request_error", `request for ${KEY} rejected`), byok);
    const masked = mapProviderError(
      oErr(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-proj-abc*****wxyz."),
      { ...byok, provider: "openai" },
    );
    for (const e of [auth, echoed, masked]) {
      const shown = JSON.stringify({ m: e.message, x: e.extras });
      expect(shown).not.toContain(KEY);
      expect(shown).not.toMatch(/sk-(ant|proj)-/);
    }
    expect(echoed.message).toContain("[redacted]");
  });
});

describe("redactSecrets", () => {
  it.each([
    ["the key itself", "key=abcdEFGH1234", "abcdEFGH1234", "key=[redacted]"],
    ["anthropic shape", "got sk-ant-api03-xyzxyzxyz", undefined, "got [redacted]"],
    ["openai project key", "got sk-proj-AbC123dEf456", undefined, "got [redacted]"],
    ["bearer", "Authorization: Bearer abcdef123456", undefined, "Authorization: [redacted]"],
    ["plain text untouched", "nothing secret here", undefined, "nothing secret here"],
  ])("%s", (_n, text, key, want) => {
    expect(redactSecrets(text, key)).toBe(want);
  });
});

describe("outputError", () => {
  // GROUNDING_FAILED (422) means "nothing matches" (DECISIONS.md Compatibility amendments); an engine failure is 502
  it("is PREDICTION_FAILED (502) for predict and for ground", () => {
    expect(outputError("predict", "openai", "x")).toMatchObject({ code: "PREDICTION_FAILED", status: 502 });
    expect(outputError("ground", "anthropic", "x")).toMatchObject({ code: "PREDICTION_FAILED", status: 502 });
  });
});
