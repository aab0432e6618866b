// Issue 11 "MCP server" (DECISIONS "Compatibility amendments", bullet "MCP server"; SPEC "What the service
// does": 26 tools, 2 prompts). The SDK's own Client over both transports against the real started server:
// Streamable HTTP at /mcp, and stdio by spawning the repository's command (`npm run -s mcp`) configured with
// SVC_API_KEY and SVC_BASE_URL. Each tool answers what its REST operation answers: structured content and
// JSON text, screenshots as image content, errors as isError results carrying the SPEC envelope.
import { makePng } from "@cua/base/images/screenshot";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, envelope, REPO_ROOT, startTestServer, type TestServer } from "./helpers.ts";

// DECISIONS "Compatibility amendments", bullet "MCP server": exactly these names.
const TOOLS = {
  predict: ["predict", "ground", "parse", "create_session", "session_predict", "end_session"],
  machines: [
    "list_machines",
    "create_machine",
    "get_machine",
    "start_machine",
    "stop_machine",
    "terminate_machine",
    "get_screenshot",
    "run_action",
    "run_actions_batch",
    "browser_op",
    "terminal_exec",
    "file_op",
  ],
  schedules: ["list_schedules", "create_schedule", "pause_schedule", "resume_schedule", "run_schedule_now"],
  account: ["get_usage"],
  public: ["get_capabilities", "get_pricing"],
};
const ALL_TOOLS = Object.values(TOOLS).flat();
const PROMPTS = ["automate_desktop_task", "schedule_recurring_task"];

const SHOT = makePng(320, 200, (x, y) => [(x * 7) % 256, (y * 3) % 256, 120, 255]).toString("base64");
const PNG_SIG = Buffer.from([0x89, 0x50, 0x4e, 0x47]);

let s: TestServer;
let acct: Awaited<ReturnType<TestServer["account"]>>;
let usageOnlyKey: string;
const clients: Client[] = [];

async function httpClient(key?: string): Promise<Client> {
  const c = new Client({ name: "mcp-test", version: "1.0.0" });
  const headers: Record<string, string> = key ? { Authorization: `Bearer ${key}` } : {};
  await c.connect(new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers } }));
  clients.push(c);
  return c;
}

async function stdioClient(key?: string): Promise<Client> {
  const c = new Client({ name: "mcp-test", version: "1.0.0" });
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("SVC_")) env[k] = v;
  env.SVC_BASE_URL = s.url;
  if (key) env.SVC_API_KEY = key;
  // the command a desktop MCP client is told to launch (README "MCP", docs/mcp.md)
  await c.connect(new StdioClientTransport({ command: "npm", args: ["run", "-s", "mcp"], cwd: REPO_ROOT, env }));
  clients.push(c);
  return c;
}

async function tool(c: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await c.callTool({ name, arguments: args })) as CallToolResult;
}

/** The JSON text content of a result, parsed. */
function textJson(r: CallToolResult): any {
  const t = r.content.find((x) => x.type === "text");
  if (t?.type !== "text") throw new Error(`no text content: ${JSON.stringify(r).slice(0, 300)}`);
  return JSON.parse(t.text);
}

/** Asserts an isError result carrying the SPEC envelope with this code; returns error. */
function toolError(r: CallToolResult, code: string): any {
  expect(r.isError, JSON.stringify(r).slice(0, 400)).toBe(true);
  const e = (r.structuredContent as any)?.error;
  expect(e?.code, JSON.stringify(r.structuredContent).slice(0, 400)).toBe(code);
  for (const k of ["message", "type", "request_id", "retryable", "retry_with_same_idempotency_key"])
    expect(e).toHaveProperty(k);
  expect(Object.keys(r.structuredContent!)).toEqual(["error"]);
  expect(textJson(r)).toEqual(r.structuredContent);
  return e;
}

beforeAll(async () => {
  s = await startTestServer({ MACHINE_PROVIDER: "none" });
  acct = await s.account();
  const k = await call(s.url, "POST", "/v1/keys", { key: acct.test_key, body: { scopes: ["usage"] } });
  expect(k.status).toBe(201);
  usageOnlyKey = k.body.key;
});
afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await s?.stop();
});

describe.each([
  ["Streamable HTTP", httpClient],
  ["stdio (npm run -s mcp)", stdioClient],
])("MCP over %s", (_name, connect) => {
  let c: Client;
  beforeAll(async () => {
    c = await connect(acct.test_key);
  });

  it("lists exactly the 26 tools of DECISIONS and the 2 prompts", async () => {
    const { tools } = await c.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...ALL_TOOLS].sort());
    for (const t of tools) {
      expect(t.inputSchema.type).toBe("object");
      expect(t.description?.length).toBeGreaterThan(10);
      const group = Object.entries(TOOLS).find(([, names]) => names.includes(t.name))![0];
      expect(t._meta?.["svc/group"]).toBe(group);
      // every tool is a registry operation now, the schedule tools included (issue 14)
      expect(t._meta?.["svc/planned"]).toBeUndefined();
    }
    // the same input as the REST operation: predict's body fields
    const predict = tools.find((t) => t.name === "predict")!;
    expect(predict.inputSchema.properties).toHaveProperty("screenshot");
    expect(predict.inputSchema.required).toContain("screenshot");
    expect(tools.find((t) => t.name === "get_machine")!.inputSchema.properties).toHaveProperty("id");
    const { prompts } = await c.listPrompts();
    expect(prompts.map((p) => p.name).sort()).toEqual(PROMPTS);
    const p = await c.getPrompt({ name: "automate_desktop_task", arguments: { task: "open the calculator" } });
    expect(JSON.stringify(p.messages)).toContain("open the calculator");
    const q = await c.getPrompt({
      name: "schedule_recurring_task",
      arguments: { task: "check the inbox", frequency: "daily", timezone: "Europe/Paris" },
    });
    expect(JSON.stringify(q.messages)).toContain("create_schedule");
    expect(JSON.stringify(q.messages)).toContain("Europe/Paris");
  });

  it("predict (group predict) with a test key answers the REST body, free", async () => {
    const r = await tool(c, "predict", { screenshot: SHOT, instruction: "click 10,20" });
    expect(r.isError).toBeFalsy();
    const body = r.structuredContent as any;
    expect(Array.isArray(body.actions)).toBe(true);
    expect(body.request_id).toMatch(/^req_/);
    expect(body.usage.credits_charged).toBe(0);
    expect(textJson(r)).toEqual(body);
    expect(r._meta?.["svc/http_status"]).toBe(200);
    // the billing headers are the REST route's own (DECISIONS: test keys carry X-Credits-Charged: 0)
    const rest = await call(s.url, "POST", "/v1/predict", {
      key: acct.test_key,
      body: { screenshot: SHOT, instruction: "click 10,20" },
    });
    expect(r._meta?.["svc/x-credits-charged"]).toBe(rest.headers.get("x-credits-charged") ?? undefined);
    expect(r._meta?.["svc/x-service-key-kind"]).toBe("test");
  });

  it("create_machine then get_screenshot (group machines): the screenshot is image content (base64 PNG)", async () => {
    const m = await tool(c, "create_machine", { display_name: "mcp", os_type: "linux" });
    expect(m.isError, JSON.stringify(m).slice(0, 300)).toBeFalsy();
    expect(m._meta?.["svc/http_status"]).toBe(201); // DECISIONS "Status of success": test machines are instant
    const id = (m.structuredContent as any).machine.id as string;
    expect(id).toMatch(/^mch_test_/);
    const g = await tool(c, "get_machine", { id });
    expect((g.structuredContent as any).status).toBe("running");
    const shot = await tool(c, "get_screenshot", { id });
    expect(shot.isError).toBeFalsy();
    const img = shot.content.find((x) => x.type === "image");
    expect(img?.type === "image" && img.mimeType).toBe("image/png");
    const bytes = Buffer.from(img?.type === "image" ? img.data : "", "base64");
    expect(bytes.subarray(0, 4).equals(PNG_SIG)).toBe(true);
    const sc = shot.structuredContent as any;
    expect(sc).toMatchObject({ machine_id: id, mime_type: "image/png", width: 1280, height: 720 });
    expect(Buffer.from(sc.image_b64, "base64").equals(bytes)).toBe(true);
    // the text copy names the image instead of repeating its base64
    expect(textJson(shot).image_b64).toMatch(/^<image\/png, \d+ bytes: image content #1>$/);
    expect(
      await call(s.url, "GET", "/v1/machines", { key: acct.test_key }).then((x) => JSON.stringify(x.body)),
    ).toContain(id);
    // an action answers what REST answers; a `screenshot` in it (DECISIONS amendments "Machines": taken after
    // the action) is image content too
    const action = { command: "click", parameters: { x: 10, y: 10 } };
    const act = await tool(c, "run_action", { id, ...action });
    expect(act.isError, JSON.stringify(act).slice(0, 300)).toBeFalsy();
    // (identity: the MCP path never asks for compression; compressed /v1 answers are another test's subject)
    const restAct = await call(s.url, "POST", `/v1/machines/${id}/actions`, {
      key: acct.test_key,
      body: action,
      headers: { "accept-encoding": "identity" },
    });
    expect(restAct.status).toBe(200);
    expect(Object.keys(act.structuredContent!).sort()).toEqual(Object.keys(restAct.body).sort());
    const actImages = act.content.filter((x) => x.type === "image");
    expect(actImages).toHaveLength(typeof restAct.body.screenshot === "string" ? 1 : 0);
    expect((await tool(c, "terminate_machine", { id })).isError).toBeFalsy();
  });

  it("an Idempotency-Key in the call's _meta reaches the REST route: the same key replays the first answer", async () => {
    const key = `mcp-${Math.random().toString(36).slice(2)}`;
    const call1 = (await c.callTool({
      name: "create_machine",
      arguments: { display_name: "once" },
      _meta: { "svc/idempotency_key": key },
    })) as CallToolResult;
    const call2 = (await c.callTool({
      name: "create_machine",
      arguments: { display_name: "once" },
      _meta: { "svc/idempotency_key": key },
    })) as CallToolResult;
    expect(call1.isError).toBeFalsy();
    expect((call2.structuredContent as any).machine.id).toBe((call1.structuredContent as any).machine.id);
    expect(call2._meta?.["svc/x-service-idempotent-replay"]).toBe("true");
    expect(call1._meta?.["svc/x-service-idempotent-replay"]).toBeUndefined();
    // a malformed key is the route's 400
    const bad = (await c.callTool({
      name: "create_machine",
      arguments: {},
      _meta: { "svc/idempotency_key": "has spaces" },
    })) as CallToolResult;
    toolError(bad, "INVALID_IDEMPOTENCY_KEY");
    // test keys hold at most 5 mock machines (SPEC "Limits"): give this one back
    const gone = await tool(c, "terminate_machine", { id: (call1.structuredContent as any).machine.id });
    expect(gone.isError, JSON.stringify(gone).slice(0, 300)).toBeFalsy();
  });

  it("get_usage (group account) answers what GET /v1/usage answers", async () => {
    const r = await tool(c, "get_usage");
    expect(r.isError).toBeFalsy();
    const rest = await call(s.url, "GET", "/v1/usage", { key: acct.test_key });
    expect(Object.keys(r.structuredContent!).sort()).toEqual(Object.keys(rest.body).sort());
    expect((r.structuredContent as any).period).toBe(rest.body.period);
  });

  it("the schedules group answers for real: create, list, pause, resume, run now (issue 14)", async () => {
    const m = await call(s.url, "POST", "/v1/machines", {
      key: acct.test_key,
      body: { display_name: "mcp-sched", os_type: "linux", desktop_enabled: true },
    });
    const created = await tool(c, "create_schedule", {
      name: "mcp",
      machine_id: m.body.machine.id,
      task_prompt: "tidy up #steps=1",
      frequency: "daily",
      time: "07:30",
      timezone: "Europe/Berlin",
    });
    expect(created.isError).toBeFalsy();
    expect(created._meta?.["svc/http_status"]).toBe(201);
    const id = (created.structuredContent as any).id as string;
    expect(created.structuredContent).toMatchObject({ cron: "30 7 * * *", status: "active" });
    const rest = await call(s.url, "GET", "/v1/schedules", { key: acct.test_key });
    const listed = await tool(c, "list_schedules", {});
    expect(Object.keys(listed.structuredContent!).sort()).toEqual(Object.keys(rest.body).sort());
    expect((listed.structuredContent as any).data.map((x: { id: string }) => x.id)).toContain(id);
    expect((await tool(c, "pause_schedule", { id })).structuredContent).toMatchObject({ status: "paused" });
    expect((await tool(c, "resume_schedule", { id })).structuredContent).toMatchObject({ status: "active" });
    const fired = await tool(c, "run_schedule_now", { id });
    expect(fired.structuredContent).toMatchObject({ schedule_id: id, trigger: "manual" });
    toolError(await tool(c, "pause_schedule", { id: "nope" }), "INVALID_SCHEDULE_ID");
    await call(s.url, "DELETE", `/v1/schedules/${id}`, { key: acct.test_key });
    await call(s.url, "DELETE", `/v1/machines/${m.body.machine.id}`, { key: acct.test_key });
  });

  it("get_capabilities and get_pricing (public) answer", async () => {
    const cap = await tool(c, "get_capabilities");
    expect(cap.isError).toBeFalsy();
    expect(cap.structuredContent).toMatchObject({ api_version: "v1" });
    expect((cap.structuredContent as any).machines.capabilities).toContain("screenshot");
    const pr = await tool(c, "get_pricing");
    expect((pr.structuredContent as any).machines.linux_running_per_hour).toBe(5); // SPEC "Machines" pricing
    expect((pr.structuredContent as any).pricing).toHaveProperty("schedules");
  });

  it("a key without the scope gets isError with the INSUFFICIENT_SCOPE envelope (SPEC Authentication 3)", async () => {
    const narrow = await connect(usageOnlyKey);
    const e = toolError(
      await tool(narrow, "predict", { screenshot: SHOT, instruction: "click 1,1" }),
      "INSUFFICIENT_SCOPE",
    );
    expect(e.required_scope).toBe("predict");
    expect(e.current_scopes).toEqual(["usage"]);
    expect(e.type).toBe("forbidden");
    // the scope it has works
    expect((await tool(narrow, "get_usage")).isError).toBeFalsy();
  });

  it("a validation error is isError with VALIDATION_ERROR and details (paths as in /v1)", async () => {
    const e = toolError(await tool(c, "create_machine", { ttl_minutes: 4 }), "VALIDATION_ERROR");
    expect(e.details[0].path).toBe("body.ttl_minutes");
    // an unknown field: the in-process discovery tools use the one mapper too, with the paths REST gives
    const restUnknown = await call(s.url, "POST", "/v1/machines", { key: acct.test_key, body: { colour: "red" } });
    const unknown = toolError(await tool(c, "get_capabilities", { colour: "red" }), "VALIDATION_ERROR");
    expect(unknown.details).toEqual(restUnknown.body.error.details);
    // a missing path parameter (the route cannot be reached): the operation's schema and the one mapper
    const missing = toolError(await tool(c, "get_machine", {}), "VALIDATION_ERROR").details;
    expect(missing).toHaveLength(1);
    expect(missing[0].path).toBe("path.id");
  });

  it("an unknown id is the route's 404 envelope, docs_url on the address the client used", async () => {
    const rest = await call(s.url, "GET", "/v1/machines/mch_test_00000000", { key: acct.test_key });
    expect(rest.status).toBe(404);
    const e = toolError(await tool(c, "get_machine", { id: "mch_test_00000000" }), rest.body.error.code);
    expect(e.docs_url).toBe(rest.body.error.docs_url);
  });
});

describe("MCP without a key and with a wrong key", () => {
  it("HTTP without a key: listing and public tools work; an authenticated tool answers the REST 401", async () => {
    const c = await httpClient();
    expect((await c.listTools()).tools).toHaveLength(26);
    expect((await tool(c, "get_pricing")).isError).toBeFalsy();
    const e = toolError(await tool(c, "get_usage"), "INVALID_API_KEY");
    expect(e.type).toBe("auth_error");
  });

  it("HTTP with a wrong key: 401 with the envelope and WWW-Authenticate before any MCP message", async () => {
    const r = await fetch(`${s.url}/mcp`, {
      method: "POST",
      headers: {
        Authorization: `Bearer sk-svc-test-${"0".repeat(48)}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await r.json()).error.code).toBe("INVALID_API_KEY");
    await expect(httpClient(`sk-svc-test-${"0".repeat(48)}`)).rejects.toThrow(/INVALID_API_KEY/);
  });

  it("stdio with a wrong key: initialize fails with the service's answer", async () => {
    await expect(stdioClient(`sk-svc-test-${"0".repeat(48)}`)).rejects.toThrow(/401|INVALID_API_KEY/);
  });

  it("POST /mcp answers carry the request id and, for a key, its kind (DECISIONS amendments)", async () => {
    const r = await fetch(`${s.url}/mcp`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${acct.test_key}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "get_pricing" } }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-service-request-id")).toMatch(/^req_/);
    expect(r.headers.get("x-service-key-kind")).toBe("test");
    expect(r.headers.get("x-service-test-mode")).toBe("true");
    const body = await r.json();
    expect(body.id).toBe(7);
    expect(body.result.structuredContent.credit_usd).toBe(0.01);
  });

  it("GET /mcp is 405 (stateless server, no stream to open)", async () => {
    const r = await call(s.url, "GET", "/mcp", { headers: { Accept: "text/event-stream" } });
    envelope(r, 405, "METHOD_NOT_ALLOWED");
    envelope(await call(s.url, "DELETE", "/mcp"), 405, "METHOD_NOT_ALLOWED");
  });
});

describe("a tool call is a REST request of the key (docs/mcp.md: why tools run the REST route)", () => {
  it("usage counts tool calls under their REST endpoint, in the key's mode; /mcp itself is not a usage row", async () => {
    const a = await s.account();
    const c = await httpClient(a.live_key);
    await c.listTools();
    expect((await tool(c, "list_machines")).isError).toBeFalsy();
    expect((await tool(c, "list_machines", { limit: 2 })).isError).toBeFalsy();
    toolError(await tool(c, "get_machine", { id: "00000000-0000-4000-8000-000000000000" }), "MACHINE_NOT_FOUND");
    const r = await call(s.url, "GET", "/v1/usage", { key: a.live_key });
    expect(r.body.mode).toBe("live");
    expect(r.body.by_endpoint).toEqual([
      { endpoint: "GET /v1/machines", requests: 2, credits_charged: 0 },
      { endpoint: "GET /v1/machines/{id}", requests: 1, credits_charged: 0 },
    ]);
  });
});

describe("tools and /openapi.json agree (issue 11: one definition per operation)", () => {
  it("each tool with a REST route has that operation in the OpenAPI document, same scope, same input fields", async () => {
    const doc = (await call(s.url, "GET", "/openapi.json")).body;
    const { tools } = await (await httpClient(acct.test_key)).listTools();
    let checked = 0;
    for (const t of tools) {
      const rest = t._meta?.["svc/rest"] as string | undefined;
      if (!rest) continue;
      const [method, path] = rest.split(" ") as [string, string];
      const op = doc.paths[path.replace(/^\/v1/, "")]?.[method.toLowerCase()]; // paths are under servers[0] = /v1
      expect(op, `${t.name}: ${rest} in /openapi.json`).toBeDefined();
      expect(op["x-required-scope"], `${t.name} scope`).toBe(t._meta?.["svc/scope"]);
      const body = op.requestBody?.content?.["application/json"]?.schema;
      const restFields = new Set<string>([
        ...(op.parameters ?? []).filter((p: any) => p.in !== "header").map((p: any) => p.name),
        ...Object.keys(body?.properties ?? {}),
      ]);
      const toolFields = new Set(Object.keys(t.inputSchema.properties ?? {}));
      expect([...toolFields].sort(), `${t.name} input fields`).toEqual([...restFields].sort());
      checked++;
    }
    expect(checked).toBe(ALL_TOOLS.length - TOOLS.public.length);
  });
});

describe("discovery documents", () => {
  it("/.well-known/mcp/server-card.json describes the server: name, version, transports, auth, 26 tools", async () => {
    const r = await call(s.url, "GET", "/.well-known/mcp/server-card.json");
    expect(r.status).toBe(200);
    expect(r.body.serverInfo).toMatchObject({ name: "svc", version: s.app.deps.version });
    expect(r.body.remotes).toEqual([{ type: "streamable-http", url: `${s.url}/mcp` }]);
    expect(r.body.transports.map((t: any) => t.type)).toEqual(["streamable-http", "stdio"]);
    expect(r.body.authentication).toMatchObject({ required: true, schemes: ["bearer"] });
    expect(r.body.authentication.public_tools.sort()).toEqual(["get_capabilities", "get_pricing"]);
    expect(r.body.tools.map((t: any) => t.name).sort()).toEqual([...ALL_TOOLS].sort());
    expect(r.body.prompts.map((p: any) => p.name)).toEqual(PROMPTS);
  });

  it("/llms.txt lists the API and MCP entry points", async () => {
    const r = await call(s.url, "GET", "/llms.txt");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/plain/);
    for (const p of ["/openapi.json", "/docs", "/mcp", "/.well-known/mcp/server-card.json", "npm run -s mcp"]) {
      expect(r.text).toContain(p);
    }
    for (const t of ALL_TOOLS) expect(r.text).toContain(`\`${t}\``);
  });
});

describe("MCP Inspector CLI (@modelcontextprotocol/inspector-cli), as docs/mcp.md shows it", () => {
  // `npm run -s mcp:inspect -- <target> ...` = mcp-inspector-cli --cli, run from a folder where its
  // package.json lookup succeeds (inspector-cli 1.0.3 resolves ../package.json against the working directory)
  const run = async (args: string[], env: NodeJS.ProcessEnv = process.env) => {
    const { execFile } = await import("node:child_process");
    return new Promise<string>((resolve, reject) =>
      execFile(
        "npm",
        ["run", "-s", "mcp:inspect", "--", ...args],
        { cwd: REPO_ROOT, timeout: 60_000, env },
        (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
      ),
    );
  };
  const target = () => [`${s.url}/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${acct.test_key}`];

  it("lists the tools and calls one over Streamable HTTP", async () => {
    const list = JSON.parse(await run([...target(), "--method", "tools/list"]));
    expect(list.tools.map((t: any) => t.name).sort()).toEqual([...ALL_TOOLS].sort());
    const usage = JSON.parse(await run([...target(), "--method", "tools/call", "--tool-name", "get_usage"]));
    expect(usage.isError).toBeFalsy();
    expect(usage.structuredContent).toHaveProperty("period");
    const machine = JSON.parse(
      await run([
        ...target(),
        "--method",
        "tools/call",
        "--tool-name",
        "create_machine",
        "--tool-arg",
        "display_name=inspector",
      ]),
    );
    expect(machine.structuredContent.machine.display_name).toBe("inspector");
  });

  it("lists and calls over stdio, launching `npm run -s mcp`", async () => {
    const env = { ...process.env, SVC_BASE_URL: s.url, SVC_API_KEY: acct.test_key };
    const stdio = ["npm", "--prefix", REPO_ROOT, "run", "-s", "mcp"];
    const list = JSON.parse(await run([...stdio, "--method", "tools/list"], env));
    expect(list.tools).toHaveLength(26);
    const pricing = JSON.parse(await run([...stdio, "--method", "tools/call", "--tool-name", "get_pricing"], env));
    expect(pricing.structuredContent.credit_usd).toBe(0.01);
  });
});
