// The MCP server: the SDK's low-level Server with the generated tools (./tools.ts) and the two prompts.
// The SDK's high-level McpServer would validate arguments itself and answer its own error text; tools here
// hand the arguments to the operation's REST route unchanged, so a bad argument gets the route's
// VALIDATION_ERROR envelope with details, exactly as /v1 answers it.
import type { CoreError } from "@cua/base/errors";
import { isCoreError } from "@cua/base/errors";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import {
  errorResult,
  IDEMPOTENCY_META,
  type RenderEnvelope,
  type RestForward,
  restRequestOf,
  toolResultOf,
  validateLocal,
} from "./call.ts";
import type { McpOperation } from "./operations.ts";
import { PROMPTS } from "./prompts.ts";
import type { McpTool } from "./tools.ts";

export const MCP_SERVER_NAME = "svc";

export const MCP_INSTRUCTIONS =
  "Tools of the Service's computer-use API: predict/ground/parse screenshots, drive cloud desktop machines " +
  "(create, screenshot, act, browser, terminal, files), schedules and usage. Each tool is one REST operation " +
  "with the same input and scope. Errors come back as isError results carrying the API's error envelope " +
  "{error: {code, message, type, request_id, retryable, ...}}. Test keys (sk-svc-test-...) are free.";

export interface McpServerOptions {
  tools: readonly McpTool[];
  version: string;
  /** the REST API with this session's credential */
  forward: RestForward;
  render: RenderEnvelope;
  /** runs a definition that has no REST route (public discovery) */
  runLocal: (op: McpOperation, input: unknown) => Promise<unknown>;
}

// The SDK builds a new Ajv (elicitation schemas) per Server unless given one; this server elicits nothing and
// makes a Server per request, so one validator serves them all (it was 4% of a tool call's CPU).
const sharedValidator = new AjvJsonSchemaValidator();

export function createMcpServer(o: McpServerOptions): Server {
  const server = new Server(
    { name: MCP_SERVER_NAME, title: "Service", version: o.version },
    {
      capabilities: { tools: { listChanged: false }, prompts: { listChanged: false } },
      instructions: MCP_INSTRUCTIONS,
      jsonSchemaValidator: sharedValidator,
    },
  );
  const byName = new Map(o.tools.map((t) => [t.name, t]));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: o.tools.map((t) => t.listing) }));

  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult> => {
    const tool = byName.get(req.params.name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    const args = req.params.arguments;
    try {
      if (tool.op.path) {
        const rest = restRequestOf(tool.op, args);
        const key = req.params._meta?.[IDEMPOTENCY_META];
        if (typeof key === "string") rest.idempotencyKey = key;
        return toolResultOf(await o.forward(rest));
      }
      const out = await o.runLocal(tool.op, validateLocal(tool.op, args));
      return toolResultOf({
        status: 200,
        headers: { "content-type": "application/json" },
        body: Buffer.from(JSON.stringify(out)),
      });
    } catch (e) {
      if (isCoreError(e)) return errorResult(e as CoreError, o.render);
      throw e;
    }
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS.map((p) => p.listing) }));

  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const p = PROMPTS.find((x) => x.listing.name === req.params.name);
    if (!p) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${req.params.name}`);
    const args = req.params.arguments ?? {};
    for (const a of p.listing.arguments ?? []) {
      if (a.required && !args[a.name]) {
        throw new McpError(ErrorCode.InvalidParams, `Prompt ${p.listing.name} needs the argument "${a.name}".`);
      }
    }
    return p.render(args);
  });

  return server;
}
