import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { limitQuery, listOf } from "../operations/list.ts";
import { ID_ERRORS, RUNNING_ERRORS } from "./op-errors.ts";
import { MachineIdParam, RestoreBody, SnapshotBody, SnapshotRecord } from "./schemas.ts";
import { listSnapshots, restoreMachine, snapshotMachine } from "./snapshot-machine.ts";

export const snapshotMachineOp = defineOperation({
  id: "machines.snapshot",
  method: "POST",
  path: "/machines/{id}/snapshot",
  scope: "snapshots:write",
  successStatus: 202,
  input: z.object({
    id: MachineIdParam.shape.id,
    name: z.string().min(1).max(200).optional().describe("snapshot name"),
  }),
  output: SnapshotRecord,
  billing: "1 credit on live keys",
  errors: [...RUNNING_ERRORS, "UNSUPPORTED_MACHINE_KIND", "INSUFFICIENT_CREDITS"],
  docs: {
    tags: ["Machines"],
    summary: "Snapshot a machine",
    description:
      "Archives the home directory (1 credit on live keys; X-Credits-Charged). 202. External machines: 400 UNSUPPORTED_MACHINE_KIND.",
  },
  console: "shared",
  handler: async (ctx, input) => {
    SnapshotBody.parse(input.name === undefined ? {} : { name: input.name });
    const r = await snapshotMachine(ctx.deps, ctx.caller, input.id, input.name, ctx.requestId);
    ctx.res.creditsCharged = r.creditsCharged;
    if (r.balance !== null) {
      ctx.res.headers["X-Credits-Charged"] = String(r.creditsCharged);
      ctx.res.headers["X-Credits-Remaining"] = String(r.balance);
    } else if (ctx.caller.mode === "test") ctx.res.headers["X-Credits-Charged"] = "0"; // compatibility amendments
    return r.snapshot;
  },
});

export const listSnapshotsOp = defineOperation({
  id: "machines.snapshots",
  method: "GET",
  path: "/machines/{id}/snapshots",
  scope: "machines:read",
  input: MachineIdParam.extend({
    limit: limitQuery(),
    cursor: z.string().max(512).optional().describe("next_cursor of the previous page"),
  }),
  output: listOf(SnapshotRecord, "the machine's snapshots, newest first"),
  errors: [...ID_ERRORS, "INVALID_LIMIT", "INVALID_CURSOR"],
  docs: { tags: ["Machines"], summary: "List a machine's snapshots", description: "Newest first; the list shape." },
  console: "shared",
  handler: (ctx, input) => listSnapshots(ctx.deps, ctx.caller, input.id, input),
});

export const restoreMachineOp = defineOperation({
  id: "machines.restore",
  method: "POST",
  path: "/machines/{id}/restore",
  scope: "snapshots:write",
  input: RestoreBody.extend(MachineIdParam.shape),
  output: z.object({ machine_id: z.string(), status: z.string(), snapshot_id: z.string(), message: z.string() }),
  errors: [...RUNNING_ERRORS, "UNSUPPORTED_MACHINE_KIND"],
  docs: {
    tags: ["Machines"],
    summary: "Restore a snapshot",
    description:
      "Replaces the home directory with a snapshot's content (any snapshot of the account and mode); the machine keeps its status.",
  },
  console: "shared",
  handler: (ctx, input) => restoreMachine(ctx.deps, ctx.caller, input.id, input.snapshot_id),
});
