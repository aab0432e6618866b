// The MCP server's input: a list of operation definitions that carry an `mcp: {tool, group}` field:
//   1. core's registry (THE list): `operations.filter(op => op.mcp)`; it wins over what follows;
//   2. the planned schedule operations (./planned-schedules.ts) until schedules exist (transitional: each one
//      disappears by itself once the registry holds an operation with its tool name).
import type { AnyOperation, McpGroup } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";
import { PLANNED_SCHEDULE_OPERATIONS } from "./planned-schedules.ts";

export type McpOperation = AnyOperation & {
  mcp: { tool: string; group: McpGroup };
  /** listed before its use case exists: forwarded to its REST path, which answers what it answers */
  planned?: boolean;
};

/** DECISIONS "Compatibility amendments", bullet "MCP server": the 26 tools, in the order the server lists them
 * (the order only: each definition names its own tool). */
export const MCP_TOOLS: readonly { tool: string; group: McpGroup }[] = [
  { tool: "predict", group: "predict" },
  { tool: "ground", group: "predict" },
  { tool: "parse", group: "predict" },
  { tool: "create_session", group: "predict" },
  { tool: "session_predict", group: "predict" },
  { tool: "end_session", group: "predict" },
  { tool: "list_machines", group: "machines" },
  { tool: "create_machine", group: "machines" },
  { tool: "get_machine", group: "machines" },
  { tool: "start_machine", group: "machines" },
  { tool: "stop_machine", group: "machines" },
  { tool: "terminate_machine", group: "machines" },
  { tool: "get_screenshot", group: "machines" },
  { tool: "run_action", group: "machines" },
  { tool: "run_actions_batch", group: "machines" },
  { tool: "browser_op", group: "machines" },
  { tool: "terminal_exec", group: "machines" },
  { tool: "file_op", group: "machines" },
  { tool: "list_schedules", group: "schedules" },
  { tool: "create_schedule", group: "schedules" },
  { tool: "pause_schedule", group: "schedules" },
  { tool: "resume_schedule", group: "schedules" },
  { tool: "run_schedule_now", group: "schedules" },
  { tool: "get_usage", group: "account" },
  { tool: "get_capabilities", group: "public" },
  { tool: "get_pricing", group: "public" },
];

function hasMcp(op: AnyOperation): op is McpOperation {
  return op.mcp !== undefined;
}

/** The definitions the MCP server is generated from (registry first; see the header). */
export function mcpOperations(
  registry: readonly AnyOperation[] = operations as unknown as readonly AnyOperation[],
): McpOperation[] {
  const out = registry.filter(hasMcp);
  const have = new Set(out.map((o) => o.mcp.tool));
  for (const op of PLANNED_SCHEDULE_OPERATIONS as unknown as readonly McpOperation[]) {
    if (!have.has(op.mcp.tool)) out.push({ ...op, planned: true });
  }
  return out;
}
