import os from "node:os";
import { defineOperation } from "../operations/define.ts";
import { connectionSummary } from "./connection-summary.ts";
import { provisionMachine } from "./provision-machine.ts";
import { loadMachine } from "./record.ts";
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
      "Live keys: a real Linux desktop (Xvfb, openbox, Chromium) created in the background: 202 with status provisioning, then running. Needs a wallet balance of 20 credits (a gate, not a fee); metered per minute while it exists (GET /v1/machines/pricing). Test keys: a mock machine, running at once (201), at most 5. os_type windows: 400 FEATURE_NOT_AVAILABLE on this provider. cpu_cores, memory_gb and storage_gb are requests: `resources` answers what the machine got (mock machines honour them; the local desktop provider shares the host). `connection` names the endpoints (nulls while provisioning).",
  },
  console: "shared",
  mcp: { tool: "create_machine", group: "machines" },
  handler: async (ctx, input) => {
    const r = await provisionMachine(ctx.deps, ctx.caller, input);
    ctx.res.status = r.status;
    const row = await loadMachine(ctx.deps, ctx.caller, r.machine.id);
    const connection = await connectionSummary(ctx.deps, row);
    // mock machines (test keys) honour the requested size; the local desktops share the host
    const resources =
      ctx.caller.mode === "test"
        ? {
            cpu_cores: input.cpu_cores ?? 2,
            memory_gb: input.memory_gb ?? 4,
            storage_gb: input.storage_gb ?? 20,
            shared_host: false,
          }
        : {
            cpu_cores: os.availableParallelism(),
            memory_gb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
            storage_gb: null,
            shared_host: true,
          };
    return { machine: r.machine, provisioning: r.provisioning, connection, resources };
  },
});
