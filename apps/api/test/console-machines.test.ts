// The console's machine procedures over /trpc, black-box, on mock (test-mode) machines and the live
// provisioning gate: each mode listed by the same procedure as GET /v1/machines, lifecycle, screenshot,
// actions, terminal, isolation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp, trpc } from "./console-helpers.ts";
import { startTestServer, type TestServer } from "./helpers.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe("console machines", () => {
  it("provisions a test machine that runs at once; lists, gets, screenshots, acts and runs terminal commands", async () => {
    const { cookie } = await signUp(s.url);
    const p = await trpc(s.url, "console.machines.provision", {
      input: { mode: "test", display_name: "mock" },
      cookie,
    });
    expect(p.status).toBe(200);
    expect(p.data.machine).toMatchObject({ display_name: "mock", is_test: true, status: "running" });
    const id: string = p.data.machine.id;
    expect(id).toMatch(/^mch_test_[0-9a-f]+$/);
    const list = await trpc(s.url, "console.machines.list", { query: true, cookie, input: { mode: "test" } });
    expect(list.data.data.map((m: { id: string }) => m.id)).toEqual([id]);
    const live = await trpc(s.url, "console.machines.list", { query: true, cookie, input: { mode: "live" } });
    expect(live.data.data).toEqual([]);
    const get = await trpc(s.url, "console.machines.get", { query: true, cookie, input: { id } });
    expect(get.data.status).toBe("running");
    const shot = await trpc(s.url, "console.machines.screenshot", { query: true, cookie, input: { id } });
    expect(shot.status).toBe(200);
    expect(Buffer.from(shot.data.image_b64, "base64").subarray(1, 4).toString()).toBe("PNG");
    const act = await trpc(s.url, "console.machines.action", {
      input: { id, command: "click", parameters: { x: 10, y: 10 } },
      cookie,
    });
    expect(act.status).toBe(200);
    expect(act.data.success).toBe(true);
    const term = await trpc(s.url, "console.machines.terminal", { input: { id, command: "echo hi" }, cookie });
    expect(term.status).toBe(200);
    const bad = await trpc(s.url, "console.machines.action", {
      input: { id, command: "format_disk", parameters: {} },
      cookie,
    });
    expect(bad.status).toBe(422);
    const stop = await trpc(s.url, "console.machines.stop", { input: { id }, cookie });
    expect(stop.data.status).toBe("stopped");
    const stopped = await trpc(s.url, "console.machines.action", {
      input: { id, command: "click", parameters: { x: 1, y: 1 } },
      cookie,
    });
    expect(stopped.status).toBe(409);
    expect(stopped.error.code).toBe("INVALID_STATE");
    const start = await trpc(s.url, "console.machines.start", { input: { id }, cookie });
    expect(start.data.status).toBe("running");
    const term2 = await trpc(s.url, "console.machines.terminate", { input: { id }, cookie });
    expect(term2.status).toBe(200);
    const after = await trpc(s.url, "console.machines.list", { query: true, cookie, input: { mode: "test" } });
    expect(after.data.data).toEqual([]);
  });

  it("live provisioning needs the 20-credit wallet gate (402 INSUFFICIENT_CREDITS) before anything else", async () => {
    const { cookie } = await signUp(s.url);
    const r = await trpc(s.url, "console.machines.provision", { input: { mode: "live" }, cookie });
    expect(r.status).toBe(402);
    expect(r.error).toMatchObject({ code: "INSUFFICIENT_CREDITS", required: 20, balance: 0 });
    expect((await trpc(s.url, "console.machines.list", { query: true, cookie, input: {} })).data.data).toEqual([]);
  });

  it("another account's machine is 404 and a malformed id 400", async () => {
    const a = await signUp(s.url);
    const b = await signUp(s.url);
    const id = (await trpc(s.url, "console.machines.provision", { input: { mode: "test" }, cookie: a.cookie })).data
      .machine.id;
    const other = await trpc(s.url, "console.machines.get", { query: true, cookie: b.cookie, input: { id } });
    expect(other.status).toBe(404);
    const kill = await trpc(s.url, "console.machines.terminate", { input: { id }, cookie: b.cookie });
    expect(kill.status).toBe(404);
    const bad = await trpc(s.url, "console.machines.get", { query: true, cookie: a.cookie, input: { id: "nope" } });
    expect(bad.status).toBe(400);
    expect(bad.error.code).toBe("INVALID_MACHINE_ID");
  });

  it("machine procedures need a session and, for changes, the service's Origin", async () => {
    const { cookie } = await signUp(s.url);
    expect((await trpc(s.url, "console.machines.list", { query: true, input: {} })).status).toBe(401);
    const r = await trpc(s.url, "console.machines.provision", {
      input: { mode: "test" },
      cookie,
      origin: "https://evil.example",
    });
    expect(r.status).toBe(403);
    expect(r.error.code).toBe("FORBIDDEN_ORIGIN");
  });
});
