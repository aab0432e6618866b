// Reading stored frames back (decrypted) for the owner's screenshot of an external machine: from this process's
// frame cache when the driver posted the frame here, else from the frame store.
import { CoreError } from "@cua/base/errors";
import type { Screenshot } from "@cua/machines/provider";
import { openFrame } from "./frames.ts";
import type { MachinesDeps } from "./runtime.ts";

export async function readFrame(
  deps: MachinesDeps,
  machineId: string,
  frameId: string,
): Promise<Screenshot & { mime: string }> {
  const cached = deps.machines.frames.get(machineId, frameId, deps.clock.now());
  if (cached) {
    return {
      png: cached.png,
      mime: cached.mime,
      mime_type: "image/png",
      width: cached.width,
      height: cached.height,
      captured_at: cached.storedAt.toISOString(),
    };
  }
  const f = await deps.db.machineFrame.findFirst({ where: { id: frameId, machineId } });
  if (!f || f.expiresAt <= deps.clock.now()) {
    throw new CoreError("SCREENSHOT_FAILED", "The external machine's frame is missing or expired.");
  }
  const png = openFrame(deps.kek, machineId, f.id, f);
  return {
    png,
    mime: f.mimeType,
    mime_type: "image/png",
    width: f.width,
    height: f.height,
    captured_at: f.storedAt.toISOString(),
  };
}

export async function purgeExpiredFrames(deps: Pick<MachinesDeps, "db" | "clock">): Promise<number> {
  const r = await deps.db.machineFrame.deleteMany({ where: { expiresAt: { lte: deps.clock.now() } } });
  return r.count;
}
