// HTTP client of the driver protocol (version 1). Every call carries the device token; transient
// failures (network, 429, 5xx) are retried with backoff by the caller's loop.
import type {
  DriverCommand,
  HeartbeatResponse,
  ObservationResponse,
  PollResponse,
  ResultBody,
} from "@cua/machines/driver-wire";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(`${status} ${code}: ${message}`);
  }
  get transient(): boolean {
    return this.status === 0 || this.status === 429 || this.status >= 500;
  }
}

/** A command as the service sends it (the shared wire schema, docs/driver.md). */
export type WireCommand = DriverCommand;

export class DriverClient {
  constructor(
    private readonly baseUrl: string,
    private readonly machineId: string,
    private readonly token: string,
  ) {}

  private async req<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let r: Response;
    try {
      r = await fetch(`${this.baseUrl}/v1/machines/${this.machineId}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { "Content-Type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        ...(signal ? { signal } : {}),
      });
    } catch (e) {
      throw new ApiError(0, "NETWORK", e instanceof Error ? e.message : String(e));
    }
    const text = await r.text();
    let json: Record<string, any> = {};
    try {
      json = JSON.parse(text);
    } catch {}
    if (!r.ok) {
      const err = (json.error ?? {}) as Record<string, unknown>;
      throw new ApiError(r.status, String(err.code ?? "HTTP_ERROR"), String(err.message ?? text.slice(0, 200)), err);
    }
    return json as T;
  }

  poll(after: string, waitSeconds: number, signal?: AbortSignal) {
    const q = new URLSearchParams({ after, limit: "10", wait_seconds: String(waitSeconds) });
    return this.req<PollResponse>("GET", `/commands?${q}`, undefined, signal);
  }

  observe(sequence: number, png: Buffer) {
    return this.req<ObservationResponse>("POST", "/observations", {
      sequence,
      mime_type: "image/png",
      data: png.toString("base64"),
    });
  }

  result(commandId: string, r: ResultBody) {
    return this.req<{ accepted: true; duplicate: boolean }>("POST", `/commands/${commandId}/results`, r);
  }

  heartbeat(status?: Record<string, unknown>) {
    return this.req<HeartbeatResponse>("POST", "/heartbeat", status ? { status } : {});
  }
}

/** POST /v1/machines/external with the owner's API key (enrollment only). */
export async function enroll(
  baseUrl: string,
  apiKey: string,
  idempotencyKey: string,
  body: Record<string, unknown>,
): Promise<{ machine_id: string; device_token: string; capabilities: string[] }> {
  const r = await fetch(`${baseUrl}/v1/machines/external`, {
    method: "POST",
    headers: { "X-API-Key": apiKey, "Content-Type": "application/json", "Idempotency-Key": idempotencyKey },
    body: JSON.stringify(body),
  });
  const json = (await r.json()) as Record<string, any>;
  if (r.status !== 201) {
    throw new ApiError(
      r.status,
      String(json.error?.code ?? "HTTP_ERROR"),
      String(json.error?.message ?? ""),
      json.error ?? {},
    );
  }
  return json as { machine_id: string; device_token: string; capabilities: string[] };
}
