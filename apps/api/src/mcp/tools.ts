// The generator: MCP tools from operation definitions. A tool is its operation's input schema (the same
// object /v1 validates: path parameters plus query or body fields, as trpc-to-openapi merges them) as JSON
// Schema, its docs, scope and billing in the description, and hints from its method. Nothing about an
// operation is written here.
import type { McpGroup } from "@cua/core/operations/define";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { MCP_TOOLS, type McpOperation } from "./operations.ts";

export interface McpTool {
  name: string;
  group: McpGroup;
  op: McpOperation;
  /** the tools/list entry */
  listing: Tool;
}

const GROUP_ORDER: readonly McpGroup[] = ["predict", "machines", "schedules", "account", "public"];

/** JSON Schema of an operation's input as MCP wants it: always an object at the top level. */
export function inputJsonSchema(schema: z.ZodType): Tool["inputSchema"] {
  if (schema instanceof z.ZodVoid || schema instanceof z.ZodUndefined) {
    return { type: "object", properties: {}, additionalProperties: false };
  }
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete json.$schema;
  return { ...json, type: "object" } as Tool["inputSchema"];
}

export function restRoute(op: McpOperation): string | null {
  return op.path ? `${op.method} /v1${op.path}` : null;
}

function describe(op: McpOperation): string {
  const parts = [`${op.docs.summary}.`];
  if (op.docs.description) parts.push(op.docs.description);
  const route = restRoute(op);
  parts.push(route ? `REST: ${route}.` : "No REST route of its own.");
  parts.push(
    op.auth === "public"
      ? "No API key needed."
      : op.scope
        ? `Scope: ${op.scope}.`
        : "Scope: any valid key (or the scope the request names).",
  );
  if (op.billing && op.billing !== "free") {
    parts.push(`Billing: ${op.billing}.`);
  }
  return parts.join(" ");
}

function title(op: McpOperation): string {
  return op.docs.summary.replace(/\.$/, "");
}

/** One tool per definition, in the order of DECISIONS' list (tools it does not name last, by group). */
export function generateTools(ops: readonly McpOperation[]): McpTool[] {
  const rank = (o: McpOperation) => {
    const i = MCP_TOOLS.findIndex((t) => t.tool === o.mcp.tool);
    return i >= 0 ? i : MCP_TOOLS.length + GROUP_ORDER.indexOf(o.mcp.group);
  };
  return [...ops]
    .sort((a, b) => rank(a) - rank(b))
    .map((op) => {
      const readOnly = op.method === "GET";
      const destructive = op.method === "DELETE" || /terminate|delete/.test(op.id);
      return {
        name: op.mcp.tool,
        group: op.mcp.group,
        op,
        listing: {
          name: op.mcp.tool,
          title: title(op),
          description: describe(op),
          inputSchema: inputJsonSchema(op.input),
          annotations: {
            title: title(op),
            readOnlyHint: readOnly,
            destructiveHint: !readOnly && destructive,
            idempotentHint: readOnly,
            openWorldHint: op.mcp.group === "machines",
          },
          _meta: {
            "svc/group": op.mcp.group,
            "svc/operation": op.id,
            ...(op.scope ? { "svc/scope": op.scope } : {}),
            ...(restRoute(op) ? { "svc/rest": restRoute(op) } : {}),
          },
        },
      };
    });
}
