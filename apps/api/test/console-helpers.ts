// Drives the console's tRPC procedures the way the browser's client (httpBatchLink) does: plain fetch,
// `?batch=1` with inputs keyed by position, cookies, Origin.
export interface TrpcRes {
  status: number;
  headers: Headers;
  body: any;
  /** result.data on success */
  data: any;
  /** the service's error envelope (error.data.svc) on failure */
  error: any;
  setCookie: string | null;
}

export async function trpc(
  base: string,
  path: string,
  opts: {
    input?: unknown;
    cookie?: string;
    origin?: string | null;
    query?: boolean;
    headers?: Record<string, string>;
  } = {},
): Promise<TrpcRes> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.cookie) headers.cookie = opts.cookie;
  let url = `${base}/trpc/${path}?batch=1`;
  const inputs = JSON.stringify({ 0: opts.input });
  let init: RequestInit;
  if (opts.query) {
    url += `&input=${encodeURIComponent(inputs)}`;
    init = { method: "GET", headers };
  } else {
    if (opts.origin !== null) headers.origin = opts.origin ?? base;
    headers["content-type"] = "application/json";
    init = { method: "POST", headers, body: inputs };
  }
  const r = await fetch(url, init);
  const text = await r.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {}
  const one = Array.isArray(body) ? body[0] : body;
  return {
    status: r.status,
    headers: r.headers,
    body: one,
    data: one?.result?.data,
    error: one?.error?.data?.svc,
    setCookie: r.headers.get("set-cookie"),
  };
}

/** "svc_session=<token>" from a Set-Cookie header. */
export function sessionCookie(setCookie: string | null): string {
  if (!setCookie) throw new Error("no Set-Cookie");
  const first = setCookie.split(";")[0]!;
  if (!first.startsWith("svc_session=")) throw new Error(`unexpected cookie ${setCookie}`);
  return first;
}

let n = 0;
export const uniqueEmail = (tag = "op") => `${tag}-${Date.now().toString(36)}-${n++}@example.com`;

export async function signUp(base: string, email = uniqueEmail(), password = "correct horse battery") {
  const r = await trpc(base, "console.auth.signUp", { input: { email, password } });
  if (r.status !== 200) throw new Error(`sign-up failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { email, password, cookie: sessionCookie(r.setCookie), res: r };
}
