// Issue 11 benchmark: the MCP server's Streamable HTTP endpoint next to the REST route a tool runs, on the
// real service (its own process, PostgreSQL). A tool call = one POST /mcp (fresh stateless SDK server and
// transport) + the REST route run in process (Fastify inject); the ratio is the MCP overhead.
//   npx tsx bench/mcp.ts
import { type Figures, load, row, startBenchService } from "./lib.ts";

const vs = (f: Figures, rest: Figures) => `  ${(f.rps / rest.rps).toFixed(2)}x REST rps`;

const rpc = (method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });

export async function benchMcp() {
  const svc = await startBenchService();
  const key = svc.account.test_key;
  const mcp = {
    url: `${svc.url}/mcp`,
    method: "POST" as const,
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
  };
  try {
    console.log("\n== MCP over Streamable HTTP vs the REST route it runs (20 connections, 8 s each) ==");
    const rest = await load({ url: `${svc.url}/v1/usage`, headers: { authorization: `Bearer ${key}` } });
    console.log(row("GET /v1/usage (REST)", rest));
    const call = await load({ ...mcp, body: rpc("tools/call", { name: "get_usage", arguments: {} }) });
    console.log(row("POST /mcp tools/call get_usage", call) + vs(call, rest));
    const list = await load({ ...mcp, body: rpc("tools/list", {}) });
    console.log(row("POST /mcp tools/list (26 tools)", list) + vs(list, rest));
    const pub = await load({ ...mcp, body: rpc("tools/call", { name: "get_capabilities", arguments: {} }) });
    console.log(row("POST /mcp tools/call get_capabilities (local)", pub) + vs(pub, rest));
  } finally {
    await svc.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchMcp();
  process.exit(0);
}
