// The stdio MCP command's configuration (docs/mcp.md "stdio"), validated once like apps/api/src/env.ts.
import { z } from "zod";

const StdioEnv = z.object({
  SVC_BASE_URL: z
    .url()
    .default("http://127.0.0.1:8080")
    .describe("the running service (its /mcp endpoint receives every message)"),
  SVC_API_KEY: z
    .string()
    .regex(/^sk-svc-(live|test)-\S+$/, "SVC_API_KEY must be an sk-svc-live-... or sk-svc-test-... key")
    .optional()
    .describe("the API key every call carries; without it only the public tools answer"),
});

export type McpStdioEnv = z.infer<typeof StdioEnv>;

export function loadMcpStdioEnv(source: Record<string, string | undefined> = process.env): McpStdioEnv {
  const r = StdioEnv.safeParse({
    SVC_BASE_URL: source.SVC_BASE_URL || undefined,
    SVC_API_KEY: source.SVC_API_KEY || undefined,
  });
  if (!r.success) throw new Error(r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
  return r.data;
}
