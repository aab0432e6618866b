// The MCP server's input: a list of operation definitions that carry an `mcp: {tool, group}` field.
//   1. core's registry (THE list): `operations.filter(op => op.mcp)`; it wins over everything below;
//   2. the public discovery operations (get_capabilities, get_pricing), until the registry lists them;
//   3. groups not yet migrated to the registry: read from the /v1 router's procedure of the same id (its
//      openapi meta, scope and zod input), so the tool list is whole while the migration is under way;
//   4. the planned schedule operations (./planned-schedules.ts) until schedules exist.
// Steps 2 to 4 are transitional; each entry disappears by itself once the registry holds its tool.
import type { AnyOperation, McpGroup } from "@cua/core/operations/define";
import { operations } from "@cua/core/operations/registry";
import { capabilitiesOp, pricingOp } from "@cua/core/pricing/discovery.op";
import { z } from "zod";
import type { Meta } from "../trpc/init.ts";
import { appRouter } from "../trpc/router.ts";
import { PLANNED_SCHEDULE_OPERATIONS } from "./planned-schedules.ts";

export type McpOperation = AnyOperation & {
  mcp: { tool: string; group: McpGroup };
  /** listed before its use case exists: forwarded to its REST path, which answers what it answers */
  planned?: boolean;
};

/** DECISIONS "Compatibility amendments", bullet "MCP server": the 26 tools, in the order the server lists them. */
export const MCP_TOOLS: readonly { tool: string; group: McpGroup; id: string }[] = [
  { tool: "predict", group: "predict", id: "predict.predict" },
  { tool: "ground", group: "predict", id: "predict.ground" },
  { tool: "parse", group: "predict", id: "predict.parse" },
  { tool: "create_session", group: "predict", id: "sessions.create" },
  { tool: "session_predict", group: "predict", id: "sessions.predict" },
  { tool: "end_session", group: "predict", id: "sessions.delete" },
  { tool: "list_machines", group: "machines", id: "machines.list" },
  { tool: "create_machine", group: "machines", id: "machines.provision" },
  { tool: "get_machine", group: "machines", id: "machines.get" },
  { tool: "start_machine", group: "machines", id: "machines.start" },
  { tool: "stop_machine", group: "machines", id: "machines.stop" },
  { tool: "terminate_machine", group: "machines", id: "machines.terminate" },
  { tool: "get_screenshot", group: "machines", id: "machines.screenshot" },
  { tool: "run_action", group: "machines", id: "machines.action" },
  { tool: "run_actions_batch", group: "machines", id: "machines.batch" },
  { tool: "browser_op", group: "machines", id: "machines.browser" },
  { tool: "terminal_exec", group: "machines", id: "machines.terminal" },
  { tool: "file_op", group: "machines", id: "machines.files" },
  { tool: "list_schedules", group: "schedules", id: "schedules.list" },
  { tool: "create_schedule", group: "schedules", id: "schedules.create" },
  { tool: "pause_schedule", group: "schedules", id: "schedules.pause" },
  { tool: "resume_schedule", group: "schedules", id: "schedules.resume" },
  { tool: "run_schedule_now", group: "schedules", id: "schedules.run" },
  { tool: "get_usage", group: "account", id: "usage.get" },
  { tool: "get_capabilities", group: "public", id: "discovery.capabilities" },
  { tool: "get_pricing", group: "public", id: "discovery.pricing" },
];

function hasMcp(op: AnyOperation): op is McpOperation {
  return op.mcp !== undefined;
}

/** A not-yet-migrated /v1 procedure seen as a definition (transitional: see the header). */
function fromRouter(id: string, mcp: McpOperation["mcp"]): McpOperation | undefined {
  const procs = (appRouter as unknown as { _def: { procedures: Record<string, any> } })._def.procedures;
  const def = procs[id]?._def as { meta?: Meta; inputs?: z.ZodType[]; output?: z.ZodType } | undefined;
  const meta = def?.meta;
  if (!def || !meta?.openapi) return undefined;
  return {
    id,
    method: meta.openapi.method,
    path: meta.openapi.path as `/${string}`,
    auth: meta.public ? "public" : "api_key",
    ...(meta.scope ? { scope: meta.scope } : {}),
    idempotency: meta.idempotencyRequired ? "required-per-account" : meta.idempotent ? "reserve-and-replay" : "none",
    input: def.inputs?.[0] ?? z.void(),
    output: def.output ?? z.unknown(),
    successStatus: (meta.successStatus ?? 200) as 200,
    billing: "see the REST operation",
    errors: (meta.errors ?? []) as AnyOperation["errors"],
    docs: {
      summary: meta.openapi.summary ?? id,
      description: meta.openapi.description ?? "",
      tags: meta.openapi.tags ?? [],
    },
    transport: "json",
    console: false,
    mcp,
  };
}

/** The definitions the MCP server is generated from (registry first; see the header). */
export function mcpOperations(
  registry: readonly AnyOperation[] = operations as unknown as readonly AnyOperation[],
): McpOperation[] {
  const out = registry.filter(hasMcp);
  const have = new Set(out.map((o) => o.mcp.tool));
  const add = (op: McpOperation | undefined) => {
    if (op && !have.has(op.mcp.tool)) {
      out.push(op);
      have.add(op.mcp.tool);
    }
  };
  for (const op of [capabilitiesOp, pricingOp]) add(op as unknown as McpOperation);
  for (const t of MCP_TOOLS) if (!have.has(t.tool)) add(fromRouter(t.id, { tool: t.tool, group: t.group }));
  for (const op of PLANNED_SCHEDULE_OPERATIONS) add({ ...(op as unknown as McpOperation), planned: true });
  return out;
}
