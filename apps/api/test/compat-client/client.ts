// A small client written against the commercial service's contract (DECISIONS.md "Compatibility amendments
// (2026-11-25)"), the way its cookbook SDK examples are written: it knows only the amended shapes (lists via
// `data`, runs via `steps_completed`, SSE until `done`, callbacks by top-level `run_id`, ground with
// `element`, sessions with `max_trajectory_length`) and nothing of this repository's code. It uses fetch and
// node:crypto only, so what it proves is what any client would see on the wire.
import { createHmac, timingSafeEqual } from "node:crypto";

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly type: string,
    readonly requestId: string,
    readonly body: Record<string, unknown>,
    readonly headers: Headers,
  ) {
    super(`${status} ${code}: ${String(body.message ?? "")}`);
  }
}

export interface Answer<T> {
  body: T;
  headers: Headers;
  status: number;
}

export interface Action {
  action_type: string;
  params: Record<string, unknown>;
  description?: string;
  raw_code?: string;
}

export interface PredictResult {
  request_id: string;
  actions: Action[];
  reasoning: string;
  status: "continue" | "done" | "fail";
  cua_version: string;
  screen_width: number;
  screen_height: number;
  raw_code?: string;
  usage: { credits_charged: number };
}

export interface ListPage<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
  request_id: string;
}

export interface Run {
  object: "agent.run";
  id: string;
  status: string;
  steps_completed: number;
  credits_charged: number;
  cost_cents: number;
  metadata: Record<string, string>;
  awaiting_human_since: string | null;
  result: { passed: boolean; status: string; summary: string; verdict?: string } | null;
  webhook_secret: string | null;
  request_id: string;
}

export interface RunEvent {
  id: string | null;
  event: string;
  data: Record<string, unknown>;
}

export class ServiceClient {
  constructor(
    readonly baseUrl: string,
    readonly apiKey: string,
  ) {}

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Answer<T>> {
    const res = await fetch(`${this.baseUrl}/v1${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${this.apiKey}`,
        ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    if (!res.ok) {
      const e = (json.error ?? {}) as Record<string, unknown>;
      throw new ServiceError(res.status, String(e.code), String(e.type), String(e.request_id), e, res.headers);
    }
    return { body: json as T, headers: res.headers, status: res.status };
  }

  // ---- prediction
  predict(body: Record<string, unknown>) {
    return this.request<PredictResult>("POST", "/predict", body);
  }
  ground(screenshot: string, element: string) {
    return this.request<{ x: number; y: number; screen_width: number; screen_height: number }>("POST", "/ground", {
      screenshot,
      element,
    });
  }
  models() {
    return this.request<{ models: { id: string }[] }>("GET", "/models");
  }

  // ---- sessions
  createSession(body: Record<string, unknown>) {
    return this.request<{
      session_id: string;
      max_trajectory_length: number;
      screen_size: { width: number; height: number } | null;
      total_credits_used: number;
    }>("POST", "/sessions", body);
  }
  sessionPredict(id: string, body: Record<string, unknown>) {
    return this.request<PredictResult & { step: number }>("POST", `/sessions/${id}/predict`, body);
  }
  getSession(id: string) {
    return this.request<{ session_id: string; step_count: number; total_credits_used: number }>(
      "GET",
      `/sessions/${id}`,
    );
  }
  listSessions() {
    return this.request<ListPage<{ session_id: string }>>("GET", "/sessions");
  }
  resetSession(id: string) {
    return this.request<{ status: string; session_id: string }>("POST", `/sessions/${id}/reset`);
  }
  endSession(id: string) {
    return this.request<{ status: string; session_id: string }>("DELETE", `/sessions/${id}`);
  }

  // ---- runs
  createRun(body: Record<string, unknown>) {
    return this.request<Run>("POST", "/runs", body);
  }
  getRun(id: string) {
    return this.request<Run>("GET", `/runs/${id}`);
  }
  listRuns(query = "") {
    return this.request<ListPage<Run>>("GET", `/runs${query}`);
  }
  resumeRun(id: string, note: string) {
    return this.request<Run>("POST", `/runs/${id}/resume`, { note });
  }

  /**
   * Reads the run's event stream until the `done` frame, reconnecting with Last-Event-ID when the connection
   * drops (at most `reconnects` times), as the commercial SDK does. `onEvent` may act on a frame (resume a run).
   */
  async streamUntilDone(
    runId: string,
    onEvent: (e: RunEvent) => Promise<void> | void = () => {},
    reconnects = 5,
  ): Promise<{ events: RunEvent[]; connections: number }> {
    const events: RunEvent[] = [];
    let lastId: string | null = null;
    for (let connection = 1; connection <= reconnects + 1; connection++) {
      const res = await fetch(`${this.baseUrl}/v1/runs/${runId}/events`, {
        headers: {
          Authorization: `Bearer ${this.apiKey}`,
          Accept: "text/event-stream",
          ...(lastId ? { "Last-Event-ID": lastId } : {}),
        },
      });
      if (!res.ok || !res.body) throw new Error(`events: ${res.status}`);
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const e: RunEvent = { id: null, event: "message", data: {} };
          let hasData = false;
          for (const line of block.split("\n")) {
            if (line.startsWith("id: ")) e.id = line.slice(4);
            else if (line.startsWith("event: ")) e.event = line.slice(7);
            else if (line.startsWith("data: ")) {
              e.data = JSON.parse(line.slice(6)) as Record<string, unknown>;
              hasData = true;
            }
          }
          if (!hasData) continue;
          if (e.id) lastId = e.id;
          events.push(e);
          await onEvent(e);
          if (e.event === "done") {
            await reader.cancel().catch(() => {});
            return { events, connections: connection };
          }
        }
      }
    }
    throw new Error(`no done frame after ${reconnects} reconnects`);
  }

  // ---- machines
  createMachine(body: Record<string, unknown>) {
    return this.request<{
      machine: { id: string; status: string };
      connection: Record<string, unknown>;
    }>("POST", "/machines", body);
  }
  listMachines() {
    return this.request<ListPage<{ id: string; status: string }>>("GET", "/machines");
  }
  machineAction(id: string, body: Record<string, unknown>) {
    return this.request<{ command: string; success: boolean; screenshot?: string | null }>(
      "POST",
      `/machines/${id}/actions`,
      body,
    );
  }
  machineBatch(id: string, steps: Record<string, unknown>[]) {
    return this.request<{ results: { command: string; success: boolean }[]; completed_count: number }>(
      "POST",
      `/machines/${id}/actions/batch`,
      { steps, stop_on_error: true },
    );
  }
  fileOp(id: string, op: string, parameters: Record<string, unknown>) {
    return this.request<{ command: string; success: boolean; result: Record<string, unknown> }>(
      "POST",
      `/machines/${id}/files/${op}`,
      { parameters, include_screenshot: false },
    );
  }
  lifecycle(id: string, op: "start" | "stop" | "restart") {
    return this.request<{ machine_id: string; status: string; message: string; request_id: string }>(
      "POST",
      `/machines/${id}/${op}`,
    );
  }
  terminate(id: string) {
    return this.request<{ machine_id: string; status: string }>("DELETE", `/machines/${id}`);
  }

  // ---- account
  usage() {
    return this.request<{ total_requests: number; total_credits: number; balance: number; wallet_balance_usd: string }>(
      "GET",
      "/usage",
    );
  }
}

/** The receiver side of a signed callback: `Service-Signature: t=<unix>,v1=<hex>` over "<t>.<raw body>". */
export function verifySignature(secret: string, rawBody: string, header: string, toleranceSeconds = 300): boolean {
  const parts = Object.fromEntries(header.split(",").map((p) => p.split("=", 2) as [string, string]));
  const t = Number(parts.t);
  if (!parts.v1 || !Number.isFinite(t) || Math.abs(Date.now() / 1000 - t) > toleranceSeconds) return false;
  const want = createHmac("sha256", secret).update(`${parts.t}.${rawBody}`).digest();
  const got = Buffer.from(parts.v1, "hex");
  return got.length === want.length && timingSafeEqual(want, got);
}
