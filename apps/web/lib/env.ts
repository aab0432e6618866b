// The console server's configuration, read at request time (so `next start` honours it without a rebuild).
/** Base URL of apps/api, e.g. http://127.0.0.1:8080 */
export function apiUrl(): string {
  const raw = process.env.API_URL ?? `http://127.0.0.1:${process.env.PORT_API ?? "8080"}`;
  if (!/^https?:\/\/[^/]+/.test(raw)) throw new Error(`API_URL must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}
