// Pure helpers of the provider engines: key spellings, batch rules, PNG codec and fitting, prompts, model table.
import { describe, expect, it } from "vitest";
import {
  ANTHROPIC_TOOL_BETA,
  anthropicImageLimits,
  anthropicToolVersion,
} from "../../src/providers/anthropic-models.ts";
import { finalizeBatch, stopNote } from "../../src/providers/batch.ts";
import { fitSize, prepareImage, toCallerSpace, toModelSpace } from "../../src/providers/image-fit.ts";
import { canonicalKey, parseHoldKeys, parseXdotoolKeys, toOpenAIKey, toXdotoolKey } from "../../src/providers/keys.ts";
import { openaiToolFor } from "../../src/providers/openai-engine.ts";
import { decodePng, downscale, encodePng } from "../../src/providers/png.ts";
import {
  assemblePredictSystem,
  confidenceFromText,
  isNotFoundText,
  PROMPT_COMPONENT_LIMIT,
  truncateComponent,
  verdictFromText,
} from "../../src/providers/prompt.ts";
import { palettePng, solidPng } from "./fixtures.ts";

describe("keys", () => {
  it.each([
    ["Return", "enter"],
    ["KP_Enter", "enter"],
    ["Page_Up", "pageup"],
    ["super", "meta"],
    ["Super_L", "meta"],
    ["CMD", "meta"],
    ["ARROWLEFT", "left"],
    ["ESC", "escape"],
    ["BackSpace", "backspace"],
    ["minus", "-"],
    ["plus", "+"],
    ["F12", "f12"],
    ["A", "A"],
    ["a", "a"],
    [" ", "space"],
    ["hyper", null],
  ])("canonicalKey(%j) = %j", (raw, want) => {
    expect(canonicalKey(raw)).toBe(want);
  });

  it.each([
    ["ctrl+s", [["ctrl", "s"]]],
    ["Return", [["enter"]]],
    ["ctrl+a BackSpace", [["ctrl", "a"], ["backspace"]]],
    ["ctrl++", [["ctrl", "+"]]],
    ["+", [["+"]]],
    ["ctrl+hyper", null],
    ["   ", null],
  ])("parseXdotoolKeys(%j)", (text, want) => {
    expect(parseXdotoolKeys(text)).toEqual(want);
  });

  it("parseHoldKeys", () => {
    expect(parseHoldKeys(undefined)).toEqual([]);
    expect(parseHoldKeys("shift")).toEqual(["shift"]);
    expect(parseHoldKeys("ctrl+super")).toEqual(["ctrl", "meta"]);
    expect(parseHoldKeys("ctrl+warp")).toBeNull();
  });

  it.each([
    ["enter", "Return", "ENTER"],
    ["meta", "super", "META"],
    ["pagedown", "Page_Down", "PAGEDOWN"],
    ["up", "Up", "ARROWUP"],
    ["f5", "F5", "F5"],
    ["+", "plus", "+"],
    ["a", "a", "a"],
  ])("%s -> xdotool %s, OpenAI %s", (key, xdo, oai) => {
    expect(toXdotoolKey(key)).toBe(xdo);
    expect(toOpenAIKey(key)).toBe(oai);
    expect(canonicalKey(xdo)).toBe(key);
    expect(canonicalKey(oai)).toBe(key);
  });
});

describe("finalizeBatch", () => {
  const limits = { width: 100, height: 50, maxActions: 3 };
  const click = (x: number, y: number) => ({ action_type: "click", params: { x, y } });

  it("applies defaults and clamps coordinates just off the edge", () => {
    const b = finalizeBatch([{ kind: "actions", source: "c", actions: [click(101, -1)] }], limits);
    expect(b.actions).toEqual([{ action_type: "click", params: { x: 99, y: 0, button: "left", clicks: 1 } }]);
  });

  it("stops at a coordinate far off the image, keeping what came before", () => {
    const b = finalizeBatch(
      [
        { kind: "actions", source: "a", actions: [click(1, 1)] },
        { kind: "actions", source: "b", actions: [click(500, 1)] },
        { kind: "actions", source: "c", actions: [click(2, 2)] },
      ],
      limits,
    );
    expect(b.actions).toHaveLength(1);
    expect(b.stoppedBy).toMatchObject({ kind: "refused", source: "b" });
    expect(stopNote(b)).toMatch(/outside the 100x50 screenshot/);
  });

  it("stops at an observation without a note", () => {
    const b = finalizeBatch(
      [
        { kind: "observe", source: "screenshot" },
        { kind: "actions", source: "a", actions: [click(1, 1)] },
      ],
      limits,
    );
    expect(b.actions).toEqual([]);
    expect(stopNote(b)).toBeUndefined();
  });

  it("enforces the tools filter, schema and max_actions", () => {
    expect(
      finalizeBatch(
        [{ kind: "actions", source: "t", actions: [{ action_type: "type_text", params: { text: "x" } }] }],
        { ...limits, tools: ["click"] },
      ).stoppedBy?.reason,
    ).toMatch(/not among the allowed tools \(click\)/);
    expect(
      finalizeBatch(
        [{ kind: "actions", source: "t", actions: [{ action_type: "type_text", params: { text: "" } }] }],
        limits,
      ).stoppedBy?.reason,
    ).toMatch(/invalid type_text/);
    expect(
      finalizeBatch(
        [{ kind: "actions", source: "k", actions: [{ action_type: "key_combo", params: { keys: ["ctrl", "ctrl"] } }] }],
        limits,
      ).stoppedBy?.kind,
    ).toBe("refused");
    const many = finalizeBatch(
      [{ kind: "actions", source: "m", actions: [click(1, 1), click(2, 2), click(3, 3), click(4, 4)] }],
      limits,
    );
    expect(many.actions).toHaveLength(3);
    expect(many.stoppedBy?.kind).toBe("max_actions");
  });
});

describe("png", () => {
  it("decodes a palette PNG with an Up-filtered row written by another encoder", () => {
    const { bytes, pixels } = palettePng();
    const img = decodePng(bytes)!;
    expect(img).toMatchObject({ width: 2, height: 2, channels: 3 });
    expect([0, 1, 2, 3].map((i) => [...img.data.subarray(i * 3, i * 3 + 3)])).toEqual(pixels);
  });

  it("round-trips RGBA through encode and decode", () => {
    const data = new Uint8Array(3 * 2 * 4).map((_, i) => (i * 37) % 256);
    const img = decodePng(encodePng({ width: 3, height: 2, channels: 4, data }))!;
    expect(img.channels).toBe(4);
    expect([...img.data]).toEqual([...data]);
  });

  it("area-averages when downscaling", () => {
    const data = new Uint8Array([0, 0, 0, 200, 200, 200, 100, 100, 100, 100, 100, 100]);
    const small = downscale({ width: 2, height: 2, channels: 3, data }, 1, 1);
    expect([...small.data]).toEqual([100, 100, 100]);
  });

  it("returns null for what it does not decode", () => {
    expect(decodePng(Buffer.from("not a png at all, really not"))).toBeNull();
  });
});

describe("image fitting", () => {
  const limits = { maxLongEdge: 1568, maxPixels: 1_150_000 };
  it.each([
    [1280, 800, 1280, 800],
    [1920, 1080, 1429, 804],
    [3840, 2160, 1429, 804],
    [1000, 3000, 522, 1568],
  ])("fitSize(%i, %i)", (w, h, ew, eh) => {
    const fit = fitSize(w, h, limits);
    expect(fit.width).toBeLessThanOrEqual(1568);
    expect(fit.width * fit.height).toBeLessThanOrEqual(1_150_000);
    expect(Math.abs(fit.width - ew)).toBeLessThanOrEqual(1);
    expect(Math.abs(fit.height - eh)).toBeLessThanOrEqual(1);
  });

  it("resizes a large PNG and maps coordinates both ways", () => {
    const p = prepareImage(solidPng(1920, 1080), limits);
    expect(p.resized).toBe(true);
    expect(decodePng(p.bytes)).toMatchObject({ width: p.width, height: p.height });
    const back = toCallerSpace(p, p.width - 1, p.height - 1);
    expect(back.x).toBeGreaterThanOrEqual(1918);
    expect(back.x).toBeLessThanOrEqual(1919);
    expect(toModelSpace(p, 0, 0)).toEqual({ x: 0, y: 0 });
    expect(toModelSpace(p, back.x, back.y)).toEqual({ x: p.width - 1, y: p.height - 1 });
  });

  it("leaves small images and JPEGs alone", () => {
    expect(prepareImage(solidPng(800, 600), limits).resized).toBe(false);
    const jpeg = { bytes: Buffer.from([0xff, 0xd8, 0xff, 0]), mime: "image/jpeg" as const, width: 4000, height: 3000 };
    expect(prepareImage(jpeg, limits)).toMatchObject({ resized: false, width: 4000, height: 3000 });
  });
});

describe("prompts", () => {
  it("truncates each component to 16,000 characters", () => {
    expect(truncateComponent("x".repeat(20_000))).toHaveLength(PROMPT_COMPONENT_LIMIT);
    expect(truncateComponent("  ")).toBeUndefined();
  });

  it("system prompt replaces the base prompt; the protocol always follows", () => {
    const s = assemblePredictSystem({
      systemPrompt: "Be terse.",
      instructions: "Use the keyboard.",
      maxActions: 2,
      width: 10,
      height: 20,
    });
    expect(s.split("\n\n")[0]).toBe("Be terse.");
    expect(s).toContain("Use the keyboard.");
    expect(s).toContain("at most 2 actions");
    expect(s).toContain("10x20");
  });

  it.each([
    ["The file is saved.", "done"],
    ["FAIL: captcha", "fail"],
    ["I could not continue. FAIL: no login", "fail"],
  ])("verdictFromText(%j) = %s", (text, status) => {
    expect(verdictFromText(text).status).toBe(status);
  });

  it("reads confidence and not-found markers", () => {
    expect(confidenceFromText("confidence=0.82, clicking")).toBe(0.82);
    expect(confidenceFromText("Confidence: 1")).toBe(1);
    expect(confidenceFromText("no number")).toBeUndefined();
    expect(isNotFoundText("NOT_FOUND")).toBe(true);
    expect(isNotFoundText("found it")).toBe(false);
  });
});

describe("model tables", () => {
  it.each([
    ["claude-sonnet-5", "computer_toolset_20260801"],
    ["claude-opus-5-5", "computer_toolset_20260801"],
    ["claude-haiku-5-5", "computer_toolset_20260801"],
    ["claude-some-future-model", "computer_toolset_20260801"],
    ["claude-opus-4-8", "computer_20251124"],
    ["claude-opus-4-5-20251101", "computer_20251124"],
    ["claude-sonnet-4-6", "computer_20251124"],
    ["claude-sonnet-4-5-20250929", "computer_20250124"],
    ["claude-haiku-4-5", "computer_20250124"],
    ["claude-opus-4-1", "computer_20250124"],
    ["claude-sonnet-4-20250514", "computer_20250124"],
  ] as const)("%s uses %s", (model, tool) => {
    expect(anthropicToolVersion(model)).toBe(tool);
  });

  it("beta flags and image limits", () => {
    expect(ANTHROPIC_TOOL_BETA.computer_toolset_20260801).toBeNull();
    expect(ANTHROPIC_TOOL_BETA.computer_20251124).toBe("computer-use-2025-11-24");
    expect(anthropicImageLimits("claude-sonnet-5").maxLongEdge).toBe(2576);
    expect(anthropicImageLimits("claude-opus-4-7").maxLongEdge).toBe(2576);
    expect(anthropicImageLimits("claude-opus-4-6").maxLongEdge).toBe(1568);
    expect(anthropicImageLimits("claude-sonnet-4-5").maxLongEdge).toBe(1568);
  });

  it("OpenAI tool by model", () => {
    expect(openaiToolFor("gpt-5.4")).toBe("computer");
    expect(openaiToolFor("gpt-6-sol")).toBe("computer");
    expect(openaiToolFor("computer-use-preview-2025-03-11")).toBe("computer_use_preview");
  });
});
