import { defineOperation } from "../operations/define.ts";
import { provisionMachine } from "./provision-machine.ts";
import { ProvisionBody, ProvisionResponse } from "./schemas.ts";

export const provisionMachineOp = defineOperation({
  id: "machines.provision",
  method: "POST",
  path: "/machines",
  scope: "machines:write",
  idempotency: "reserve-and-replay",
  successStatus: 202,
  input: ProvisionBody,
  output: ProvisionResponse,
  billing: "needs a wallet balance of 20 credits (a gate, not a fee); metered per minute while it exists",
  errors: ["FEATURE_NOT_AVAILABLE", "NOT_FOUND", "INSUFFICIENT_CREDITS", "TEST_MACHINE_LIMIT", "UPSTREAM_UNAVAILABLE"],
  docs: {
    tags: ["Machines"],
    summary: "Provision a machine",
    description:
      "Live keys: a real Linux desktop (Xvfb, openbox, Chromium) created in the background: 202 with status provisioning, then running. Needs a wallet balance of 20 credits (a gate, not a fee); metered per minute while it exists (GET /v1/machines/pricing). Test keys: a mock machine, running at once (201), at most 5. os_type windows: 403 FEATURE_NOT_AVAILABLE on this provider.",
  },
  console: "shared",
  mcp: { tool: "create_machine", group: "machines" },
  handler: async (ctx, input) => {
    const r = await provisionMachine(ctx.deps, ctx.caller, input);
    ctx.res.status = r.status;
    return { machine: r.machine, provisioning: r.provisioning };
  },
});
