// GET /v1/machines/{id}/screenshot -> {machine_id, image_b64, mime_type, width, height, captured_at}
// (the raw bytes with Accept: image/png, served by the API's plain route from the same use case).
// 409 INVALID_STATE unless running; 502 SCREENSHOT_FAILED when the capture errors.
import { externalScreenshot } from "./machine-access.ts";
import { withManagedReconcile } from "./reconcile-machine.ts";
import type { MachinePrincipal } from "./record.ts";
import { assertMachineStatus, loadMachine } from "./record.ts";
import type { MachinesDeps } from "./runtime.ts";

export interface MachineScreenshot {
  machine_id: string;
  png: Buffer;
  mime_type: string;
  width: number;
  height: number;
  captured_at: string;
}

export async function screenshotMachine(
  deps: MachinesDeps,
  principal: MachinePrincipal,
  id: string,
): Promise<MachineScreenshot> {
  const m = await loadMachine(deps, principal, id);
  assertMachineStatus(m, ["running"], "a screenshot");
  if (m.kind === "external") {
    const s = await externalScreenshot(deps, m);
    return {
      machine_id: m.id,
      png: s.png,
      mime_type: s.mime,
      width: s.width,
      height: s.height,
      captured_at: s.captured_at,
    };
  }
  const s = await withManagedReconcile(deps, m, ({ provider, handle }) => provider.screenshot(handle));
  return {
    machine_id: m.id,
    png: s.png,
    mime_type: s.mime_type,
    width: s.width,
    height: s.height,
    captured_at: s.captured_at,
  };
}
