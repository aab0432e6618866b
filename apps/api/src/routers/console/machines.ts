// Machines as the operator sees them: both modes in one list, provisioning, lifecycle, snapshots, the live
// screenshot, noVNC connection details, single actions and terminal commands. Each procedure calls the same
// core use case as /v1/machines, as the account with every scope in the machine's mode.
import { operatorPrincipal, operatorPrincipalFor } from "@cua/core/console/operator-principal";
import { getMachine, listMachines } from "@cua/core/machines-service/list-machines";
import { runAction, runTerminal } from "@cua/core/machines-service/machine-commands";
import { machineConnection } from "@cua/core/machines-service/machine-connection";
import { machineLifecycle } from "@cua/core/machines-service/machine-lifecycle";
import { screenshotMachine } from "@cua/core/machines-service/machine-screenshot";
import { MACHINE_PRICING } from "@cua/core/machines-service/pricing";
import { provisionMachine } from "@cua/core/machines-service/provision-machine";
import { MachineRecord } from "@cua/core/machines-service/record";
import { ProvisionBody } from "@cua/core/machines-service/schemas";
import { listSnapshots, snapshotMachine } from "@cua/core/machines-service/snapshot-machine";
import { terminateMachine } from "@cua/core/machines-service/terminate-machine";
import { z } from "zod";
import { consoleProcedure } from "../../trpc/console-procedures.ts";
import { router } from "../../trpc/init.ts";
import {
  ConsoleAction,
  ConsoleLifecycle,
  ConsoleMachineId,
  ConsoleMachineList,
  ConsoleProvision,
  ConsoleSnapshot,
  ConsoleTerminal,
} from "./machines.types.ts";

export const consoleMachinesRouter = router({
  pricing: consoleProcedure.input(z.void()).query(() => MACHINE_PRICING),
  list: consoleProcedure
    .input(ConsoleMachineList)
    .output(z.object({ machines: z.array(MachineRecord).describe("both modes, newest first") }))
    .query(async ({ ctx, input }) => {
      const [live, test] = await Promise.all(
        (["live", "test"] as const).map((mode) =>
          listMachines(ctx.deps, operatorPrincipal(ctx.operator, mode), { limit: 200, status: input.status }),
        ),
      );
      const machines = [...live!.machines, ...test!.machines].sort((a, b) => b.created_at.localeCompare(a.created_at));
      return { machines };
    }),
  get: consoleProcedure
    .input(ConsoleMachineId)
    .output(MachineRecord)
    .query(({ ctx, input }) => getMachine(ctx.deps, operatorPrincipalFor(ctx.operator, input.id), input.id)),
  provision: consoleProcedure.input(ConsoleProvision).mutation(async ({ ctx, input }) => {
    const { mode, ...body } = input;
    const r = await provisionMachine(ctx.deps, operatorPrincipal(ctx.operator, mode), ProvisionBody.parse(body));
    return { machine: r.machine, provisioning: r.provisioning };
  }),
  lifecycle: consoleProcedure
    .input(ConsoleLifecycle)
    .mutation(({ ctx, input }) =>
      machineLifecycle(ctx.deps, operatorPrincipalFor(ctx.operator, input.id), input.id, input.op),
    ),
  terminate: consoleProcedure
    .input(ConsoleMachineId)
    .mutation(({ ctx, input }) => terminateMachine(ctx.deps, operatorPrincipalFor(ctx.operator, input.id), input.id)),
  snapshot: consoleProcedure.input(ConsoleSnapshot).mutation(async ({ ctx, input }) => {
    const r = await snapshotMachine(
      ctx.deps,
      operatorPrincipalFor(ctx.operator, input.id),
      input.id,
      input.name,
      ctx.requestId,
    );
    return r.snapshot;
  }),
  snapshots: consoleProcedure
    .input(ConsoleMachineId)
    .query(({ ctx, input }) => listSnapshots(ctx.deps, operatorPrincipalFor(ctx.operator, input.id), input.id)),
  screenshot: consoleProcedure.input(ConsoleMachineId).query(async ({ ctx, input }) => {
    const s = await screenshotMachine(ctx.deps, operatorPrincipalFor(ctx.operator, input.id), input.id);
    return {
      machine_id: s.machine_id,
      image_b64: s.png.toString("base64"),
      mime_type: s.mime_type,
      width: s.width,
      height: s.height,
      captured_at: s.captured_at,
    };
  }),
  connection: consoleProcedure
    .input(ConsoleMachineId)
    .query(({ ctx, input }) => machineConnection(ctx.deps, operatorPrincipalFor(ctx.operator, input.id), input.id)),
  action: consoleProcedure.input(ConsoleAction).mutation(({ ctx, input }) => {
    const { id, ...body } = input;
    return runAction(ctx.deps, operatorPrincipalFor(ctx.operator, id), id, body);
  }),
  terminal: consoleProcedure.input(ConsoleTerminal).mutation(({ ctx, input }) => {
    const { id, ...body } = input;
    return runTerminal(ctx.deps, operatorPrincipalFor(ctx.operator, id), id, body);
  }),
});
