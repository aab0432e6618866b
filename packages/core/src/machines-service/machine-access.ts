// The port other use cases (agent runs, workflow task steps, schedules) use to drive a machine:
// one call resolves a caller's machine id to something that can take screenshots and run allowlisted
// commands, whatever kind of machine it is (managed, mock, external).
//
//   400 INVALID_MACHINE_ID  malformed id
//   404 MACHINE_NOT_FOUND   unknown id, another account's machine, or an id of the other mode
//   409 INVALID_STATE       the machine is not running (current_state, allowed_from: ["running"])

import { CoreError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import { checkOnScreen, parseCommand, parseTimeout } from "@cua/machines/commands";
import type { CommandResult, MachineHandle, MachineProvider } from "@cua/machines/provider";
import { dispatchExternal, outcomeToCommand } from "./external-dispatch.ts";
import { readFrame } from "./frame-store.ts";
import { withManagedReconcile } from "./reconcile-machine.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";
import { EXTERNAL_PROVIDER } from "./runtime.ts";

export type { CommandResult } from "@cua/machines/provider";

export interface RunnableMachine {
  id: string;
  kind: "managed" | "external";
  status: string;
  screen: { width: number; height: number };
  /** full-screen capture; 502 SCREENSHOT_FAILED when it errors */
  screenshot(): Promise<{ png: Buffer; width: number; height: number }>;
  /** one allowlisted command (422 for unknown commands or bad parameters); success false on op failures */
  execute(command: string, parameters: object, options?: { timeoutMs?: number }): Promise<CommandResult>;
}

export function providerFor(deps: MachinesDeps, m: Pick<Machine, "provider" | "isTest">): MachineProvider {
  if (m.provider === deps.machines.mock.name || m.isTest) return deps.machines.mock;
  const managed = deps.machines.managed;
  if (!managed || managed.name !== m.provider) {
    throw new CoreError(
      "UPSTREAM_UNAVAILABLE",
      `The machine provider "${m.provider}" is not available on this server.`,
    );
  }
  return managed;
}

export function handleOf(m: Machine): MachineHandle {
  if (!m.handle) {
    throw new CoreError("INVALID_STATE", "The machine has not finished provisioning.", {
      current_state: m.status,
      allowed_from: ["running"],
    });
  }
  return m.handle as unknown as MachineHandle;
}

/** A managed machine's provider call; keeps the stored handle fresh when the provider changed it. */
export function bindManaged(deps: MachinesDeps, m: Machine): { provider: MachineProvider; handle: MachineHandle } {
  return { provider: providerFor(deps, m), handle: handleOf(m) };
}

/**
 * Browser ops may (re)start Chromium, which changes the provider's handle (its process list): keep the
 * stored handle current so that reconcile after a restart knows the right processes. One write, only
 * when something changed.
 */
export async function syncHandle(deps: MachinesDeps, m: Machine, provider: MachineProvider): Promise<void> {
  const current = (provider as { currentHandle?: (id: string) => MachineHandle | null }).currentHandle?.(m.id);
  if (!current || JSON.stringify(current) === JSON.stringify(m.handle)) return;
  await deps.db.machine
    .updateMany({ where: { id: m.id, status: { not: "terminated" } }, data: { handle: current as object } })
    .catch(() => {});
}

export async function externalScreenshot(deps: MachinesDeps, m: Machine, timeoutMs?: number) {
  const o = await dispatchExternal(deps, m, "screenshot", {}, { timeoutMs: timeoutMs ?? 30_000 });
  const frameId = o.result.frame_id;
  if (o.status !== "succeeded" || typeof frameId !== "string") {
    throw new CoreError("SCREENSHOT_FAILED", o.error?.message ?? "The external machine could not capture its screen.");
  }
  return readFrame(deps, m.id, frameId);
}

export async function getRunnableMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  machineId: string,
): Promise<RunnableMachine> {
  return runnableMachine(deps, principal, machineId, await loadMachine(deps, principal, machineId));
}

/**
 * getRunnableMachine with a row the caller read already (an agent step reads it with its run: one
 * statement instead of two). The row must come from a read scoped to the principal's account and mode;
 * null is a machine that read did not find.
 */
export function runnableMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  machineId: string,
  m: Machine | null,
): RunnableMachine {
  if (!m || m.id !== machineId || m.accountId !== principal.accountId || m.mode !== principal.mode)
    throw new CoreError("MACHINE_NOT_FOUND", "The machine does not exist.");
  assertMachineStatus(m, ["running"], "driving the machine");
  return m.kind === "external" || m.provider === EXTERNAL_PROVIDER
    ? externalRunnable(deps, m)
    : managedRunnable(deps, m);
}

/** An external machine as a RunnableMachine: every command is one driver round trip. */
export function externalRunnable(deps: MachinesDeps, m: Machine): RunnableMachine {
  const screen = { width: m.screenWidth, height: m.screenHeight };
  return {
    id: m.id,
    kind: "external",
    status: m.status,
    screen,
    async screenshot() {
      const s = await externalScreenshot(deps, m);
      return { png: s.png, width: s.width, height: s.height };
    },
    async execute(command, parameters, options) {
      const parsed = parseCommand(command, parameters);
      checkOnScreen(parsed, screen);
      const timeoutMs = options?.timeoutMs ?? parseTimeout(undefined);
      if (parsed.command === "screenshot") {
        const started = performance.now();
        const s = await externalScreenshot(deps, m, timeoutMs);
        return {
          command: "screenshot",
          success: true,
          result: {
            image_b64: s.png.toString("base64"),
            mime_type: s.mime,
            width: s.width,
            height: s.height,
            captured_at: s.captured_at,
          },
          error: null,
          duration_ms: Math.round(performance.now() - started),
        };
      }
      const o = await dispatchExternal(deps, m, parsed.command, parsed.params as Record<string, unknown>, {
        timeoutMs,
      });
      return outcomeToCommand(parsed.command, o);
    },
  };
}

/**
 * A managed (or mock) machine as a RunnableMachine: provider calls with the stored handle; a call that
 * fails for a reason of the machine reconciles it first (reconcile-machine.ts).
 */
export function managedRunnable(deps: MachinesDeps, m: Machine): RunnableMachine {
  bindManaged(deps, m); // 409 before provisioning finished, 503 without the provider
  return {
    id: m.id,
    kind: "managed",
    status: m.status,
    screen: { width: m.screenWidth, height: m.screenHeight },
    async screenshot() {
      const s = await withManagedReconcile(deps, m, ({ provider, handle }) => provider.screenshot(handle));
      return { png: s.png, width: s.width, height: s.height };
    },
    execute(command, parameters, options) {
      return withManagedReconcile(deps, m, ({ provider, handle }) =>
        provider.execute(handle, command, parameters, options),
      );
    },
  };
}
