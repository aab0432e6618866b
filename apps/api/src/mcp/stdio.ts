// The stdio MCP server a desktop MCP client launches (`npm run -s mcp` from the repository; docs/mcp.md).
// It relays every JSON-RPC message between stdin/stdout and the service's Streamable HTTP endpoint
// (SVC_BASE_URL/mcp) with `Authorization: Bearer SVC_API_KEY`, using the SDK's own two transports. The
// tools, prompts and answers are therefore the service's, exactly as over HTTP; this process holds no
// state and needs no database. stdout carries only protocol messages; notes go to stderr.
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  type InitializeResult,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";
import { loadMcpStdioEnv } from "./env.ts";

export async function runStdioBridge(
  env = loadMcpStdioEnv(),
  io: { stdin?: NodeJS.ReadableStream; stdout?: NodeJS.WritableStream } = {},
): Promise<{ closed: Promise<void> }> {
  const url = new URL("/mcp", env.SVC_BASE_URL);
  const headers: Record<string, string> = env.SVC_API_KEY ? { Authorization: `Bearer ${env.SVC_API_KEY}` } : {};
  const upstream = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const local = new StdioServerTransport(io.stdin as never, io.stdout as never);
  const initializeIds = new Set<string | number>();

  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let closing = false;
  const closeAll = async () => {
    if (closing) return;
    closing = true;
    await Promise.allSettled([upstream.close(), local.close()]);
    resolveClosed();
  };

  local.onmessage = (msg: JSONRPCMessage) => {
    if (isJSONRPCRequest(msg) && msg.method === "initialize") initializeIds.add(msg.id);
    upstream.send(msg).catch((err: Error) => {
      // (upstream.onerror has logged it)
      // a request must get an answer, or the client waits forever
      if (isJSONRPCRequest(msg)) {
        void local.send({
          jsonrpc: "2.0",
          id: msg.id,
          error: { code: -32000, message: `${url.href}: ${err.message}` },
        });
      }
    });
  };
  upstream.onmessage = (msg: JSONRPCMessage) => {
    if (isJSONRPCResultResponse(msg) && initializeIds.delete(msg.id)) {
      // later requests carry the negotiated version (MCP-Protocol-Version), as the SDK's own client does
      upstream.setProtocolVersion((msg.result as InitializeResult).protocolVersion);
    }
    void local.send(msg);
  };
  upstream.onerror = (err) => process.stderr.write(`svc-mcp: ${err.message}\n`);
  local.onerror = (err) => process.stderr.write(`svc-mcp: ${err.message}\n`);
  local.onclose = () => void closeAll();

  await upstream.start();
  await local.start();
  (io.stdin ?? process.stdin).on("end", () => void closeAll());
  if (!env.SVC_API_KEY) process.stderr.write("svc-mcp: no SVC_API_KEY: only get_capabilities and get_pricing answer\n");
  return { closed };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runStdioBridge()
    .then(({ closed }) => closed)
    .then(() => process.exit(0))
    .catch((e: Error) => {
      process.stderr.write(`svc-mcp: ${e.message}\n`);
      process.exit(1);
    });
}
