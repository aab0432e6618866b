// The MCP server on the API (DECISIONS "Compatibility amendments", bullet "MCP server"):
//   POST /mcp                              Streamable HTTP, stateless (a fresh SDK server and transport per
//                                          request, JSON answers), so any API process answers any request
//   GET|DELETE /mcp                        405 METHOD_NOT_ALLOWED envelope (no server stream, no session)
//   GET /.well-known/mcp/server-card.json  the server card (name, version, transports, auth, tools, prompts)
//   GET /llms.txt                          the API and MCP entry points for agents
// Credentials as in REST: `Authorization: Bearer <key>` (or X-API-Key). A wrong key is 401 with the
// envelope before any MCP message is read; without a key the session can list tools and prompts and call
// the two public tools, and every other tool answers the REST route's 401 as an isError result. Each tool
// call runs its REST route in process (app.inject) with the session's credential (./call.ts).
import { CoreError } from "@cua/base/errors";
import { authenticateKey } from "@cua/core/keys/authenticate-key";
import type { OperationContext } from "@cua/core/operations/define";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AppDeps } from "../app-deps.ts";
import { renderError } from "../http/render-error.ts";
import { readApiKey } from "../http/v1-auth.ts";
import { baseUrlOf, header } from "../trpc/context.ts";
import type { RestForward } from "./call.ts";
import { mcpOperations } from "./operations.ts";
import { PROMPTS } from "./prompts.ts";
import { createMcpServer, MCP_INSTRUCTIONS, MCP_SERVER_NAME } from "./server.ts";
import { generateTools, type McpTool } from "./tools.ts";

/** The stdio command (./stdio.ts) as a desktop MCP client launches it from a checkout of this repository. */
export const STDIO_COMMAND = { command: "npm", args: ["run", "-s", "mcp"], env: ["SVC_API_KEY", "SVC_BASE_URL"] };

function credentialHeaders(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  const auth = header(req, "authorization");
  const xkey = header(req, "x-api-key");
  if (auth !== undefined) out.authorization = auth;
  if (xkey !== undefined) out["x-api-key"] = xkey;
  return out;
}

export function registerMcp(app: FastifyInstance, deps: AppDeps): void {
  let tools: McpTool[] | undefined;
  const toolList = () => (tools ??= generateTools(mcpOperations()));

  app.post("/mcp", async (req, reply) => {
    const cred = credentialHeaders(req);
    // as in REST: a credential that is sent must be valid (401 envelope, WWW-Authenticate) before anything else
    const principal = Object.keys(cred).length
      ? await authenticateKey(deps, readApiKey({ xApiKey: cred["x-api-key"], authorization: cred.authorization }))
      : undefined;
    const baseUrl = baseUrlOf({ deps, req });
    const forward: RestForward = async (r) => {
      const res = await app.inject({
        method: r.method as "GET",
        url: r.url,
        headers: {
          ...cred,
          // the caller's host, so docs_url and Link name the address the client used (as in REST)
          ...(req.headers.host ? { host: req.headers.host } : {}),
          accept: "application/json",
          "user-agent": `svc-mcp/${deps.version}`,
          ...(r.body !== undefined ? { "content-type": "application/json" } : {}),
          ...(r.idempotencyKey !== undefined ? { "idempotency-key": r.idempotencyKey } : {}),
        },
        ...(r.body !== undefined ? { payload: JSON.stringify(r.body) } : {}),
      });
      return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
    };
    const server = createMcpServer({
      tools: toolList(),
      version: deps.version,
      forward,
      render: (err) => renderError(err, String(req.id), baseUrl),
      runLocal: async (op, input) => {
        const ctx: OperationContext = {
          deps,
          caller: null,
          requestId: String(req.id),
          endpoint: `MCP ${op.mcp?.tool ?? op.id}`,
          header: () => undefined,
          res: { headers: {}, creditsCharged: 0 },
        };
        return op.handler!(ctx, input);
      },
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.setHeader("X-Service-Request-Id", String(req.id));
    if (principal) {
      // DECISIONS "Compatibility amendments": every response to an API key names its kind
      reply.raw.setHeader("X-Service-Key-Kind", principal.mode);
      if (principal.mode === "test") reply.raw.setHeader("X-Service-Test-Mode", "true");
    }
    reply.raw.on("close", () => {
      void transport.close();
      void server.close();
    });
    transport.onerror = (err) => req.log.warn({ err }, "mcp transport error");
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      req.log.error({ err }, "mcp request failed");
      if (!reply.raw.headersSent) {
        const r = renderError(new CoreError("INTERNAL_ERROR"), String(req.id), baseUrl);
        reply.raw.writeHead(r.status, { ...r.headers, "content-type": "application/json" });
        reply.raw.end(JSON.stringify(r.body));
      } else reply.raw.end();
    }
  });

  // the SDK's clients treat a 405 on GET as "no server stream" and carry on; the body is the service's envelope
  const notAllowed = async (req: FastifyRequest) => {
    throw new CoreError(
      "METHOD_NOT_ALLOWED",
      `${req.method} /mcp: this MCP server is stateless; POST JSON-RPC to /mcp.`,
      {
        suggestion: "POST JSON-RPC messages to /mcp (Streamable HTTP, JSON answers).",
      },
    );
  };
  app.get("/mcp", notAllowed);
  app.delete("/mcp", notAllowed);

  app.get("/.well-known/mcp/server-card.json", async (req) => serverCard(baseUrlOf({ deps, req }), deps, toolList()));
  app.get("/llms.txt", async (req, reply) =>
    reply.type("text/plain; charset=utf-8").send(llmsTxt(baseUrlOf({ deps, req }), toolList())),
  );
}

export function serverCard(baseUrl: string, deps: Pick<AppDeps, "version">, tools: readonly McpTool[]) {
  return {
    $schema: "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json",
    version: "1.0",
    protocolVersion: LATEST_PROTOCOL_VERSION,
    supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
    serverInfo: { name: MCP_SERVER_NAME, title: "Service", version: deps.version },
    description: "Computer-use API as MCP tools: screenshot prediction, cloud desktop machines, schedules, usage.",
    instructions: MCP_INSTRUCTIONS,
    websiteUrl: `${baseUrl}/docs`,
    transport: { type: "streamable-http", endpoint: "/mcp" },
    remotes: [{ type: "streamable-http", url: `${baseUrl}/mcp` }],
    transports: [
      { type: "streamable-http", url: `${baseUrl}/mcp`, session: "stateless" },
      { type: "stdio", ...STDIO_COMMAND, note: "from a checkout of the repository; forwards to SVC_BASE_URL/mcp" },
    ],
    authentication: {
      required: true,
      schemes: ["bearer"],
      header: "Authorization: Bearer <API key> (or X-API-Key)",
      keys: "sk-svc-live-... (billed) or sk-svc-test-... (sandbox, free)",
      public_tools: tools.filter((t) => t.op.auth === "public").map((t) => t.name),
    },
    capabilities: { tools: { listChanged: false }, prompts: { listChanged: false } },
    tools: tools.map((t) => ({
      name: t.name,
      title: t.listing.title,
      description: t.listing.description,
      group: t.group,
      requires_key: t.op.auth !== "public",
      ...(t.op.scope ? { scope: t.op.scope } : {}),
    })),
    prompts: PROMPTS.map((p) => p.listing),
  };
}

export function llmsTxt(baseUrl: string, tools: readonly McpTool[]): string {
  const groups = new Map<string, McpTool[]>();
  for (const t of tools) groups.set(t.group, [...(groups.get(t.group) ?? []), t]);
  const lines = [
    "# Service",
    "",
    "> Computer-use API: predict the next UI action from a screenshot, ground elements, drive cloud desktop",
    "> machines, run agent tasks and schedules. REST under /v1 with an API key; the same operations as MCP tools.",
    "",
    "Authenticate with `Authorization: Bearer <API key>` (or `X-API-Key`). Keys `sk-svc-test-...` are a free sandbox.",
    "Errors are `{error: {code, message, type, request_id, retryable, ...}}`.",
    "",
    "## API",
    "",
    `- [OpenAPI document](${baseUrl}/openapi.json): every /v1 operation, scope, schema and error code`,
    `- [API docs](${baseUrl}/docs): reference pages`,
    `- [Error codes](${baseUrl}/docs/errors): every error code and what to do`,
    "",
    "## MCP",
    "",
    `- [Streamable HTTP endpoint](${baseUrl}/mcp): POST JSON-RPC, stateless, Bearer API key`,
    `- [Server card](${baseUrl}/.well-known/mcp/server-card.json): name, version, transports, auth, tools`,
    `- stdio: \`${STDIO_COMMAND.command} ${STDIO_COMMAND.args.join(" ")}\` in the repository, with SVC_API_KEY and SVC_BASE_URL`,
    "",
    "## MCP tools",
    "",
  ];
  for (const [g, ts] of groups) {
    lines.push(`- ${g}: ${ts.map((t) => `\`${t.name}\``).join(", ")}`);
  }
  lines.push("", "## MCP prompts", "");
  for (const p of PROMPTS) lines.push(`- \`${p.listing.name}\`: ${p.listing.description}`);
  return `${lines.join("\n")}\n`;
}
