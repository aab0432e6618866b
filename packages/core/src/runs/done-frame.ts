// The final frame of every persisted event stream (task runs and workflow runs), DECISIONS.md
// "Compatibility amendments": after the durable terminal frame a `done` frame `{status, run_id}`, then the
// stream ends. The streams in core yield it themselves, so every consumer gets it: the SSE routes
// (apps/api/src/http/event-stream.ts writes it without `id:`, so a client's Last-Event-ID stays the
// terminal's seq) and the console's subscriptions. It carries the terminal frame's seq: a consumer that
// tracks seqs resumes after the terminal frame, and a reconnect from there replays nothing.
export interface StreamFrame {
  seq: number;
  event: string;
  data: unknown;
  created_at: string;
}

export const DONE_EVENT = "done";

export function doneFrame(runId: string, terminal: StreamFrame): StreamFrame {
  const status = (terminal.data as { status?: unknown } | null)?.status ?? null;
  return { seq: terminal.seq, event: DONE_EVENT, data: { status, run_id: runId }, created_at: terminal.created_at };
}
