// GET /v1/machines/{id}/screenshot: JSON (base64 PNG) from the generated router; with `Accept: image/png`
// apps/api/src/http/machines-plain-routes.ts runs this same operation and answers the raw bytes.
import { defineOperation } from "../operations/define.ts";
import { screenshotMachine } from "./machine-screenshot.ts";
import { DISPATCH_ERRORS, RUNNING_ERRORS } from "./op-errors.ts";
import { MachineIdParam, ScreenshotResponse } from "./schemas.ts";

export const machineScreenshotOp = defineOperation({
  id: "machines.screenshot",
  method: "GET",
  path: "/machines/{id}/screenshot",
  scope: "machines:read",
  input: MachineIdParam,
  output: ScreenshotResponse,
  errors: [...RUNNING_ERRORS, "SCREENSHOT_FAILED", ...DISPATCH_ERRORS],
  docs: {
    tags: ["Machines"],
    summary: "Screenshot",
    description:
      "The full screen as JSON (base64 PNG), or with `Accept: image/png` the raw PNG bytes. 409 INVALID_STATE unless running; 502 SCREENSHOT_FAILED when the capture errors.",
  },
  alsoServes: ["image/png"],
  requestHeaders: [{ name: "Accept", description: "image/png for raw bytes" }],
  console: "shared",
  mcp: { tool: "get_screenshot", group: "machines" },
  handler: async (ctx, input) => {
    const s = await screenshotMachine(ctx.deps, ctx.caller, input.id);
    return {
      machine_id: s.machine_id,
      image_b64: s.png.toString("base64"),
      mime_type: s.mime_type,
      width: s.width,
      height: s.height,
      captured_at: s.captured_at,
    };
  },
});
