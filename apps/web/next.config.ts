import type { NextConfig } from "next";

// The console talks only to apps/api: /trpc, /v1, /docs and /openapi.json are forwarded by route handlers
// (app/trpc, app/v1, app/docs, app/openapi.json -> lib/api-proxy.ts) to API_URL, read at request time.
const config: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  transpilePackages: ["@cua/ui", "@cua/core", "@cua/base"],
};

export default config;
