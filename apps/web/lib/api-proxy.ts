// Same-origin proxy from the console to apps/api for /trpc, /v1, /docs and /openapi.json. A route handler
// rather than a next.config rewrite because rewrites are fixed at build time, while API_URL is read here at
// request time. It forwards method, path, query, headers and body; it tells the API the browser's host and
// scheme (X-Forwarded-Host, X-Forwarded-Proto) so the API's Origin check and Secure cookies see the console's
// origin; and it streams the answer back (server-sent events included), Set-Cookie headers intact.
import { apiUrl } from "./env.ts";

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

export async function proxyToApi(req: Request): Promise<Response> {
  const incoming = new URL(req.url);
  const target = `${apiUrl()}${incoming.pathname}${incoming.search}`;
  const headers = new Headers();
  req.headers.forEach((value, key) => {
    if (!HOP_BY_HOP.has(key.toLowerCase())) headers.set(key, value);
  });
  const host = req.headers.get("host");
  if (host && !headers.has("x-forwarded-host")) headers.set("x-forwarded-host", host);
  if (!headers.has("x-forwarded-proto")) headers.set("x-forwarded-proto", incoming.protocol.replace(":", ""));
  headers.set("accept-encoding", "identity");
  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  let upstream: Response;
  try {
    upstream = await fetch(target, {
      method: req.method,
      headers,
      body: hasBody ? await req.arrayBuffer() : undefined,
      redirect: "manual",
      cache: "no-store",
      signal: req.signal,
    });
  } catch {
    return Response.json(
      {
        error: {
          code: "UPSTREAM_UNAVAILABLE",
          message: "The console cannot reach the API.",
          type: "server_error",
          retryable: true,
        },
      },
      { status: 502 },
    );
  }
  const out = new Headers();
  upstream.headers.forEach((value, key) => {
    const k = key.toLowerCase();
    if (HOP_BY_HOP.has(k) || k === "set-cookie" || k === "content-encoding") return;
    out.set(key, value);
  });
  for (const c of upstream.headers.getSetCookie()) out.append("set-cookie", c);
  // keep event streams unbuffered: compression middleware leaves no-transform responses alone
  if (out.get("content-type")?.startsWith("text/event-stream")) out.set("cache-control", "no-cache, no-transform");
  return new Response(upstream.body, { status: upstream.status, statusText: upstream.statusText, headers: out });
}
