// Issue 3: with no upstream configured, live keys get the built-in local engine (DECISIONS.md "Engines"):
// real OCR on a real screenshot (rendered in Chromium, DOM boxes recorded beside it), through the server.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, REPO_ROOT, startTestServer, type TestServer } from "./helpers.ts";

const FIX = path.join(REPO_ROOT, "packages/engines/test/local-engine/fixtures");
const login = fs.readFileSync(path.join(FIX, "login.png")).toString("base64");
const boxes = JSON.parse(fs.readFileSync(path.join(FIX, "login.boxes.json"), "utf8")).boxes as Record<
  string,
  { x: number; y: number; width: number; height: number }
>;
const inside = (p: { x: number; y: number }, b: { x: number; y: number; width: number; height: number }) =>
  p.x >= b.x && p.x <= b.x + b.width && p.y >= b.y && p.y <= b.y + b.height;

let s: TestServer;
let key: string;
beforeAll(async () => {
  s = await startTestServer();
  key = (await s.account({ credits: 100 })).live_key;
});
afterAll(() => s.stop());

describe("the local engine behind /v1 (live key, no MANAGED_ENGINE)", () => {
  it("clicks inside the named button, reports the local model, and bills 5", async () => {
    const r = await call(s.url, "POST", "/v1/predict", {
      key,
      body: { screenshot: login, instruction: "click the Sign in button" },
    });
    expect(r.status).toBe(200);
    expect(r.body.llm).toEqual({ provider: "managed", model: "svc-cua-local", billed_to: "platform" });
    expect(r.headers.get("x-credits-charged")).toBe("5");
    const click = r.body.actions[0];
    expect(click.action_type).toBe("click");
    expect(inside(click.params, boxes.signin!)).toBe(true);
  });

  it("types into a labelled field: a click inside the input, then the text", async () => {
    const r = await call(s.url, "POST", "/v1/predict", {
      key,
      body: { screenshot: login, instruction: "type 'ada@example.com' into the Email address field" },
    });
    expect(r.status).toBe(200);
    expect(r.body.actions[0].action_type).toBe("click");
    expect(inside(r.body.actions[0].params, boxes.email!)).toBe(true);
    // DECISIONS "Compatibility amendments": each action may carry a short `description`
    expect(r.body.actions[1]).toEqual({
      action_type: "type_text",
      params: { text: "ada@example.com" },
      description: 'Type "ada@example.com"',
    });
  });

  it("an element that is not there is a fail action, never a made-up click", async () => {
    const r = await call(s.url, "POST", "/v1/predict", {
      key,
      body: { screenshot: login, instruction: "click the Delete account button" },
    });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("fail");
    expect(r.body.actions.map((a: { action_type: string }) => a.action_type)).toEqual(["fail"]);
  });

  it("ground and ocr use the same engine: the box of 'Forgot password?' and its text", async () => {
    const g = await call(s.url, "POST", "/v1/ground", {
      key,
      body: { screenshot: login, description: "the Forgot password link" },
    });
    expect(g.status).toBe(200);
    expect(g.body.found).toBe(true);
    expect(inside({ x: g.body.x, y: g.body.y }, boxes.forgot!)).toBe(true);
    expect(g.headers.get("x-credits-charged")).toBe("3");
    const o = await call(s.url, "POST", "/v1/ocr", { key, body: { screenshot: login } });
    expect(o.status).toBe(200);
    expect(o.body.text.replace(/\s+/g, " ")).toMatch(/Forgot/);
    const w = o.body.words.find((x: { text: string }) => /^Pricing$/i.test(x.text));
    expect(w).toBeDefined();
    expect(inside({ x: w.bbox.x + w.bbox.width / 2, y: w.bbox.y + w.bbox.height / 2 }, boxes.pricing!)).toBe(true);
    expect(o.headers.get("x-credits-charged")).toBe("3");
  });
});
