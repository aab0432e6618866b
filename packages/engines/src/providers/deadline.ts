// One deadline per engine call: the SDK's own per-attempt timeout plus an overall budget that also covers
// the SDK's retries, merged with the caller's signal (a client that went away).

export interface CallScope {
  /** pass to the SDK request */
  signal: AbortSignal;
  /** aborted when our own budget ran out */
  deadline: AbortSignal;
  /** the caller's signal, when given */
  caller?: AbortSignal;
}

export function callScope(timeoutMs: number, caller?: AbortSignal): CallScope {
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = caller ? AbortSignal.any([deadline, caller]) : deadline;
  return { signal, deadline, caller };
}

/** When the caller itself aborted (and our deadline did not pass), its reason is rethrown unchanged. */
export function rethrowCallerAbort(scope: CallScope): void {
  if (scope.caller?.aborted && !scope.deadline.aborted) {
    const reason: unknown = scope.caller.reason;
    throw reason instanceof Error ? reason : new DOMException("The operation was aborted.", "AbortError");
  }
}
