// The driver's configuration from the environment (read here only).
import { z } from "zod";

export const DriverEnv = z.object({
  CUA_API_KEY: z.string().optional().describe("owner API key with machines:write; used by `enroll` only"),
  DISPLAY: z.string().default(":0").describe("the X display to drive"),
  XAUTHORITY: z.string().optional().describe("the display's X authority file"),
  CUA_DRIVER_STATE: z.string().optional().describe("state file (default ~/.config/cua-driver/state.json)"),
});
export type DriverEnv = z.infer<typeof DriverEnv>;

export const loadDriverEnv = (): DriverEnv => DriverEnv.parse(process.env);
