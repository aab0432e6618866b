import { defineOperation } from "../operations/define.ts";
import { machineConnection } from "./machine-connection.ts";
import { RUNNING_ERRORS } from "./op-errors.ts";
import { ConnectionResponse, MachineIdParam } from "./schemas.ts";

export const machineConnectionOp = defineOperation({
  id: "machines.connection",
  method: "GET",
  path: "/machines/{id}/connection",
  scope: "connection:read",
  input: MachineIdParam,
  output: ConnectionResponse,
  errors: [...RUNNING_ERRORS, "FEATURE_NOT_AVAILABLE"],
  docs: {
    tags: ["Machines"],
    summary: "Connection details",
    description:
      "VNC password and port, a noVNC websocket URL (and noVNC page); SSH fields are null where the provider offers no SSH. Cache-Control: no-store. External machines: 409 INVALID_STATE.",
  },
  console: "shared",
  handler: (ctx, input) => {
    ctx.res.headers["Cache-Control"] = "no-store";
    return machineConnection(ctx.deps, ctx.caller, input.id);
  },
});
