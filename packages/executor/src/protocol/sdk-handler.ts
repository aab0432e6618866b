// The SDK side, in process: the SDK's own serve() handler (inngest/edge, Request -> Response),
// unmodified, mounted on a copy of the app's client whose event API and signing key point at this
// executor. Requests are signed like the Inngest server signs them, so the SDK's signature check runs.
import { Inngest, type InngestFunction } from "inngest";
import { serve } from "inngest/edge";
import type { EventPayload, FunctionConfig } from "../store/store.ts";
import { canonicalJson, randomSigningKey, signBody } from "./signing.ts";

/** Where the executor's copy of the client sends events (never resolved: its fetch answers in process). */
export const EMBEDDED_ORIGIN = "http://inngest-executor.invalid";
const SERVE_URL = "http://localhost/api/inngest";

export interface SdkHandlerOptions {
  client: Inngest.Any;
  functions: InngestFunction.Any[];
  /** defaults to a random per-process key */
  signingKey?: string;
  /** events sent from inside functions (step.sendEvent, client.send on the copy) */
  onEvents(events: EventPayload[]): Promise<{ ids: string[] }>;
}

export interface SyncedApp {
  appId: string;
  functions: FunctionConfig[];
  sdk: string | null;
}

export interface SdkHandler {
  /** the app's client, re-pointed at this executor: its send() goes to the executor */
  client: Inngest.Any;
  /** POST a Call Request for one function; stepId "step" for discovery, or a hashed step id */
  call(fnId: string, stepId: string, body: Record<string, unknown>): Promise<Response>;
  /** in-band sync (PUT with x-inngest-sync-kind: in_band): the function configs, without any outbound call */
  sync(): Promise<SyncedApp>;
}

function jsonResponse(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

export function createSdkHandler(opts: SdkHandlerOptions): SdkHandler {
  const signingKey = opts.signingKey ?? randomSigningKey();

  const embeddedFetch = (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    if (url.origin === EMBEDDED_ORIGIN && method === "POST" && /^\/e\/[^/]+$/.test(url.pathname)) {
      const raw = init?.body ?? (input instanceof Request ? await input.text() : null);
      let parsed: unknown;
      try {
        parsed = JSON.parse(typeof raw === "string" ? raw : new TextDecoder().decode(raw as ArrayBuffer));
      } catch {
        return jsonResponse(400, { error: "executor: event body is not JSON", status: 400 });
      }
      const events = (Array.isArray(parsed) ? parsed : [parsed]) as EventPayload[];
      try {
        const { ids } = await opts.onEvents(events);
        return jsonResponse(200, { ids, status: 200 });
      } catch (e) {
        return jsonResponse(400, { error: e instanceof Error ? e.message : String(e), status: 400 });
      }
    }
    return jsonResponse(501, {
      error: `executor: ${method} ${url.pathname} is an Inngest server API the embedded executor does not provide`,
      status: 501,
    });
  }) as typeof fetch;

  const base = (opts.client as unknown as { options: Record<string, unknown> }).options;
  const client = new Inngest({
    ...(base as { id: string }),
    isDev: false,
    baseUrl: EMBEDDED_ORIGIN,
    eventKey: "embedded-executor",
    signingKey,
    signingKeyFallback: undefined,
    fetch: embeddedFetch,
  } as ConstructorParameters<typeof Inngest>[0]);

  const handler = serve({ client, functions: opts.functions });

  async function request(
    method: string,
    query: string,
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const text = canonicalJson(body);
    const signature = signBody(text, signingKey, Math.floor(Date.now() / 1000));
    return handler(
      new Request(`${SERVE_URL}${query}`, {
        method,
        body: text,
        headers: {
          "content-type": "application/json",
          host: "localhost",
          "x-inngest-signature": signature,
          ...headers,
        },
      }),
    );
  }

  return {
    client,
    call(fnId, stepId, body) {
      const q = new URLSearchParams({ fnId, stepId });
      return request("POST", `?${q}`, body);
    },
    async sync() {
      const res = await request("PUT", "", { url: SERVE_URL }, { "x-inngest-sync-kind": "in_band" });
      const text = await res.text();
      if (res.status !== 200)
        throw new Error(`executor: in-band sync failed (HTTP ${res.status}): ${text.slice(0, 500)}`);
      const parsed = JSON.parse(text) as { app_id?: string; functions?: FunctionConfig[]; sdk?: string };
      if (!parsed.app_id || !Array.isArray(parsed.functions))
        throw new Error(`executor: in-band sync answered without app_id/functions`);
      return { appId: parsed.app_id, functions: parsed.functions, sdk: parsed.sdk ?? null };
    },
  };
}
