import { describe, expect, it } from "vitest";
import {
  isHd,
  isLongPrompt,
  MACHINE_PRICING,
  modelsCatalog,
  type PredictPriceInput,
  priceGround,
  priceOcr,
  pricePredict,
  priceRunStep,
  priceSessionCreate,
  pricingCatalog,
  promptChars,
  RUN_STEP_CREDITS,
  SESSION_CREATE_CREDITS,
} from "./pricing.ts";

// SPEC "Prediction and grounding" (Credits (managed), Surcharges), SPEC "Runs" (step price),
// DECISIONS "Precise answers" (HD is width > 1280 or height > 720; the 500-character rule).

const SD = { width: 1280, height: 720 };
const HD = { width: 1920, height: 1080 };

const P = (over: Partial<PredictPriceInput> = {}): PredictPriceInput => ({
  kind: "predict",
  cuaVersion: "v5",
  image: SD,
  trajectoryImages: [],
  ...over,
});

describe("isHd (DECISIONS Precise answers: strictly larger than 1280x720 on either side)", () => {
  it.each([
    [{ width: 1280, height: 720 }, false],
    [{ width: 1281, height: 720 }, true],
    [{ width: 1280, height: 721 }, true],
    [{ width: 800, height: 1000 }, true],
    [{ width: 2000, height: 100 }, true],
    [{ width: 1, height: 1 }, false],
  ])("%j -> %s", (img, expected) => {
    expect(isHd(img)).toBe(expected);
  });
});

describe("the 500-character rule (SPEC Surcharges, DECISIONS: each trimmed, summed, strictly over 500)", () => {
  it.each<[string, string | undefined, string | undefined, number, boolean]>([
    ["nothing", undefined, undefined, 0, false],
    ["exactly 500 in one field", "a".repeat(500), undefined, 500, false],
    ["501 in one field", undefined, "a".repeat(501), 501, true],
    ["250 + 250", "a".repeat(250), "b".repeat(250), 500, false],
    ["250 + 251", "a".repeat(250), "b".repeat(251), 501, true],
    ["whitespace is trimmed", `   ${"a".repeat(500)}\n\n`, "  \t ", 500, false],
    ["inner whitespace counts", "a ".repeat(250).trim(), "bb", 501, true],
    ["emoji count as one character each", "😀".repeat(500), undefined, 500, false],
  ])("%s", (_name, sp, ins, chars, long) => {
    expect(promptChars(sp, ins)).toBe(chars);
    expect(isLongPrompt(sp, ins)).toBe(long);
  });
});

describe("pricePredict (SPEC Credits (managed) and Surcharges)", () => {
  it.each<[string, Partial<PredictPriceInput>, number, [string, number][]]>([
    ["predict base", {}, 5, [["base", 5]]],
    ["session predict base", { kind: "session_predict" }, 4, [["base", 4]]],
    [
      "v1 adds 3",
      { cuaVersion: "v1" },
      8,
      [
        ["base", 5],
        ["cua_version_v1", 3],
      ],
    ],
    ["v3 and v4 add nothing", { cuaVersion: "v4" }, 5, [["base", 5]]],
    [
      "HD current image adds 1",
      { image: HD },
      6,
      [
        ["base", 5],
        ["hd_images", 1],
      ],
    ],
    [
      "1281 wide is HD",
      { image: { width: 1281, height: 600 } },
      6,
      [
        ["base", 5],
        ["hd_images", 1],
      ],
    ],
    [
      "each trajectory screenshot adds 2",
      { trajectoryImages: [SD, SD, SD] },
      11,
      [
        ["base", 5],
        ["trajectory_screenshots", 6],
      ],
    ],
    [
      "HD trajectory images add 1 each on top",
      { image: HD, trajectoryImages: [HD, SD, HD] },
      5 + 6 + 3,
      [
        ["base", 5],
        ["trajectory_screenshots", 6],
        ["hd_images", 3],
      ],
    ],
    [
      "long prompt adds 1",
      { systemPrompt: "x".repeat(300), instructions: "y".repeat(201) },
      6,
      [
        ["base", 5],
        ["long_prompt", 1],
      ],
    ],
    ["exactly 500 is free", { systemPrompt: "x".repeat(300), instructions: "y".repeat(200) }, 5, [["base", 5]]],
    [
      "everything at once on a session predict",
      {
        kind: "session_predict",
        cuaVersion: "v1",
        image: HD,
        trajectoryImages: [HD, SD],
        instructions: "z".repeat(600),
      },
      4 + 3 + 4 + 2 + 1,
      [
        ["base", 4],
        ["cua_version_v1", 3],
        ["trajectory_screenshots", 4],
        ["hd_images", 2],
        ["long_prompt", 1],
      ],
    ],
  ])("%s", (_name, over, totalCredits, lines) => {
    const price = pricePredict(P(over));
    expect(price.total).toBe(totalCredits);
    expect(price.breakdown.map((l) => [l.item, l.credits])).toEqual(lines);
    expect(price.breakdown.reduce((s, l) => s + l.credits, 0)).toBe(price.total);
  });

  it.each(["byok", "test"] as const)("%s is priced at 0 (SPEC: BYOK 0 credits; test keys bill nothing)", (mode) => {
    expect(pricePredict(P({ mode, cuaVersion: "v1", image: HD, trajectoryImages: [HD] }))).toEqual({
      total: 0,
      breakdown: [],
    });
  });
});

describe("other calculators", () => {
  it.each<[string, ReturnType<typeof priceGround>, number]>([
    ["ground base 3", priceGround({ image: SD }), 3],
    ["ground HD adds only 1", priceGround({ image: HD }), 4],
    ["ground byok", priceGround({ image: HD, mode: "byok" }), 0],
    ["ocr 3", priceOcr(), 3],
    ["ocr HD still 3", priceOcr({}), 3],
    ["ocr test", priceOcr({ mode: "test" }), 0],
    ["session create 10 fixed", priceSessionCreate(), 10],
    ["session create byok", priceSessionCreate({ mode: "byok" }), 0],
    ["run step v5", priceRunStep({ cuaVersion: "v5" }), 5],
    ["run step v4", priceRunStep({ cuaVersion: "v4" }), 5],
    ["run step v3", priceRunStep({ cuaVersion: "v3" }), 5],
    ["run step v1", priceRunStep({ cuaVersion: "v1" }), 8],
    ["run step test", priceRunStep({ cuaVersion: "v1", mode: "test" }), 0],
  ])("%s", (_name, price, expected) => {
    expect(price.total).toBe(expected);
  });

  it("constants match SPEC", () => {
    expect(SESSION_CREATE_CREDITS).toBe(10);
    expect(RUN_STEP_CREDITS).toEqual({ v5: 5, v4: 5, v3: 5, v1: 8 });
    expect(MACHINE_PRICING).toEqual({
      linux_running_per_hour: 5,
      windows_running_per_hour: 9,
      stopped_per_hour: 1,
      billing: "per_minute",
      provision_gate_credits: 20,
      snapshot_credits: 1,
    });
  });
});

describe("GET /v1/models body (DECISIONS Prediction)", () => {
  const body = modelsCatalog();

  it("has exactly the documented top-level fields", () => {
    expect(Object.keys(body).sort()).toEqual(["action_types", "cua_versions", "models", "pricing"]);
  });

  it("lists the managed engine and anthropic and openai computer-use models, each with every cua_version", () => {
    const providers = new Set(body.models.map((m) => m.provider));
    expect(providers).toEqual(new Set(["managed", "anthropic", "openai"]));
    for (const m of body.models) expect(m.cua_versions).toEqual(["v5", "v4", "v3", "v1"]);
    expect(new Set(body.models.map((m) => m.id)).size).toBe(body.models.length);
  });

  it("cua_versions: v5 is the only default, step credits as SPEC Runs", () => {
    expect(body.cua_versions).toEqual([
      { id: "v5", default: true, step_credits: 5 },
      { id: "v4", default: false, step_credits: 5 },
      { id: "v3", default: false, step_credits: 5 },
      { id: "v1", default: false, step_credits: 8 },
    ]);
  });

  it("action_types are the ten of SPEC Action", () => {
    expect(body.action_types).toHaveLength(10);
    expect(body.action_types).toContain("key_combo");
  });

  it("pricing.schedules carries the effective schedule and webhook values (SPEC Schedules, Limits)", () => {
    expect(body.pricing.schedules).toEqual({
      wallet_gate_credits: 20,
      credits_per_minute: 10,
      start_minimum_credits: 20,
      cap_hours: 6,
      webhook_dedup_window_seconds: 60,
      webhook_replay_window_seconds: 300,
    });
  });

  it("pricing carries every price and surcharge", () => {
    const p = pricingCatalog();
    expect(p.predict.base_credits).toBe(5);
    expect(p.session_predict.base_credits).toBe(4);
    expect(p.session_create.credits).toBe(10);
    expect(p.ground.base_credits).toBe(3);
    expect(p.ocr.credits).toBe(3);
    expect(p.parse.credits).toBe(0);
    expect(p.surcharges).toMatchObject({
      trajectory_screenshot_credits: 2,
      hd_image_credits: 1,
      hd_threshold: { width: 1280, height: 720 },
      cua_version_v1_credits: 3,
      long_prompt_credits: 1,
      long_prompt_threshold_chars: 500,
    });
    expect(p.surcharges.applies_to.ground).toEqual(["hd_image"]);
    expect(p.run_step_credits).toEqual({ v5: 5, v4: 5, v3: 5, v1: 8 });
    expect(p.machines).toEqual(MACHINE_PRICING);
    expect(p.byok_credits).toBe(0);
    expect(p.test_mode_credits).toBe(0);
  });

  it("is plain JSON and a fresh copy each call (callers cannot mutate the catalog)", () => {
    const a = modelsCatalog();
    (a.pricing.schedules as { cap_hours: number }).cap_hours = 99;
    a.pricing.run_step_credits.v1 = 1;
    expect(modelsCatalog()).toEqual(JSON.parse(JSON.stringify(body)));
  });
});
