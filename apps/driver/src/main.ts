#!/usr/bin/env -S npx tsx
// cua-driver: turns a Linux X11 host into an external machine of the service (docs/driver.md).
//   cua-driver enroll --api-url URL [--name NAME] [--state FILE]   (API key in CUA_API_KEY)
//   cua-driver run [--state FILE] [--home DIR] [--confine-files] [--devtools-port N] (display from DISPLAY / XAUTHORITY)
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { PROTOCOL_VERSION } from "@cua/machines/driver-wire";
import { DriverClient, enroll } from "./client.ts";
import { DisplayBackend } from "./display-backend.ts";
import { DeviceRevoked, Driver } from "./driver.ts";
import { loadDriverEnv } from "./env.ts";
import { type DriverState, loadState, saveState } from "./state.ts";

const env = loadDriverEnv();

const CAPABILITIES = ["screenshot", "mouse", "keyboard", "scroll", "terminal", "files", "browser"];

function log(level: string) {
  return (msg: string, fields: Record<string, unknown> = {}) =>
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields })}\n`);
}
const logger = { info: log("info"), warn: log("warn") };

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    "api-url": { type: "string" },
    name: { type: "string" },
    state: { type: "string" },
    home: { type: "string" },
    "confine-files": { type: "boolean" },
    "devtools-port": { type: "string" },
    capabilities: { type: "string" },
    "poll-wait": { type: "string" },
  },
});
const stateFile = path.resolve(
  values.state ?? env.CUA_DRIVER_STATE ?? path.join(os.homedir(), ".config", "cua-driver", "state.json"),
);
const home = path.resolve(values.home ?? os.homedir());

function display(): DisplayBackend {
  return new DisplayBackend({
    display: env.DISPLAY,
    ...(env.XAUTHORITY ? { xauthority: env.XAUTHORITY } : {}),
    home,
    confineFiles: values["confine-files"] === true,
    ...(values["devtools-port"] ? { devtoolsPort: Number(values["devtools-port"]) } : {}),
  });
}

async function cmdEnroll(): Promise<void> {
  const apiUrl = (values["api-url"] ?? "").replace(/\/$/, "");
  if (!apiUrl) throw new Error("--api-url is required");
  if (!env.CUA_API_KEY) throw new Error("set CUA_API_KEY to an API key with machines:write (used for enrollment only)");
  let state = loadState(stateFile);
  if (state?.device_token) {
    logger.info("already enrolled", { machine_id: state.machine_id, state: stateFile });
    return;
  }
  const d = display();
  const screen = await d.geometry();
  await d.close();
  const capabilities = values.capabilities ? values.capabilities.split(",").map((c) => c.trim()) : CAPABILITIES;
  // the Idempotency-Key is saved before the request: after a crash the retry gets the same token back
  state ??= {
    api_url: apiUrl,
    enrollment_key: `enroll-${randomBytes(16).toString("hex")}`,
    machine_id: null,
    device_token: null,
    capabilities,
    screen,
    cursor: "0",
    last_sequence: 0,
    last_frame_id: null,
    results: {},
    result_order: [],
  } satisfies DriverState;
  saveState(stateFile, state);
  const r = await enroll(apiUrl, env.CUA_API_KEY, state.enrollment_key, {
    display_name: values.name ?? os.hostname(),
    os_type: "linux",
    capabilities: state.capabilities,
    screen_width: screen.width,
    screen_height: screen.height,
    protocol_version: PROTOCOL_VERSION,
  });
  state.machine_id = r.machine_id;
  state.device_token = r.device_token;
  state.capabilities = r.capabilities;
  saveState(stateFile, state);
  process.stdout.write(`${JSON.stringify({ machine_id: r.machine_id, state: stateFile })}\n`);
}

async function cmdRun(): Promise<void> {
  const state = loadState(stateFile);
  if (!state?.device_token || !state.machine_id)
    throw new Error(`not enrolled: run "cua-driver enroll" first (state ${stateFile})`);
  const d = display();
  const driver = new Driver({
    stateFile,
    state,
    client: new DriverClient(state.api_url, state.machine_id, state.device_token),
    display: d,
    log: logger,
    ...(values["poll-wait"] ? { pollWaitSeconds: Number(values["poll-wait"]) } : {}),
  });
  const stop = () => driver.stop();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await driver.run();
  } catch (e) {
    if (e instanceof DeviceRevoked) {
      await d.close();
      process.exit(3);
    }
    throw e;
  }
  await d.close();
  process.exit(0);
}

const command = positionals[0];
const main = command === "enroll" ? cmdEnroll : command === "run" ? cmdRun : null;
if (!main) {
  process.stderr.write("usage: cua-driver enroll --api-url URL [--name NAME] | cua-driver run [--home DIR]\n");
  process.exit(2);
}
main().catch((e) => {
  logger.warn("driver failed", { err: e instanceof Error ? e.message : String(e) });
  process.exit(1);
});
