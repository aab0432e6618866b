// The MCP server's input: the operation definitions of core's registry (THE list) that carry an
// `mcp: {tool, group}` field: `operations.filter(op => op.mcp)`.
import type { AnyOperation, McpGroup } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";

export type McpOperation = AnyOperation & { mcp: { tool: string; group: McpGroup } };

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
  return registry.filter(hasMcp);
}
