// /v1/machines: managed machines (live: real desktops; test: mock machines), external enrollment, and
// commands on any machine. Each procedure calls one core use case (packages/core/src/machines-service).
// Per-command scopes (actions, batches, file ops) are checked here because the scope depends on the body.
import { CoreError } from "@cua/core/errors";
import type { Principal } from "@cua/core/keys/authenticate-key";
import type { Scope } from "@cua/core/keys/scopes";
import { getMachine, listMachines } from "@cua/core/machines-service/list-machines";
import {
  actionScope,
  batchScopesOf,
  fileScope,
  runAction,
  runBatchOnMachine,
  runBrowserOp,
  runFileOpOnMachine,
  runTerminal,
} from "@cua/core/machines-service/machine-commands";
import { machineConnection } from "@cua/core/machines-service/machine-connection";
import { machineLifecycle } from "@cua/core/machines-service/machine-lifecycle";
import { screenshotMachine } from "@cua/core/machines-service/machine-screenshot";
import { machinesHealth } from "@cua/core/machines-service/machines-health";
import { MACHINE_PRICING } from "@cua/core/machines-service/pricing";
import { provisionMachine } from "@cua/core/machines-service/provision-machine";
import { listSnapshots, restoreMachine, snapshotMachine } from "@cua/core/machines-service/snapshot-machine";
import { terminateMachine } from "@cua/core/machines-service/terminate-machine";
import { updateMachine } from "@cua/core/machines-service/update-machine";
import { z } from "zod";
import type { Ctx } from "../trpc/context.ts";
import { idempotent } from "../trpc/idempotent.ts";
import { router } from "../trpc/init.ts";
import { apiProcedure, publicProcedure } from "../trpc/procedures.ts";
import {
  ActionBody,
  ActionResponse,
  BatchBodySchema,
  BatchResponse,
  ConnectionResponse,
  DISPATCH_ERRORS,
  ID_ERRORS,
  LifecycleResponse,
  ListQuery,
  ListResponse,
  MachineIdParam,
  MachineRecord,
  MachinesHealth,
  machineMeta,
  OpBody,
  OpResponse,
  PatchBody,
  PricingResponse,
  ProvisionBody,
  ProvisionResponse,
  RestoreBody,
  RUNNING_ERRORS,
  ScreenshotResponse,
  SnapshotBody,
  SnapshotRecord,
  TerminalBody,
  TerminalResponse,
  TerminateResponse,
} from "./machines.types.ts";

type AuthedCtx = Ctx & { principal: Principal };

/** 403 INSUFFICIENT_SCOPE for scopes that depend on the request (per command, per file op). */
export function requireScopes(ctx: AuthedCtx, scopes: (Scope | undefined)[]): void {
  for (const scope of scopes) {
    if (scope && !ctx.principal.scopes.includes(scope)) {
      throw new CoreError("INSUFFICIENT_SCOPE", `This request requires the "${scope}" scope.`, {
        required_scope: scope,
        current_scopes: ctx.principal.scopes,
      });
    }
  }
}

const Lifecycle = (op: "start" | "stop" | "restart", summary: string, description: string) =>
  apiProcedure
    .meta(
      machineMeta("POST", `/machines/{id}/${op}`, summary, description, {
        scope: "machines:write",
        errors: [...RUNNING_ERRORS, "INSUFFICIENT_CREDITS", "UPSTREAM_UNAVAILABLE"],
      }),
    )
    .input(MachineIdParam)
    .output(LifecycleResponse)
    .mutation(({ ctx, input }) => machineLifecycle(ctx.deps, ctx.principal, input.id, op));

const BrowserOpInput = OpBody.extend({
  id: MachineIdParam.shape.id,
  op: z
    .string()
    .describe(
      "open, navigate, click, type, dom, clickables, state, info, scroll, close, screenshot, wait, list-tabs, open-tab, close-tab, switch-tab",
    ),
});
const FileOpInput = OpBody.extend({
  id: MachineIdParam.shape.id,
  op: z
    .string()
    .describe(
      "read, exists, list, list-directory, download, list-downloads (files:read); write, edit, append, delete, delete-directory (files:write)",
    ),
});

export const machinesRouter = router({
  // static paths first: trpc-to-openapi matches procedures in definition order
  pricing: apiProcedure
    .meta(
      machineMeta(
        "GET",
        "/machines/pricing",
        "Machine pricing",
        "Effective per-minute metering rates, the provisioning gate and the snapshot price.",
        {
          scope: "machines:read",
        },
      ),
    )
    .input(z.void())
    .output(PricingResponse)
    .query(() => MACHINE_PRICING),
  health: publicProcedure
    .meta({
      ...machineMeta(
        "GET",
        "/machines/health",
        "Machine service health",
        "Public. Whether a live desktop can be provisioned on this server now: the managed provider's programs (missing_packages names the Debian packages to install), root, and the last desktop start; degraded otherwise.",
      ),
      public: true,
    })
    .input(z.void())
    .output(MachinesHealth)
    .query(({ ctx }) => machinesHealth(ctx.deps)),
  provision: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines",
        "Provision a machine",
        "Live keys: a real Linux desktop (Xvfb, openbox, Chromium) created in the background: 202 with status provisioning, then running. Needs a wallet balance of 20 credits (a gate, not a fee); metered per minute while it exists (GET /v1/machines/pricing). Test keys: a mock machine, running at once (201), at most 5. os_type windows: 403 FEATURE_NOT_AVAILABLE on this provider.",
        {
          scope: "machines:write",
          successStatus: 202,
          idempotent: true,
          errors: [
            "FEATURE_NOT_AVAILABLE",
            "NOT_FOUND",
            "INSUFFICIENT_CREDITS",
            "TEST_MACHINE_LIMIT",
            "UPSTREAM_UNAVAILABLE",
            "IDEMPOTENCY_IN_FLIGHT",
            "IDEMPOTENCY_KEY_REUSED",
            "INVALID_IDEMPOTENCY_KEY",
          ],
        },
      ),
    )
    .input(ProvisionBody)
    .output(ProvisionResponse)
    .mutation(({ ctx, input }) =>
      idempotent(ctx, input, async () => {
        const r = await provisionMachine(ctx.deps, ctx.principal, input);
        ctx.res.status = r.status;
        return { machine: r.machine, provisioning: r.provisioning };
      }),
    ),
  list: apiProcedure
    .meta(
      machineMeta(
        "GET",
        "/machines",
        "List machines",
        "Newest first. limit 1..200 (default 50), cursor from next_cursor, optional status filter (default: all but terminated).",
        {
          scope: "machines:read",
          errors: ["INVALID_LIMIT", "INVALID_CURSOR", "INVALID_STATUS_FILTER"],
        },
      ),
    )
    .input(ListQuery)
    .output(ListResponse)
    .query(({ ctx, input }) => listMachines(ctx.deps, ctx.principal, input)),
  get: apiProcedure
    .meta(
      machineMeta("GET", "/machines/{id}", "Get a machine", "The machine record.", {
        scope: "machines:read",
        errors: ID_ERRORS,
      }),
    )
    .input(MachineIdParam)
    .output(MachineRecord)
    .query(({ ctx, input }) => getMachine(ctx.deps, ctx.principal, input.id)),
  update: apiProcedure
    .meta(
      machineMeta(
        "PATCH",
        "/machines/{id}",
        "Update a machine",
        "ttl_minutes 5..10080 sets the TTL counted from now (extends it); 0 clears it. display_name and metadata replace. An empty body is 400 EMPTY_UPDATE.",
        {
          scope: "machines:write",
          errors: [...RUNNING_ERRORS, "EMPTY_UPDATE", "UNSUPPORTED_MACHINE_KIND"],
        },
      ),
    )
    .input(PatchBody.extend(MachineIdParam.shape))
    .output(MachineRecord)
    .mutation(({ ctx, input }) => {
      const { id, ...body } = input;
      return updateMachine(ctx.deps, ctx.principal, id, body);
    }),
  terminate: apiProcedure
    .meta(
      machineMeta(
        "DELETE",
        "/machines/{id}",
        "Terminate a machine",
        "Any status -> terminated. Managed: processes, user and home directory are removed (snapshots are kept). External: revokes the device token and outstanding commands. A terminated machine: 409 INVALID_STATE.",
        {
          scope: "machines:write",
          errors: RUNNING_ERRORS,
        },
      ),
    )
    .input(MachineIdParam)
    .output(TerminateResponse)
    .mutation(({ ctx, input }) => terminateMachine(ctx.deps, ctx.principal, input.id)),
  start: Lifecycle(
    "start",
    "Start a machine",
    "stopped or suspended -> running (suspended for billing: needs credits). External machines: opens the dispatch gate, bumps the fencing token and cancels pending commands.",
  ),
  stop: Lifecycle(
    "stop",
    "Stop a machine",
    "running -> stopped; the home directory is kept. External machines: closes the dispatch gate, bumps the fencing token and cancels pending commands.",
  ),
  restart: Lifecycle(
    "restart",
    "Restart a machine",
    "running -> running (the desktop restarts). External machines: bumps the fencing token and cancels pending commands.",
  ),
  snapshot: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/snapshot",
        "Snapshot a machine",
        "Archives the home directory (1 credit on live keys; X-Credits-Charged). 202. External machines: 400 UNSUPPORTED_MACHINE_KIND.",
        {
          scope: "snapshots:write",
          successStatus: 202,
          errors: [...RUNNING_ERRORS, "UNSUPPORTED_MACHINE_KIND", "INSUFFICIENT_CREDITS"],
        },
      ),
    )
    .input(
      z.object({ id: MachineIdParam.shape.id, name: z.string().min(1).max(200).optional().describe("snapshot name") }),
    )
    .output(SnapshotRecord)
    .mutation(async ({ ctx, input }) => {
      SnapshotBody.parse(input.name === undefined ? {} : { name: input.name });
      const r = await snapshotMachine(ctx.deps, ctx.principal, input.id, input.name, ctx.requestId);
      ctx.res.status = 202;
      ctx.res.creditsCharged = r.creditsCharged;
      if (r.balance !== null) {
        ctx.res.headers["X-Credits-Charged"] = String(r.creditsCharged);
        ctx.res.headers["X-Credits-Remaining"] = String(r.balance);
      }
      return r.snapshot;
    }),
  snapshots: apiProcedure
    .meta(
      machineMeta("GET", "/machines/{id}/snapshots", "List a machine's snapshots", "Newest first.", {
        scope: "machines:read",
        errors: ID_ERRORS,
      }),
    )
    .input(MachineIdParam)
    .output(z.object({ snapshots: z.array(SnapshotRecord) }))
    .query(({ ctx, input }) => listSnapshots(ctx.deps, ctx.principal, input.id)),
  restore: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/restore",
        "Restore a snapshot",
        "Replaces the home directory with a snapshot's content (any snapshot of the account and mode); the machine keeps its status.",
        {
          scope: "snapshots:write",
          errors: [...RUNNING_ERRORS, "UNSUPPORTED_MACHINE_KIND"],
        },
      ),
    )
    .input(RestoreBody.extend(MachineIdParam.shape))
    .output(z.object({ machine_id: z.string(), status: z.string(), snapshot_id: z.string(), message: z.string() }))
    .mutation(({ ctx, input }) => restoreMachine(ctx.deps, ctx.principal, input.id, input.snapshot_id)),
  screenshot: apiProcedure
    .meta(
      machineMeta(
        "GET",
        "/machines/{id}/screenshot",
        "Screenshot",
        "The full screen as base64 PNG; with `Accept: image/png` the raw PNG bytes instead. 502 SCREENSHOT_FAILED when the capture errors.",
        {
          scope: "machines:read",
          errors: [...RUNNING_ERRORS, "SCREENSHOT_FAILED", ...DISPATCH_ERRORS],
        },
      ),
    )
    .input(MachineIdParam)
    .output(ScreenshotResponse)
    .query(async ({ ctx, input }) => {
      const s = await screenshotMachine(ctx.deps, ctx.principal, input.id);
      return {
        machine_id: s.machine_id,
        image_b64: s.png.toString("base64"),
        mime_type: s.mime_type,
        width: s.width,
        height: s.height,
        captured_at: s.captured_at,
      };
    }),
  connection: apiProcedure
    .meta(
      machineMeta(
        "GET",
        "/machines/{id}/connection",
        "Connection details",
        "VNC password and port, a noVNC websocket URL (and noVNC page); SSH fields are null where the provider offers no SSH. Cache-Control: no-store. External machines: 409 INVALID_STATE.",
        {
          scope: "connection:read",
          errors: [...RUNNING_ERRORS, "FEATURE_NOT_AVAILABLE"],
        },
      ),
    )
    .input(MachineIdParam)
    .output(ConnectionResponse)
    .query(async ({ ctx, input }) => {
      ctx.res.headers["Cache-Control"] = "no-store";
      return machineConnection(ctx.deps, ctx.principal, input.id);
    }),
  action: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/actions",
        "Run one command",
        "Allowlist and scopes: click, double_click, right_click, move, type, key_press, key_combo, scroll, drag, wait, screenshot, browser_navigate, browser_click, browser_type (actions:exec); browser_execute (browser:execute); terminal_execute (terminal:exec); file_read (files:read); file_write (files:write). Unknown command: 422. timeout_ms 1000..120000 (default 30000).",
        {
          errors: [
            ...RUNNING_ERRORS,
            "SCREENSHOT_FAILED",
            "FEATURE_NOT_AVAILABLE",
            ...DISPATCH_ERRORS,
            "INSUFFICIENT_SCOPE",
          ],
        },
      ),
    )
    .input(ActionBody.extend(MachineIdParam.shape))
    .output(ActionResponse)
    .mutation(({ ctx, input }) => {
      requireScopes(ctx, [actionScope(input.command)]);
      const { id, ...body } = input;
      return runAction(ctx.deps, ctx.principal, id, body);
    }),
  batch: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/actions/batch",
        "Run a batch of commands",
        "1 to 50 steps in order; each step needs its command's scope. stop_on_error (default true) skips the rest after a failure (aborted: true). Every step is validated before any runs.",
        {
          errors: [...RUNNING_ERRORS, "FEATURE_NOT_AVAILABLE", ...DISPATCH_ERRORS, "INSUFFICIENT_SCOPE"],
        },
      ),
    )
    .input(BatchBodySchema.extend(MachineIdParam.shape))
    .output(BatchResponse)
    .mutation(async ({ ctx, input }) => {
      const { id, ...body } = input;
      requireScopes(ctx, batchScopesOf(body));
      const r = await runBatchOnMachine(ctx.deps, ctx.principal, id, body);
      return { ...r, request_id: ctx.requestId };
    }),
  browser: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/browser/{op}",
        "Browser operation",
        "One of sixteen ops on the machine's Chromium: open, navigate, click, type, dom, clickables, state, info, scroll, close, screenshot, wait, list-tabs, open-tab, close-tab, switch-tab. Unknown op: 400 UNKNOWN_BROWSER_OP. browser_execute is not here (use actions with browser:execute).",
        {
          scope: "actions:exec",
          errors: [...RUNNING_ERRORS, "UNKNOWN_BROWSER_OP", "FEATURE_NOT_AVAILABLE", ...DISPATCH_ERRORS],
        },
      ),
    )
    .input(BrowserOpInput)
    .output(OpResponse)
    .mutation(({ ctx, input }) => {
      const { id, op, ...body } = input;
      return runBrowserOp(ctx.deps, ctx.principal, id, op, body);
    }),
  terminal: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/terminal",
        "Run a terminal command",
        "bash on Linux; session_id keeps a persistent shell (cwd, environment); cwd relative to home; timeout_ms 1000..120000; result.output holds at most 5000 characters.",
        {
          scope: "terminal:exec",
          errors: [...RUNNING_ERRORS, ...DISPATCH_ERRORS],
        },
      ),
    )
    .input(TerminalBody.extend(MachineIdParam.shape))
    .output(TerminalResponse)
    .mutation(({ ctx, input }) => {
      const { id, ...body } = input;
      return runTerminal(ctx.deps, ctx.principal, id, body);
    }),
  files: apiProcedure
    .meta(
      machineMeta(
        "POST",
        "/machines/{id}/files/{op}",
        "File operation",
        "Confined to the machine's home directory. files:read: read, exists, list, list-directory, download, list-downloads; files:write: write, edit, append, delete, delete-directory. Unknown op: 400 UNKNOWN_FILE_OP.",
        {
          errors: [...RUNNING_ERRORS, "UNKNOWN_FILE_OP", "INSUFFICIENT_SCOPE", ...DISPATCH_ERRORS],
        },
      ),
    )
    .input(FileOpInput)
    .output(OpResponse)
    .mutation(({ ctx, input }) => {
      const { id, op, ...body } = input;
      requireScopes(ctx, [fileScope(op)]);
      return runFileOpOnMachine(ctx.deps, ctx.principal, id, op, body);
    }),
});
