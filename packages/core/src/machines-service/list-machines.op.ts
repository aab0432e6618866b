import { defineOperation } from "../operations/define.ts";
import { getMachine, listMachines } from "./list-machines.ts";
import { ID_ERRORS } from "./op-errors.ts";
import { MachineRecord } from "./record.ts";
import { ListQuery, ListResponse, MachineIdParam } from "./schemas.ts";

export const listMachinesOp = defineOperation({
  id: "machines.list",
  method: "GET",
  path: "/machines",
  scope: "machines:read",
  input: ListQuery,
  output: ListResponse,
  errors: ["INVALID_LIMIT", "INVALID_CURSOR", "INVALID_STATUS_FILTER"],
  docs: {
    tags: ["Machines"],
    summary: "List machines",
    description:
      "Newest first. limit 1..200 (default 50), cursor from next_cursor, optional status filter (default: all but terminated).",
  },
  console: "shared",
  mcp: { tool: "list_machines", group: "machines" },
  handler: (ctx, input) => listMachines(ctx.deps, ctx.caller, input),
});

export const getMachineOp = defineOperation({
  id: "machines.get",
  method: "GET",
  path: "/machines/{id}",
  scope: "machines:read",
  input: MachineIdParam,
  output: MachineRecord,
  errors: ID_ERRORS,
  docs: { tags: ["Machines"], summary: "Get a machine", description: "The machine record." },
  console: "shared",
  mcp: { tool: "get_machine", group: "machines" },
  handler: (ctx, input) => getMachine(ctx.deps, ctx.caller, input.id),
});
