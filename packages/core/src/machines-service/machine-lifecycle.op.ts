// POST /v1/machines/{id}/start | stop | restart: one definition each, one use case (machineLifecycle).
import { defineOperation } from "../operations/define.ts";
import { machineLifecycle } from "./machine-lifecycle.ts";
import { RUNNING_ERRORS } from "./op-errors.ts";
import { LifecycleResponse, MachineIdParam } from "./schemas.ts";

const errors = [...RUNNING_ERRORS, "INSUFFICIENT_CREDITS", "UPSTREAM_UNAVAILABLE"] as const;

export const startMachineOp = defineOperation({
  id: "machines.start",
  method: "POST",
  path: "/machines/{id}/start",
  scope: "machines:write",
  input: MachineIdParam,
  output: LifecycleResponse,
  errors,
  docs: {
    tags: ["Machines"],
    summary: "Start a machine",
    description:
      "stopped or suspended -> running (suspended for billing: needs credits). External machines: opens the dispatch gate, bumps the fencing token and cancels pending commands.",
  },
  console: "shared",
  mcp: { tool: "start_machine", group: "machines" },
  handler: (ctx, input) => machineLifecycle(ctx.deps, ctx.caller, input.id, "start"),
});

export const stopMachineOp = defineOperation({
  id: "machines.stop",
  method: "POST",
  path: "/machines/{id}/stop",
  scope: "machines:write",
  input: MachineIdParam,
  output: LifecycleResponse,
  errors,
  docs: {
    tags: ["Machines"],
    summary: "Stop a machine",
    description:
      "running -> stopped; the home directory is kept. External machines: closes the dispatch gate, bumps the fencing token and cancels pending commands.",
  },
  console: "shared",
  mcp: { tool: "stop_machine", group: "machines" },
  handler: (ctx, input) => machineLifecycle(ctx.deps, ctx.caller, input.id, "stop"),
});

export const restartMachineOp = defineOperation({
  id: "machines.restart",
  method: "POST",
  path: "/machines/{id}/restart",
  scope: "machines:write",
  input: MachineIdParam,
  output: LifecycleResponse,
  errors,
  docs: {
    tags: ["Machines"],
    summary: "Restart a machine",
    description:
      "running -> running (the desktop restarts). External machines: bumps the fencing token and cancels pending commands.",
  },
  console: "shared",
  handler: (ctx, input) => machineLifecycle(ctx.deps, ctx.caller, input.id, "restart"),
});
