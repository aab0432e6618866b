import type { NextConfig } from "next";

// The console talks only to apps/api, same-origin through these rewrites (never to the database).
const api = process.env.API_URL ?? `http://127.0.0.1:${process.env.PORT_API ?? process.env.PORT ?? 8080}`;

const config: NextConfig = {
  reactStrictMode: true,
  poweredByHeader: false,
  transpilePackages: ["@cua/ui"],
  async rewrites() {
    return [
      { source: "/v1/:path*", destination: `${api}/v1/:path*` },
      { source: "/trpc/:path*", destination: `${api}/trpc/:path*` },
      { source: "/docs", destination: `${api}/docs` },
      { source: "/docs/:path*", destination: `${api}/docs/:path*` },
      { source: "/openapi.json", destination: `${api}/openapi.json` },
    ];
  },
};

export default config;
