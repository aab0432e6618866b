import { defineOperation } from "../operations/define.ts";
import { RUNNING_ERRORS } from "./op-errors.ts";
import { MachineIdParam, TerminateResponse } from "./schemas.ts";
import { terminateMachine } from "./terminate-machine.ts";

export const terminateMachineOp = defineOperation({
  id: "machines.terminate",
  method: "DELETE",
  path: "/machines/{id}",
  scope: "machines:write",
  input: MachineIdParam,
  output: TerminateResponse,
  errors: RUNNING_ERRORS,
  docs: {
    tags: ["Machines"],
    summary: "Terminate a machine",
    description:
      "Any status -> terminated. Managed: processes, user and home directory are removed (snapshots are kept). External: revokes the device token and outstanding commands. A terminated machine: 409 INVALID_STATE.",
  },
  console: "shared",
  mcp: { tool: "terminate_machine", group: "machines" },
  handler: (ctx, input) => terminateMachine(ctx.deps, ctx.caller, input.id),
});
