// LocalEngine through the Engine port, on real screenshots.
import { beforeAll, describe, expect, it } from "vitest";
import { validateEngineActions } from "../../src/actions/action.ts";
import { createLocalEngine } from "../../src/engines/local/local-engine.ts";
import type { PredictInput } from "../../src/engines/types.ts";
import { contains, loadFixture } from "./helpers.ts";

const engine = createLocalEngine();
const login = loadFixture("login");
const dashboard = loadFixture("dashboard");

function input(instruction: string, over: Partial<PredictInput> = {}): PredictInput {
  return { screenshot: login.image, instruction, cuaVersion: "v5", maxActions: 10, trajectory: [], ...over };
}

beforeAll(async () => {
  const w = await engine.warmUp();
  expect(w.backend).toBe("paddle");
});

describe("LocalEngine.predict", () => {
  it("has id local", () => {
    expect(engine.id).toBe("local");
  });

  it("clicks inside the target's DOM box", async () => {
    const out = await engine.predict(input("click the Sign in button"));
    const actions = validateEngineActions(out.actions, { width: 1280, height: 720 });
    expect(out.status).toBe("continue");
    expect(actions).toHaveLength(1);
    const a = actions[0];
    if (a?.action_type !== "click") throw new Error("expected a click");
    expect(contains(login.box("signin"), a.params)).toBe(true);
    expect(out.usage.input_tokens).toBeGreaterThan(5);
    expect(out.usage.output_tokens).toBe(0);
  });

  it("types into a labelled field by clicking inside the input first", async () => {
    const out = await engine.predict(input("type 'ada@example.com' into the Email address field, then press Enter"));
    expect(out.actions.map((a) => a.action_type)).toEqual(["click", "type_text", "key_press"]);
    const click = out.actions[0];
    if (click?.action_type !== "click") throw new Error("expected a click");
    expect(contains(login.box("email"), click.params)).toBe(true);
    expect(out.actions[1]).toEqual({ action_type: "type_text", params: { text: "ada@example.com" } });
  });

  it("ticks the checkbox next to a label", async () => {
    const out = await engine.predict(input("check the Remember me checkbox"));
    const a = out.actions[0];
    if (a?.action_type !== "click") throw new Error("expected a click");
    expect(contains(login.box("remember"), a.params, 2)).toBe(true);
  });

  it("fails with a reason instead of clicking when the element is missing", async () => {
    const out = await engine.predict(input("click Delete account"));
    expect(out.status).toBe("fail");
    expect(out.actions).toEqual([
      {
        action_type: "fail",
        params: { code: "ELEMENT_NOT_FOUND", message: expect.stringContaining("Delete account") },
      },
    ]);
  });

  it("is done when the goal text is visible", async () => {
    const out = await engine.predict(
      input("click Export CSV, then done when 'Thank you for your order' appears", { screenshot: dashboard.image }),
    );
    expect(out.status).toBe("done");
    expect(out.actions).toEqual([{ action_type: "done", params: {} }]);
  });

  it("presses keys without OCR", async () => {
    const out = await engine.predict(input("press ctrl+s"));
    expect(out.actions).toEqual([{ action_type: "key_combo", params: { keys: ["ctrl", "s"] } }]);
    expect(out.usage.input_tokens).toBe(0);
  });

  it("carries a multi-step instruction across calls through the trajectory", async () => {
    const instruction = "click Export CSV, then click Reports";
    const first = await engine.predict(input(instruction, { screenshot: dashboard.image, maxActions: 1 }));
    expect(first.status).toBe("continue");
    const a = first.actions[0];
    if (a?.action_type !== "click") throw new Error("expected a click");
    expect(contains(dashboard.box("export"), a.params)).toBe(true);
    const second = await engine.predict(
      input(instruction, {
        screenshot: dashboard.image,
        maxActions: 1,
        trajectory: [{ screenshot: null, actions: first.actions, reasoning: first.reasoning }],
      }),
    );
    const b = second.actions[0];
    if (b?.action_type !== "click") throw new Error("expected a click");
    expect(contains(dashboard.box("menu-reports"), b.params)).toBe(true);
    const third = await engine.predict(
      input(instruction, {
        screenshot: dashboard.image,
        maxActions: 1,
        trajectory: [{ screenshot: null, actions: second.actions, reasoning: second.reasoning }],
      }),
    );
    expect(third).toMatchObject({ status: "done", actions: [{ action_type: "done", params: {} }] });
  });

  it("keeps to the tools filter", async () => {
    const out = await engine.predict(input("scroll down 3", { tools: ["click"] }));
    expect(out.status).toBe("fail");
    expect(out.actions[0]).toMatchObject({ action_type: "fail", params: { code: "TOOL_NOT_ALLOWED" } });
  });
});

describe("LocalEngine.ground and .ocr", () => {
  it("grounds with a box and a point inside it", async () => {
    const r = await engine.ground({
      screenshot: dashboard.image,
      description: "the Export CSV button",
      cuaVersion: "v5",
    });
    expect(r.found).toBe(true);
    expect(contains(dashboard.box("export"), r)).toBe(true);
    expect(r.bbox).not.toBeNull();
  });

  it("answers found=false for text that is not on the screen", async () => {
    const r = await engine.ground({
      screenshot: dashboard.image,
      description: "the Launch rocket button",
      cuaVersion: "v5",
    });
    expect(r).toMatchObject({ found: false, x: null, y: null, bbox: null });
  });

  it("reads text, words and lines", async () => {
    const o = await engine.ocr?.(dashboard.image);
    expect(o?.text).toMatch(/Recent orders/i);
    expect(o?.words.length).toBeGreaterThan(15);
    expect(o?.lines.length).toBeGreaterThan(5);
  });
});
