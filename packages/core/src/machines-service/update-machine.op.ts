import { defineOperation } from "../operations/define.ts";
import { RUNNING_ERRORS } from "./op-errors.ts";
import { MachineRecord } from "./record.ts";
import { MachineIdParam, PatchBody } from "./schemas.ts";
import { updateMachine } from "./update-machine.ts";

export const updateMachineOp = defineOperation({
  id: "machines.update",
  method: "PATCH",
  path: "/machines/{id}",
  scope: "machines:write",
  input: PatchBody.extend(MachineIdParam.shape),
  output: MachineRecord,
  errors: [...RUNNING_ERRORS, "EMPTY_UPDATE", "UNSUPPORTED_MACHINE_KIND"],
  docs: {
    tags: ["Machines"],
    summary: "Update a machine",
    description:
      "ttl_minutes 5..10080 sets the TTL counted from now (extends it); 0 clears it. display_name and metadata replace. An empty body is 400 EMPTY_UPDATE.",
  },
  console: "shared",
  handler: (ctx, input) => {
    const { id, ...body } = input;
    return updateMachine(ctx.deps, ctx.caller, id, body);
  },
});
