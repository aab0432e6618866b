// Issue 12 "Done when": a client written against the commercial contract (./compat-client/client.ts, which
// knows only the shapes of DECISIONS.md "Compatibility amendments (2026-11-25)") runs a predict loop, grounding,
// sessions, a run with a human pause and resume read over SSE until `done`, a signed callback received by
// top-level `run_id`, and a machine lifecycle with batch actions and file writes, against the real server.
import { makePng } from "@cua/base/images/screenshot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceClient, ServiceError } from "./compat-client/client.ts";
import { startReceiver } from "./compat-client/receiver.ts";
import { startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
let client: ServiceClient;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const secrets = new Map<string, string>();
const SHOT = makePng(320, 200, (x, y) => [x % 256, y % 256, 90, 255]).toString("base64");

beforeAll(async () => {
  s = await startTestServer({
    ALLOW_INSECURE_CALLBACKS: "1",
    RUN_CALLBACK_BACKOFF_SECONDS: "1,1",
    MACHINE_PROVIDER: "none",
  });
  const acct = await s.account({ credits: 500 });
  client = new ServiceClient(s.url, acct.test_key);
  receiver = await startReceiver((runId) => secrets.get(runId));
});
afterAll(async () => {
  await s.stop();
  await receiver.close();
});

async function refused(p: Promise<unknown>): Promise<ServiceError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ServiceError) return e;
    throw e;
  }
  throw new Error("expected an error answer");
}

describe("a client of the commercial contract", () => {
  it("predict loop: model from /v1/models, raw_code and descriptions, trajectory fed back as received", async () => {
    const model = (await client.models()).body.models[0]!.id;
    const trajectory: { screenshot: string; actions: unknown[]; reasoning?: string }[] = [];
    let last = null as Awaited<ReturnType<ServiceClient["predict"]>> | null;
    for (let i = 0; i < 3; i++) {
      last = await client.predict({
        screenshot: SHOT,
        instruction: "click 10,20",
        model,
        include_raw_code: true,
        max_actions: 3,
        trajectory,
      });
      const p = last.body;
      expect(p).toMatchObject({ cua_version: "v5", screen_width: 320, screen_height: 200 });
      expect(p.request_id).toBe(last.headers.get("x-service-request-id"));
      for (const a of p.actions) {
        expect(typeof a.description).toBe("string");
        expect(a.raw_code).toMatch(/^pyautogui\.|^DONE$|^FAIL$|^time\.sleep/);
      }
      expect(p.raw_code).toBe(p.actions.map((a) => a.raw_code).join("\n"));
      // the loop sends back what it received, extra fields included
      trajectory.push({ screenshot: SHOT, actions: p.actions, reasoning: p.reasoning });
    }
    expect(last!.headers.get("x-service-key-kind")).toBe("test");
    expect(last!.headers.get("x-credits-charged")).toBe("0");
    const quiet = await client.predict({ screenshot: SHOT, instruction: "click 10,20", include_reasoning: false });
    expect(quiet.body.reasoning).toBe("");
    // no silent coercion, unknown models refused, both with the validation error type
    const e1 = await refused(client.predict({ screenshot: SHOT, instruction: "x", max_actions: "3" }));
    expect([e1.status, e1.code, e1.type]).toEqual([422, "VALIDATION_ERROR", "validation_error"]);
    const e2 = await refused(client.predict({ screenshot: SHOT, instruction: "x", model: "no-such-model" }));
    expect([e2.status, e2.code]).toEqual([422, "VALIDATION_ERROR"]);
  });

  it("grounding with `element`; nothing found is 422 GROUNDING_FAILED with the charge refunded", async () => {
    const g = await client.ground(SHOT, "the Save button");
    expect(g.body).toMatchObject({ screen_width: 320, screen_height: 200 });
    expect(Number.isInteger(g.body.x) && Number.isInteger(g.body.y)).toBe(true);
    const e = await refused(client.ground(SHOT, "a button that does not exist"));
    expect([e.status, e.code, e.type]).toEqual([422, "GROUNDING_FAILED", "validation_error"]);
    expect(e.headers.get("x-credits-refunded")).toBe("0"); // a test key: nothing was charged, nothing kept
    const both = await refused(client.request("POST", "/ground", { screenshot: SHOT, element: "a", description: "b" }));
    expect(both.status).toBe(422);
  });

  it("sessions with max_trajectory_length: the trajectory holds 3 steps, step numbering goes on", async () => {
    const c = await client.createSession({ max_trajectory_length: 3, screen_width: 320, screen_height: 200 });
    expect(c.status).toBe(201);
    expect(c.body).toMatchObject({ max_trajectory_length: 3, screen_size: { width: 320, height: 200 } });
    const id = c.body.session_id;
    let step = 0;
    for (let i = 0; i < 4; i++)
      step = (await client.sessionPredict(id, { screenshot: SHOT, instruction: "click 5,5" })).body.step;
    expect(step).toBe(4);
    expect((await client.getSession(id)).body).toMatchObject({ step_count: 3, total_credits_used: 0 });
    expect((await client.listSessions()).body.data.map((x) => x.session_id)).toContain(id);
    expect((await client.resetSession(id)).body).toMatchObject({ status: "ok", session_id: id });
    expect((await client.sessionPredict(id, { screenshot: SHOT, instruction: "click 5,5" })).body.step).toBe(5);
    expect((await client.endSession(id)).body).toMatchObject({ status: "ok", session_id: id });
    const gone = await refused(client.getSession(id));
    expect([gone.status, gone.code, gone.type]).toEqual([404, "SESSION_NOT_FOUND", "not_found_error"]);
  });

  it("a run with a human pause: SSE until done (resume on awaiting_human), signed callbacks by run_id", async () => {
    const machine = (await client.createMachine({ display_name: "compat-run", cpu_cores: 2 })).body.machine.id;
    const created = await client.createRun({
      machine_id: machine,
      task: "finish the form #steps=2 #human",
      instructions: "Be careful with the form.",
      metadata: { ticket: "T-42" },
      deadline_seconds: 600,
      webhook_url: receiver.url,
    });
    expect(created.status).toBe(201);
    const run = created.body;
    expect(run).toMatchObject({
      object: "agent.run",
      status: "queued",
      steps_completed: 0,
      metadata: { ticket: "T-42" },
    });
    secrets.set(run.id, run.webhook_secret!);

    const { events } = await client.streamUntilDone(run.id, async (e) => {
      if (e.event === "awaiting_human") await client.resumeRun(run.id, "approved by QA");
    });
    const names = events.map((e) => e.event);
    expect(names).toContain("awaiting_human");
    expect(names).toContain("resumed");
    expect(events.find((e) => e.event === "resumed")!.data).toMatchObject({ note: "approved by QA" });
    expect(names.at(-1)).toBe("done");
    expect(events.at(-1)!.data).toEqual({ status: "succeeded", run_id: run.id });

    const final = (await client.getRun(run.id)).body;
    expect(final).toMatchObject({
      status: "succeeded",
      steps_completed: 2,
      credits_charged: 0,
      cost_cents: 0,
      awaiting_human_since: null,
      result: { passed: true, status: "succeeded" },
    });
    expect(typeof final.result!.summary).toBe("string");
    expect((await client.listRuns("?status=succeeded")).body.data.map((r) => r.id)).toContain(run.id);

    // reconnecting after done (with the last id seen) replays nothing
    const lastId = [...events].reverse().find((e) => e.id)!.id!;
    const again = await fetch(`${s.url}/v1/runs/${run.id}/events`, {
      headers: { Authorization: `Bearer ${client.apiKey}`, "Last-Event-ID": lastId },
    });
    expect((await again.text()).includes("event:")).toBe(false);

    // the receiver reads the top-level run_id and verifies the signature
    const start = Date.now();
    while (receiver.deliveries.filter((d) => d.runId === run.id).length < 2 && Date.now() - start < 20_000)
      await new Promise((r) => setTimeout(r, 100));
    const mine = receiver.deliveries.filter((d) => d.runId === run.id);
    expect(mine.map((d) => [d.event, d.status])).toEqual([
      ["run.awaiting_human", "awaiting_human"],
      ["run.succeeded", "succeeded"],
    ]);
    expect(mine[0]!.reason).toBe("human_requested");
    expect(mine.every((d) => d.verified && d.deliveryId.startsWith("dlv_"))).toBe(true);
    expect(receiver.rejected).toEqual([]);
  });

  it("a machine lifecycle with batch actions (aliases) and file writes", async () => {
    const c = await client.createMachine({
      display_name: "compat",
      provider: "auto",
      cpu_cores: 2,
      memory_gb: 4,
      storage_gb: 20,
      metadata: { team: "qa" },
    });
    expect(c.status).toBe(201);
    expect(Object.keys(c.body.connection).sort()).toEqual([
      "has_ssh_key",
      "has_vnc_password",
      "public_ip",
      "ssh_port",
      "ssh_username",
      "vnc_port",
      "websocket_port",
    ]);
    const id = c.body.machine.id;
    expect((await client.listMachines()).body.data.map((m) => m.id)).toContain(id);

    const typed = await client.machineAction(id, { command: "type_text", parameters: { text: "hello" } });
    expect(typed.body).toMatchObject({ command: "type", success: true });
    expect(typeof typed.body.screenshot).toBe("string");
    const key = await client.machineAction(id, {
      command: "key_press",
      parameters: { key: "enter" },
      include_screenshot: false,
    });
    expect(key.body).toMatchObject({ command: "key_press", success: true });
    expect(key.body.screenshot).toBeUndefined();

    const batch = await client.machineBatch(id, [
      { command: "click", parameters: { x: 10, y: 10 } },
      { command: "type_text", parameters: { text: "report" } },
      { command: "key_press", parameters: { key: "tab" } },
      { command: "wait", parameters: { seconds: 0 } },
    ]);
    expect(batch.body.completed_count).toBe(4);
    expect(batch.body.results.map((r) => r.command)).toEqual(["click", "type", "key_press", "wait"]);

    const w1 = await client.fileOp(id, "write", { path: "/tmp/compat/out.txt", content: "absolute" });
    expect(w1.body).toMatchObject({ command: "file_write", success: true });
    const w2 = await client.fileOp(id, "write", { path: "notes/in-home.txt", content: "relative" });
    expect(w2.body.success).toBe(true);
    expect((await client.fileOp(id, "read", { path: "/tmp/compat/out.txt" })).body.result.content).toBe("absolute");
    expect((await client.fileOp(id, "write", { path: "/etc/hosts", content: "x" })).body.success).toBe(false);

    const stopped = await client.lifecycle(id, "stop");
    expect(stopped.body).toEqual({
      request_id: stopped.headers.get("x-service-request-id"),
      machine_id: id,
      status: "stopped",
      message: expect.any(String),
    });
    const busy = await refused(client.machineAction(id, { command: "wait", parameters: { seconds: 0 } }));
    expect([busy.status, busy.code, busy.type]).toEqual([409, "INVALID_STATE", "state_error"]);
    expect((await client.lifecycle(id, "start")).body).toMatchObject({ machine_id: id, status: "running" });
    expect((await client.terminate(id)).body).toMatchObject({ machine_id: id, status: "terminated" });
    const unknown = await refused(
      client.machineAction("mch_test_0123456789abcdef01234567", { command: "wait", parameters: { seconds: 0 } }),
    );
    expect([unknown.status, unknown.code]).toEqual([404, "MACHINE_NOT_FOUND"]);
  });

  it("usage: totals and balances under the commercial names", async () => {
    const u = await client.usage();
    expect(u.body.total_requests).toBeGreaterThan(10);
    expect(u.body.total_credits).toBe(0);
    expect(u.body.balance).toBe(500);
    expect(u.body.wallet_balance_usd).toBe("5.00");
  });
});
