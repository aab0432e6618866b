// What the console shows for a failed call: the service's error code and message (the envelope travels in
// error.data.svc over tRPC), with friendlier words for the codes an operator meets.

export interface ErrorInfo {
  code?: string;
  message: string;
  /** the service says a retry may succeed (network failures count as retryable) */
  retryable: boolean;
  retryAfter?: number;
  details?: { path: string; message: string }[];
}

export function errorInfo(e: unknown): ErrorInfo {
  if (!e) return { message: "Unknown error", retryable: false };
  const svc = (e as { data?: { svc?: Record<string, unknown> } }).data?.svc;
  if (svc && typeof svc.code === "string") {
    return {
      code: svc.code,
      retryable: svc.retryable === true,
      message: String(svc.message ?? "Request failed"),
      retryAfter: typeof svc.retry_after === "number" ? svc.retry_after : undefined,
      details: Array.isArray(svc.details) ? (svc.details as ErrorInfo["details"]) : undefined,
    };
  }
  const msg = e instanceof Error ? e.message : String(e);
  if (/fetch|network|Failed to fetch|JSON/i.test(msg)) {
    return { code: "NETWORK", message: "The console cannot reach the API. Is it running?", retryable: true };
  }
  return { message: msg, retryable: false };
}

export function friendlyMessage(e: unknown): string {
  const i = errorInfo(e);
  switch (i.code) {
    case "INVALID_CREDENTIALS":
      return "Email or password is wrong.";
    case "RATE_LIMIT_EXCEEDED":
      return `Too many attempts. Try again in ${formatWait(i.retryAfter ?? 60)}.`;
    case "EMAIL_TAKEN":
      return "An account with this email already exists. Sign in instead.";
    case "VALIDATION_ERROR":
      return i.details?.map((d) => `${d.path.replace(/^body\./, "")}: ${d.message}`).join("; ") ?? i.message;
    case "INSUFFICIENT_CREDITS":
      return `${i.message} Top up the wallet, then retry.`;
    default:
      return i.message;
  }
}

export function formatWait(seconds: number): string {
  if (seconds < 90) return `${seconds} seconds`;
  return `${Math.ceil(seconds / 60)} minutes`;
}

export function isUnauthenticated(e: unknown): boolean {
  return errorInfo(e).code === "UNAUTHENTICATED";
}

/** Retry only what the service marks retryable (and network failures), twice at most. */
export function shouldRetry(failures: number, e: unknown): boolean {
  return failures < 2 && errorInfo(e).retryable;
}
