// LocalEngine through the Engine port, on real screenshots.

import { validateEngineActions } from "@cua/base/actions/action";
import { beforeAll, describe, expect, it } from "vitest";
import { createLocalEngine } from "../../src/local/local-engine.ts";
import type { PredictInput } from "../../src/types.ts";
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
    // a human could get it going: a run that allows pausing asks for one with this reason (issue 15)
    expect(out.needs_human?.reason).toMatch(/^cannot_proceed: .*Delete account/);
  });

  it("offers no human when the instruction itself says to fail", async () => {
    const out = await engine.predict(input("fail because the account is locked"));
    expect(out.status).toBe("fail");
    expect(out.needs_human).toBeUndefined();
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

  it("carries a multi-step instruction across calls through the trajectory, and is done only once the click's effect is seen", async () => {
    // signing in leads to the dashboard (another screenshot); clicking Reports changes it again
    const instruction = "click the Sign in button, then click Reports";
    const step = async (
      screenshot: typeof dashboard.image,
      prev?: { actions: PredictInput["trajectory"][number]["actions"]; reasoning: string },
    ) =>
      engine.predict(
        input(instruction, {
          screenshot,
          maxActions: 1,
          trajectory: prev ? [{ screenshot: null, actions: prev.actions, reasoning: prev.reasoning }] : [],
        }),
      );
    const first = await step(login.image);
    expect(first.status).toBe("continue");
    const a = first.actions[0];
    if (a?.action_type !== "click") throw new Error("expected a click");
    expect(contains(login.box("signin"), a.params)).toBe(true);
    const second = await step(dashboard.image, first);
    const b = second.actions[0];
    if (b?.action_type !== "click") throw new Error(`expected a click, got ${JSON.stringify(second)}`);
    expect(contains(dashboard.box("menu-reports"), b.params)).toBe(true);
    expect(second.status).toBe("continue");
    // the screen after the last click differs from the one it was made on: done
    const third = await step(login.image, second);
    expect(third).toMatchObject({ status: "done", actions: [{ action_type: "done", params: {} }] });
  });

  it("never reports done for a click that changed nothing: waits, tries once more, then fails with the reason (issue 15)", async () => {
    const instruction = "click Reports";
    const seen: string[] = [];
    let prev: { actions: PredictInput["trajectory"][number]["actions"]; reasoning: string } | undefined;
    for (let i = 0; i < 8; i++) {
      const out = await engine.predict(
        input(instruction, {
          screenshot: dashboard.image, // the screen never changes
          maxActions: 1,
          trajectory: prev ? [{ screenshot: null, actions: prev.actions, reasoning: prev.reasoning }] : [],
        }),
      );
      seen.push(out.actions.map((x) => x.action_type).join("+"));
      if (out.status !== "continue") {
        expect(out.status).toBe("fail");
        expect(out.actions[0]).toMatchObject({ action_type: "fail", params: { code: "VERIFICATION_FAILED" } });
        expect(out.reasoning).toMatch(/did not change the screen/);
        break;
      }
      prev = out;
    }
    // click, wait 1, wait 2, click again, wait 1, wait 2, fail: never done
    expect(seen).toEqual(["click", "wait", "wait", "click", "wait", "wait", "fail"]);
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
