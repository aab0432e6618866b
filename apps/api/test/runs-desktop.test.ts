// A live run on a real managed desktop (issue 5 "Done when"): a machine provisioned through the machines
// API (Xvfb + openbox + Chromium as an unprivileged user), a local form page opened in its browser, and a
// run whose managed engine is the built-in local engine (OCR grounding + instruction interpreter). The
// agent fills and submits the form; the page's server receives the submission. Billed 5 credits per step.
// Needs root and the desktop packages (scripts/install-desktop-deps.sh); skipped otherwise.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { removeDevtoolsGuard } from "@cua/machines/devtools-guard";
import { startTestInternet, type TestInternet } from "@cua/machines/isolation/test-internet";
import { DEFAULT_PORT_BASES } from "@cua/machines/local-desktop-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startTestServer, type TestServer } from "./helpers.ts";
import { readSse, waitFor, waitRun } from "./runs-helpers.ts";

const enabled =
  ["/usr/bin/Xvfb", "/usr/bin/xdotool", "/usr/bin/scrot", "/usr/bin/openbox", "/usr/bin/chromium"].every((p) =>
    existsSync(p),
  ) &&
  process.getuid?.() === 0 &&
  process.env.SKIP_DESKTOP_TESTS !== "1";

const FORM = `<!doctype html><html><head><title>Sign up</title></head>
<body style="margin:0;font:22px sans-serif;background:#fff;color:#111">
<form method="post" action="/submit" style="position:absolute;left:80px;top:60px">
  <h1 style="font-size:30px">Sign up</h1>
  <div style="margin:18px 0"><label for="name" style="display:inline-block;width:120px">Name</label>
    <input id="name" name="name" style="font-size:22px;width:360px;height:40px;border:2px solid #333"></div>
  <div style="margin:18px 0"><label for="email" style="display:inline-block;width:120px">Email</label>
    <input id="email" name="email" style="font-size:22px;width:360px;height:40px;border:2px solid #333"></div>
  <button type="submit" style="font-size:22px;padding:10px 28px;background:#1a5fd0;color:#fff;border:0">Submit</button>
</form></body></html>`;

const NEXT = `<!doctype html><html><head><title>Next</title></head>
<body style="margin:0;font:22px sans-serif;background:#fff;color:#111">
<form method="post" action="/submit" style="position:absolute;left:80px;top:60px">
  <h1 style="font-size:30px">One more step</h1><input type="hidden" name="name" value="next">
  <button type="submit" style="font-size:22px;padding:10px 28px;background:#1a5fd0;color:#fff;border:0">Continue</button>
</form></body></html>`;

let s: TestServer;
let root: string;
let page: http.Server;
let base: string;
const submissions: URLSearchParams[] = [];

// These tests need root and the Debian packages of scripts/install-desktop-deps.sh (test-all installs
// them); without them the file fails loudly instead of skipping.
if (!enabled) throw new Error("real-desktop tests need root and the packages of scripts/install-desktop-deps.sh");

/** first X display of this file (its DevTools ports are DEFAULT_PORT_BASES.devtools + display) */
let lo = 0;
let inet: TestInternet | undefined;

describe("a live run on a real managed desktop with the local engine", () => {
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), "cua-runs-desktop-"));
    page = http.createServer((req, res) => {
      if (req.method === "POST" && req.url === "/submit") {
        let body = "";
        req.on("data", (d) => (body += d));
        req.on("end", () => {
          const form = new URLSearchParams(body);
          submissions.push(form);
          res.writeHead(200, { "content-type": "text/html" });
          res.end(`<!doctype html><html><body style="font:28px sans-serif;margin:80px">
            <h1>Thank you</h1><p>Registered ${form.get("name")?.replace(/[<>&]/g, "")}</p></body></html>`);
        });
        return;
      }
      res.writeHead(200, { "content-type": "text/html" });
      res.end(req.url === "/next" ? NEXT : FORM);
    });
    // machines run isolated (docs/security.md) and cannot reach the host's loopback: the page is served
    // from the stand-in internet (isolation/test-internet.ts) through a unix socket
    const sock = path.join(os.tmpdir(), `cua-page-${process.pid}.sock`);
    await rm(sock, { force: true });
    await new Promise<void>((r) => page.listen(sock, r));
    inet = await startTestInternet();
    base = await inet.expose(sock);
    lo = 520 + (process.pid % 200);
    s = await startTestServer({
      MACHINES_ROOT: root,
      MACHINE_DISPLAY_RANGE: `${lo}-${lo + 150}`,
      MACHINE_METER_INTERVAL_MS: "3600000",
      TEST_LOG_LEVEL: "warn",
    });
  }, 60_000);

  afterAll(async () => {
    if (lo) await removeDevtoolsGuard([DEFAULT_PORT_BASES.devtools + lo, DEFAULT_PORT_BASES.devtools + lo + 150]);
    await s?.stop();
    page?.close();
    await inet?.close();
    if (root) await rm(root, { recursive: true, force: true });
  }, 60_000);

  it("fills and submits a local form: the page receives the submission, the run succeeds and is billed per step", async () => {
    const acct = await s.account({ credits: 1000 });
    const api = (method: string, p: string, body?: unknown) => call(s.url, method, p, { key: acct.live_key, body });
    const prov = await api("POST", "/v1/machines", {
      display_name: "runs-desktop",
      screen_width: 1280,
      screen_height: 720,
    });
    expect(prov.status).toBe(202);
    const id = prov.body.machine.id as string;
    try {
      await waitFor(
        "the desktop",
        () => api("GET", `/v1/machines/${id}`),
        (r) => r.body.status === "running",
        60_000,
      );
      const nav = await api("POST", `/v1/machines/${id}/browser/navigate`, { parameters: { url: `${base}/form` } });
      expect(nav.body).toMatchObject({ success: true });
      const before = (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: acct.account_id } })).balanceCredits;

      const task =
        "type 'Ada Lovelace' into the Name field, then type 'ada@example.com' into the Email field, then click Submit, then done when 'Thank you' appears";
      const r = await api("POST", "/v1/runs", { machine_id: id, task, max_steps: 20 });
      expect(r.status).toBe(201);
      expect(r.body.llm).toMatchObject({ provider: "managed", model: "svc-cua-local", billed_to: "platform" });
      const done = await waitRun(
        s,
        acct.live_key,
        r.body.id,
        ["succeeded", "failed", "awaiting_human", "timed_out"],
        180_000,
      );
      if (done.status !== "succeeded") {
        const steps = await s.app.deps.db.runStep.findMany({ where: { runId: r.body.id }, orderBy: { step: "asc" } });
        throw new Error(
          `run ${done.status}: ${JSON.stringify(done.error)} steps: ${JSON.stringify(steps.map((x) => [x.step, x.phase, x.actions, x.reasoning, x.results]))}`,
        );
      }
      expect(submissions).toHaveLength(1);
      expect(submissions[0]!.get("name")).toBe("Ada Lovelace");
      expect(submissions[0]!.get("email")).toBe("ada@example.com");
      // click Name, type, click Email, type, click Submit, done; a loaded machine may show the thank-you
      // page a step late, and the agent then waits a step (a `wait` action) before it is done
      const steps = await s.app.deps.db.runStep.findMany({
        where: { runId: r.body.id, phase: "committed" },
        orderBy: { step: "asc" },
      });
      const kinds = steps.map((x) => (x.actions as { action_type: string }[]).map((a) => a.action_type).join("+"));
      expect(kinds.filter((k) => k !== "wait")).toEqual(["click", "type_text", "click", "type_text", "click", "done"]);
      expect(done.step_count).toBe(steps.length);
      expect(done.step_count).toBeLessThanOrEqual(8);
      expect(done.usage.credits_charged).toBe(5 * done.step_count);
      const after = (await s.app.deps.db.account.findUniqueOrThrow({ where: { id: acct.account_id } })).balanceCredits;
      expect(before - after).toBe(5 * done.step_count);
      const frames = (await readSse(`${s.url}/v1/runs/${r.body.id}/events`, acct.live_key)).frames;
      // one step frame per committed step, with its actions (the extra `wait` included when there was one)
      const streamed = frames
        .filter((f) => f.event === "step")
        .map((f) => (f.data.actions as { action_type: string }[]).map((x) => x.action_type).join("+"));
      expect(streamed).toEqual(kinds);
      // the durable terminal frame, then the final id-less `done` frame (DECISIONS "Compatibility amendments")
      expect(frames.filter((f) => f.event !== "done").at(-1)).toMatchObject({
        event: "terminal",
        data: { status: "succeeded" },
      });
      expect(frames.at(-1)).toMatchObject({ event: "done", data: { status: "succeeded" } });
    } finally {
      await api("DELETE", `/v1/machines/${id}`);
    }
  }, 300_000);

  it("asks for a human when the engine cannot find what the task names (on_awaiting_human pause), and goes on after a resume; fails with the engine's code otherwise (issue 15)", async () => {
    const acct = await s.account({ credits: 1000 });
    const api = (method: string, p: string, body?: unknown) => call(s.url, method, p, { key: acct.live_key, body });
    const prov = await api("POST", "/v1/machines", {
      display_name: "runs-human",
      screen_width: 1280,
      screen_height: 720,
    });
    const id = prov.body.machine.id as string;
    try {
      await waitFor(
        "the desktop",
        () => api("GET", `/v1/machines/${id}`),
        (r) => r.body.status === "running",
        60_000,
      );
      await api("POST", `/v1/machines/${id}/browser/navigate`, { parameters: { url: `${base}/form` } });
      const submitted = submissions.length;
      // the form has no Continue button: with on_awaiting_human fail the run fails with the engine's own code
      const failing = await api("POST", "/v1/runs", {
        machine_id: id,
        task: "click Continue",
        on_awaiting_human: "fail",
      });
      const failed = await waitRun(
        s,
        acct.live_key,
        failing.body.id,
        ["succeeded", "failed", "awaiting_human"],
        120_000,
      );
      expect(failed.status).toBe("failed");
      expect(failed.error.code).toBe("ELEMENT_NOT_FOUND");
      // by default (pause) the run asks for a human, saying why
      const r = await api("POST", "/v1/runs", { machine_id: id, task: "click Continue" });
      const paused = await waitRun(s, acct.live_key, r.body.id, ["succeeded", "failed", "awaiting_human"], 120_000);
      expect(paused.status).toBe("awaiting_human");
      expect(paused.awaiting_human_reason).toMatch(/^cannot_proceed: .*Continue/);
      // the human opens the page that has it and resumes: the engine looks again and clicks it
      await api("POST", `/v1/machines/${id}/browser/navigate`, { parameters: { url: `${base}/next` } });
      const resumed = await api("POST", `/v1/runs/${r.body.id}/resume`, { note: "opened the next page" });
      expect(resumed.status).toBeLessThan(300);
      const done = await waitRun(s, acct.live_key, r.body.id, ["succeeded", "failed", "awaiting_human"], 120_000);
      expect(done.status).toBe("succeeded");
      expect(submissions.length).toBe(submitted + 1);
      expect(submissions.at(-1)!.get("name")).toBe("next");
    } finally {
      await api("DELETE", `/v1/machines/${id}`);
    }
  }, 400_000);
});
