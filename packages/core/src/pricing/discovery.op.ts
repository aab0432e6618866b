// The two public discovery operations of the MCP server (SPEC "What the service does": "2 public discovery
// tools `get_pricing` and `get_capabilities`"; DECISIONS "Compatibility amendments", bullet "MCP server":
// "no key"). They add no operation beyond the API (SPEC): they answer, without a key, what GET /v1/models
// and GET /v1/machines/pricing answer with one, so an agent can decide before it holds a key. No REST route
// of their own (`path: null`); the MCP server runs their handler in process.

import { BROWSER_OP_NAMES, COMMAND_NAMES, FILE_OP_NAMES } from "@cua/machines/commands";
import { z } from "zod";
import { ALL_SCOPES } from "../keys/scopes.ts";
import { defineOperation } from "../operations/define.ts";
import { MACHINE_PRICING, modelsCatalog } from "./pricing.ts";

/** SPEC "Machines": what a machine can do (driver protocol version 1). */
export const MACHINE_CAPABILITIES = [
  "screenshot",
  "mouse",
  "keyboard",
  "scroll",
  "terminal",
  "files",
  "browser",
] as const;

export const capabilitiesOp = defineOperation({
  id: "discovery.capabilities",
  method: "GET",
  path: null,
  auth: "public",
  input: z.strictObject({}).describe("no arguments"),
  output: z.object({
    service: z.string().describe("service name"),
    version: z.string().describe("service version"),
    api_version: z.string().describe("REST API version (the /v1 prefix)"),
    models: z
      .array(z.object({ id: z.string(), provider: z.string(), cua_versions: z.array(z.string()) }))
      .describe("engines and provider models (as GET /v1/models)"),
    cua_versions: z
      .array(z.object({ id: z.string(), default: z.boolean(), step_credits: z.number().int() }))
      .describe("v5 (default), v4, v3, v1"),
    action_types: z.array(z.string()).describe("every action_type a prediction can return"),
    machines: z
      .object({
        os_types: z.array(z.string()).describe("operating systems a managed machine can run"),
        capabilities: z.array(z.string()).describe("SPEC Machines: screenshot, mouse, keyboard, ..."),
        commands: z.array(z.string()).describe("commands of POST /v1/machines/{id}/action"),
        browser_ops: z.array(z.string()).describe("operations of POST /v1/machines/{id}/browser"),
        file_ops: z.array(z.string()).describe("operations of POST /v1/machines/{id}/files/{op}"),
      })
      .describe("what machine tools can do"),
    scopes: z.array(z.string()).describe("every API key scope"),
    key_modes: z.array(z.string()).describe("live (billed) and test (sandbox, free) keys"),
  }),
  docs: {
    tags: ["Discovery"],
    summary: "Service capabilities",
    description:
      "Models, CUA versions, action types, machine capabilities and commands, and API key scopes. No key needed.",
  },
  mcp: { tool: "get_capabilities", group: "public" },
  handler: (ctx) => {
    const m = modelsCatalog();
    return {
      service: "Service",
      version: ctx.deps.version,
      api_version: "v1",
      models: m.models,
      cua_versions: m.cua_versions,
      action_types: m.action_types,
      machines: {
        os_types: ["linux"],
        capabilities: [...MACHINE_CAPABILITIES],
        commands: [...COMMAND_NAMES],
        browser_ops: [...BROWSER_OP_NAMES],
        file_ops: [...FILE_OP_NAMES],
      },
      scopes: [...ALL_SCOPES],
      key_modes: ["live", "test"],
    };
  },
});

export const pricingOp = defineOperation({
  id: "discovery.pricing",
  method: "GET",
  path: null,
  auth: "public",
  input: z.strictObject({}).describe("no arguments"),
  output: z.object({
    credit_usd: z.number().describe("1 credit = $0.01"),
    test_keys: z.string().describe("what test keys pay"),
    byok: z.string().describe("what calls with your own provider key pay"),
    pricing: z.record(z.string(), z.unknown()).describe("as GET /v1/models `pricing` (incl. pricing.schedules)"),
    machines: z.record(z.string(), z.unknown()).describe("as GET /v1/machines/pricing"),
  }),
  docs: {
    tags: ["Discovery"],
    summary: "Prices",
    description:
      "Every credit price: prediction, grounding, sessions, runs and surcharges, schedules, machines. No key needed.",
  },
  mcp: { tool: "get_pricing", group: "public" },
  handler: () => ({
    credit_usd: 0.01,
    test_keys: "free: every call with an sk-svc-test- key charges 0 credits",
    byok: "0 platform credits on predict, ground and sessions with your own provider key",
    pricing: modelsCatalog().pricing,
    machines: { ...MACHINE_PRICING },
  }),
});
