import { MANAGED_DESKTOP } from "@cua/machines/desktop-apps";
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";
import { modelsCatalog } from "./pricing.ts";

/** A deep-frozen copy: a constant answer no caller can change. */
function frozen<T>(v: T): T {
  if (v && typeof v === "object") {
    for (const k of Object.keys(v)) frozen((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

// The catalog is made of constants: built once, frozen. A frozen answer is validated and serialised once by
// the /v1 route (apps/api/src/http/v1-routes.ts, issue 16), not per call.
const MODELS_ANSWER = frozen(structuredClone({ ...modelsCatalog(), managed_machine: MANAGED_DESKTOP }));

export const listModelsOp = defineOperation({
  id: "models.list",
  method: "GET",
  path: "/models",
  input: z.void(),
  output: z.object({
    models: z
      .array(z.object({ id: z.string(), provider: z.string(), cua_versions: z.array(z.string()) }))
      .describe("engines and provider models"),
    cua_versions: z
      .array(z.object({ id: z.string(), default: z.boolean(), step_credits: z.number().int() }))
      .describe("v5 (default), v4, v3, v1"),
    action_types: z.array(z.string()).describe("every action_type an engine returns"),
    pricing: z.record(z.string(), z.unknown()).describe("every effective price and surcharge, incl. pricing.schedules"),
    managed_machine: z
      .object({
        os: z.string(),
        user: z.string(),
        display: z.string(),
        default_resolution: z.object({ width: z.number().int(), height: z.number().int() }),
        window_manager: z.string(),
        browser: z.string(),
        menu: z
          .object({ opens_with: z.array(z.string()), entries: z.array(z.string()) })
          .describe("the desktop's root menu and how to open it"),
        apps: z
          .array(
            z.object({
              id: z.string(),
              name: z.string(),
              program: z.string(),
              window_class: z.string().describe("X window class (xdotool search --class)"),
              keybinds: z.array(z.string()).describe("key_combo shortcuts that open it, e.g. ctrl+alt+t"),
              menu_entry: z.string().describe("its entry in the root menu"),
            }),
          )
          .describe("terminal, file manager, text editor, browser"),
        fonts: z.array(z.string()),
      })
      .describe("what a managed live machine (POST /v1/machines, local-desktop provider) offers; docs/machines.md"),
  }),
  docs: {
    tags: ["Prediction"],
    summary: "Models, CUA versions and pricing",
    description: "Needs any valid key, no scope.",
  },
  handler: () => MODELS_ANSWER,
});
