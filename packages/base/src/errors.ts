// One exhaustive table: error code -> HTTP status, error type, retryable, retry_with_same_idempotency_key.
// SPEC.md "Errors" gives the statuses it shows; DECISIONS.md "Error envelope and statuses" decides the rest,
// as amended by "Compatibility amendments (2026-11-25)" (type names, FEATURE_NOT_AVAILABLE 400, GROUNDING_FAILED
// 422 when nothing matches, the per-resource *_NOT_FOUND codes).
// Both the /v1 facade and the tRPC side render errors from this table only.

// DECISIONS.md "Compatibility amendments (2026-11-25)": the commercial service's `type` values.
type ErrorType =
  | "validation_error"
  | "auth_error"
  | "forbidden"
  | "billing_error"
  | "not_found_error"
  | "state_error"
  | "client_error"
  | "rate_limit_error"
  | "server_error";

interface CodeInfo {
  status: number;
  retryable: boolean;
  /** whether a retry may reuse the same Idempotency-Key */
  sameKey: boolean;
  message: string;
}

const c = (status: number, message: string, retryable = false, sameKey = false): CodeInfo => ({
  status,
  retryable,
  sameKey,
  message,
});

export const ERROR_CODES = {
  INVALID_MACHINE_ID: c(400, "The machine id is not a UUID or mch_test_<hex>."),
  INVALID_IDEMPOTENCY_KEY: c(400, "Idempotency-Key must be 1 to 128 characters of [A-Za-z0-9_-:]."),
  IDEMPOTENCY_KEY_REQUIRED: c(400, "This endpoint requires an Idempotency-Key header."),
  UNKNOWN_BROWSER_OP: c(400, "Unknown browser operation."),
  UNKNOWN_FILE_OP: c(400, "Unknown file operation."),
  INVALID_SCHEDULE_ID: c(400, "The schedule id is not a UUID or sch_test_<hex>."),
  INVALID_TRIGGER_ID: c(400, "The trigger id is not trg_<hex>."),
  INVALID_RUN_ID: c(400, "The run id contains characters outside [A-Za-z0-9_-] or is too long."),
  INVALID_KEY_ID: c(400, "The key id must be 1 to 128 characters of [A-Za-z0-9_-]."),
  INVALID_LIMIT: c(400, "limit must be an integer from 1 to 200."),
  INVALID_STATUS_FILTER: c(400, "Unknown status filter."),
  INVALID_PERIOD: c(400, "period must match YYYY-MM."),
  INVALID_CURSOR: c(400, "The cursor is not valid."),
  EMPTY_UPDATE: c(400, "The update carries no fields."),
  INPUT_TOO_LARGE: c(400, "system_prompt plus instructions exceed 32,000 characters."),
  INVALID_SCREENSHOT: c(400, "The screenshot is not valid base64 or an exact PNG/JPEG data URI."),
  UNSUPPORTED_MACHINE_KIND: c(400, "This operation is not supported for this kind of machine."),
  MALFORMED_JSON: c(400, "The request body is not valid JSON."),
  FEATURE_NOT_AVAILABLE: c(400, "This feature is not available for this key's mode or tier."),
  MALFORMED_REQUEST: c(400, "The HTTP request could not be parsed (request line, headers or URL encoding)."),
  INVALID_API_KEY: c(401, "The API key is missing, invalid, expired or revoked."),
  INVALID_SIGNATURE: c(401, "The signature is missing, malformed, stale or wrong."),
  INVALID_DEVICE_TOKEN: c(401, "The device token is missing, invalid or revoked."),
  INVALID_CREDENTIALS: c(401, "Email or password is wrong."),
  UNAUTHENTICATED: c(401, "Sign in first."),
  INSUFFICIENT_CREDITS: c(402, "The wallet balance is below the amount this call requires.", false, false),
  WALLET_EXHAUSTED: c(402, "The wallet ran out of credits."),
  BUDGET_EXCEEDED: c(402, "The run's budget would be exceeded."),
  INSUFFICIENT_SCOPE: c(403, "The API key lacks the scope this endpoint requires."),
  FORBIDDEN_ORIGIN: c(403, "The request's Origin is not allowed."),
  NOT_FOUND: c(404, "The resource does not exist."),
  MACHINE_NOT_FOUND: c(404, "The machine does not exist."),
  KEY_NOT_FOUND: c(404, "The API key does not exist."),
  SCHEDULE_NOT_FOUND: c(404, "The schedule does not exist."),
  TRIGGER_NOT_FOUND: c(404, "The trigger does not exist."),
  WORKFLOW_RUN_NOT_FOUND: c(404, "The workflow run does not exist."),
  SESSION_NOT_FOUND: c(404, "The session does not exist or has expired."),
  RUN_NOT_FOUND: c(404, "The run does not exist."),
  WORKFLOW_NOT_FOUND: c(404, "The workflow does not exist."),
  SOURCE_SCHEDULE_NOT_FOUND: c(404, "The source schedule does not exist."),
  LLM_KEY_NOT_FOUND: c(404, "No provider key is stored for this provider."),
  METHOD_NOT_ALLOWED: c(405, "This method is not allowed on this path."),
  INVALID_STATE: c(409, "The resource is not in a state that allows this operation."),
  NOT_AWAITING_HUMAN: c(409, "The run is not awaiting a human."),
  RESUME_CONFLICT: c(409, "Another resume of this run won the race."),
  IDEMPOTENCY_IN_FLIGHT: c(409, "A request with this Idempotency-Key is still processing.", true, true),
  MACHINE_BUSY: c(409, "The machine already has a command outstanding.", true, false),
  FENCING_TOKEN_MISMATCH: c(409, "The fencing token does not match the machine's current fence."),
  SEQUENCE_CONFLICT: c(409, "The observation sequence is not last_sequence + 1."),
  FRAME_PRECONDITION_FAILED: c(409, "The precondition frame is not the newest frame."),
  RESULT_CONFLICT: c(409, "A different terminal result was already recorded for this command."),
  EMAIL_TAKEN: c(409, "An account with this email already exists."),
  REQUEST_TIMEOUT: c(408, "The request was not received in time.", true, true),
  WEBHOOK_DISABLED: c(410, "The webhook trigger is disabled."),
  PAYLOAD_TOO_LARGE: c(413, "The request body is too large."),
  UNSUPPORTED_MEDIA_TYPE: c(415, "Content-Type must be application/json."),
  IDEMPOTENCY_KEY_REUSED: c(422, "The Idempotency-Key was used with another body or endpoint."),
  VALIDATION_ERROR: c(422, "The request failed validation."),
  LLM_KEY_NOT_CONFIGURED: c(422, "No provider key is available for this request."),
  LLM_PROVIDER_UNSUPPORTED: c(422, "This provider is not supported here."),
  LLM_KEY_INVALID: c(422, "The provider rejected the key."),
  GROUNDING_FAILED: c(422, "No element matching the description was found; the charge was refunded."),
  RATE_LIMIT_EXCEEDED: c(429, "Too many requests.", true, true),
  TEST_MACHINE_LIMIT: c(429, "A test key may hold at most 5 mock machines."),
  TEST_SCHEDULE_LIMIT: c(429, "A test key may hold at most 10 mock schedules."),
  SCHEDULE_LIMIT_REACHED: c(429, "The tier's schedule slots are used up."),
  SESSION_LIMIT_REACHED: c(429, "The tier's concurrent sessions are in use.", true, true),
  KEY_LIMIT_REACHED: c(429, "The account holds the maximum number of active keys."),
  HEADERS_TOO_LARGE: c(431, "The request line and headers are too large."),
  // same key: billed work tags its hold with the key, so a same-key retry never pays twice (issue 10)
  INTERNAL_ERROR: c(500, "Something went wrong on our side.", true, true),
  PREDICTION_FAILED: c(502, "The engine failed to produce a valid prediction.", true, false),
  SCREENSHOT_FAILED: c(502, "The machine was reached but the capture failed.", true, false),
  DB_UNAVAILABLE: c(503, "The database is unreachable.", true, true),
  UPSTREAM_UNAVAILABLE: c(503, "The upstream engine is unavailable.", true, false),
  SERVICE_UNAVAILABLE: c(503, "The service is shutting down; retry shortly.", true, true),
  BILLING_UNAVAILABLE: c(503, "Billing could not be settled.", true, true),
  UPSTREAM_TIMEOUT: c(504, "The upstream timed out.", true, true),
} as const satisfies Record<string, CodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

// Codes that travel inside a successful answer's body rather than as its HTTP status: a run's `error.code`
// (GET /v1/runs/{id}, run events, callbacks), a machine command's `error.code` (actions, batches, browser,
// terminal and file ops, and the results an external driver posts), and a `fail` action's `params.code`.
// Every such code is here or in ERROR_CODES (a run that fails on an API error keeps that code);
// packages/core/test/error-codes.test.ts scans the sources and fails on a code that is in neither table.
export const OUTCOME_CODES = {
  // runs: error.code of a failed or timed-out run
  MAX_STEPS_EXCEEDED: "run: the run used its max_steps without finishing",
  MAX_ITERATIONS_EXCEEDED: "run: the run used its max_iterations (engine calls and pauses) without finishing",
  DEADLINE_EXCEEDED: "run: the run's deadline passed (timed_out)",
  AWAITING_HUMAN_TIMEOUT: "run: no human resumed the run within awaiting_human_timeout_seconds",
  MACHINE_NOT_RUNNING: "run: the run's machine is not running",
  TASK_FAILED: "run: the agent reported that the task cannot be done (a fail action without a code)",
  // workflow runs: error.code of a failed workflow run (docs/workflows.md)
  GUARD_EXCEEDED:
    "workflow run: budget_cents, max_iterations, deadline_seconds or a loop's max_iterations was breached",
  ASSERTION_FAILED: "workflow run: an assert step's condition did not hold",
  STEP_FAILED: "workflow run: a task step's run did not succeed (or could not start), or a loop count was not usable",
  WORKFLOW_FAILED: "workflow run: a fail step ended it",
  APPROVAL_REJECTED: "workflow run: a human_approval was answered approved: false",
  APPROVAL_TIMEOUT: "workflow run: nobody answered a human_approval within its timeout_seconds",
  // fail actions: params.code
  ACTION_POLICY_VIOLATION: "fail action / run: the engine's actions broke the action policy",
  TOOL_NOT_ALLOWED: "fail action: the request's tools filter removed every action",
  PROVIDER_REFUSAL: "fail action: the BYOK provider refused the request",
  VERIFICATION_FAILED: "fail action: the local engine could not confirm that its last step took effect",
  // machine commands: error.code of a command result (managed desktops, mock machines, external drivers)
  FAILED: "command: the driver reported a failure without a code",
  SKIPPED: "command: not run, an earlier batch step failed and stop_on_error is set",
  TIMEOUT: "command: the command did not finish within timeout_ms",
  INPUT_FAILED: "command: the input tool (xdotool) failed",
  INVALID_KEY: "command: an unknown key name",
  SESSION_ENDED: "command: the persistent shell of session_id has exited",
  TOO_MANY_SESSIONS: "command: the machine holds the most persistent shells it may",
  BROWSER_UNAVAILABLE: "browser: the machine's browser is not reachable",
  BROWSER_ERROR: "browser: the browser answered an error",
  NAVIGATION_FAILED: "browser: the page could not be loaded",
  ELEMENT_NOT_FOUND: "browser: no element matches the selector",
  INVALID_SELECTOR: "browser: the selector is not valid",
  TAB_NOT_FOUND: "browser: no such tab",
  SCRIPT_ERROR: "browser: the script threw",
  RESULT_TOO_LARGE: "browser: the script's value is larger than 1,000,000 characters of JSON",
  DOWNLOAD_FAILED: "browser: the download did not complete",
  FILE_NOT_FOUND: "file: the path does not exist",
  IS_A_DIRECTORY: "file: the path is a directory",
  NOT_A_DIRECTORY: "file: the path is not a directory",
  DIRECTORY_NOT_EMPTY: "file: the directory is not empty",
  FILE_TOO_LARGE: "file: the file is larger than the operation allows",
  EDIT_TEXT_NOT_FOUND: "file: edit's old text does not occur in the file",
  EDIT_TEXT_AMBIGUOUS: "file: edit's old text occurs more than once",
  PERMISSION_DENIED: "file: the machine's user may not touch the path",
  SYMLINK_LOOP: "file: the path resolves through a symlink loop",
  NO_SPACE: "file: the machine's disk is full",
  IO_ERROR: "file: another I/O error",
} as const satisfies Record<string, string>;

export type OutcomeCode = keyof typeof OUTCOME_CODES;

export function errorType(status: number): ErrorType {
  if (status === 401) return "auth_error";
  if (status === 402) return "billing_error";
  if (status === 403) return "forbidden";
  if (status === 404) return "not_found_error";
  if (status === 409) return "state_error";
  if (status === 405 || status === 408 || status === 410) return "client_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "validation_error"; // 400, 413, 415, 422, 431
}

export interface ErrorExtras {
  suggestion?: string;
  required_scope?: string;
  current_scopes?: string[];
  required?: number;
  balance?: number;
  details?: { path: string; message: string }[];
  current_state?: string;
  allowed_from?: string[];
  retry_after?: number;
  [k: string]: unknown;
}

export class CoreError extends Error {
  readonly code: ErrorCode;
  readonly extras: ErrorExtras;
  /** extra response headers (e.g. X-Credits-Refunded on a refunded PREDICTION_FAILED) */
  readonly headers: Record<string, string>;
  constructor(code: ErrorCode, message?: string, extras: ErrorExtras = {}, headers: Record<string, string> = {}) {
    super(message ?? ERROR_CODES[code].message);
    this.name = "CoreError";
    this.code = code;
    this.extras = extras;
    this.headers = headers;
  }
  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export function isCoreError(e: unknown): e is CoreError {
  return e instanceof CoreError;
}

export function validationError(path: string, message: string): CoreError {
  return new CoreError("VALIDATION_ERROR", `${path}: ${message}`, { details: [{ path, message }] });
}
