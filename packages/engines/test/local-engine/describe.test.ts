// Description parsing and fuzzy text matching: pure logic over strings and stub OCR runs.
import { describe, expect, it } from "vitest";
import { parseDescription } from "../../src/local/describe.ts";
import { groundInContext, groundingContext } from "../../src/local/ground.ts";
import { buildSegments, findText } from "../../src/local/match-text.ts";
import { contains, run } from "./helpers.ts";

describe("parseDescription", () => {
  it.each([
    ["the Save button", { texts: ["Save", "Save button"], role: "button", relation: null, ordinal: null }],
    ["Search field", { texts: ["Search", "Search field"], role: "field", relation: null, ordinal: null }],
    ["link 'Pricing'", { texts: ["Pricing"], role: "link", relation: null, ordinal: null, quoted: true }],
    [
      "the checkbox next to Remember me",
      { texts: [], role: "checkbox", relation: { kind: "next-to", anchor: "Remember me" } },
    ],
    [
      "field labelled Email address",
      { texts: ["Email address"], role: "field", relation: { kind: "labelled", anchor: "Email address" } },
    ],
    [
      "the input for Password",
      { texts: ["Password"], role: "field", relation: { kind: "labelled", anchor: "Password" } },
    ],
    ["Copy link button", { texts: ["Copy link", "Copy link button"], role: "button" }],
    ["Reports in the sidebar menu", { texts: ["Reports"], role: "menu" }],
    [
      "the I agree to the terms checkbox",
      { texts: ["I agree to the terms", "I agree to the terms checkbox"], role: "checkbox" },
    ],
    ["the second Edit link", { texts: ["Edit", "Edit link"], role: "link", ordinal: 2 }],
    ["the last Delete button", { texts: ["Delete", "Delete button"], role: "button", ordinal: -1 }],
    ["Menu", { texts: ["Menu"], role: "menu" }],
    [
      "the big blue Sign in button",
      { texts: ["big blue Sign in", "big blue Sign in button", "Sign in"], role: "button" },
    ],
    ["the text box below Email", { texts: [], role: "field", relation: { kind: "below", anchor: "Email" } }],
  ])("%s", (description, expected) => {
    expect(parseDescription(description)).toMatchObject(expected);
  });

  it("keeps ordinal words that are part of a label when asked to", () => {
    expect(parseDescription("the First name field", { ordinals: false })).toMatchObject({
      texts: ["First name", "First name field"],
      ordinal: null,
    });
  });
});

describe("findText", () => {
  const segs = buildSegments([
    run("Usemame", 10, 10),
    run("Unsaved changes", 10, 40),
    run("Save", 10, 70),
    run("Contact sales", 200, 10),
  ]);

  it("tolerates OCR look-alikes such as rn for m", () => {
    const [m] = findText(segs, "Username", 0.8);
    expect(m?.text).toBe("Usemame");
    expect(m?.score).toBeGreaterThan(0.8);
  });

  it("prefers a whole-word exact match over a match inside a word", () => {
    const ms = findText(segs, "Save", 0.5);
    expect(ms[0]?.text).toBe("Save");
    const inside = ms.find((m) => m.text.toLowerCase().includes("saved"));
    expect(inside === undefined || inside.score < 0.8).toBe(true);
  });

  it("matches ignoring case and whitespace, with a box over just the matched words", () => {
    const [m] = findText(segs, "SALES", 0.8);
    expect(m?.text).toBe("sales");
    expect(m?.bbox.x).toBeGreaterThan(230);
  });

  it("finds nothing for text that is not there", () => {
    expect(findText(segs, "Quarterly forecast", 0.8)).toEqual([]);
  });
});

describe("groundInContext with stub runs", () => {
  const ctx = groundingContext(
    {
      runs: [run("Edit", 500, 100), run("Edit", 500, 140), run("Edit", 500, 180), run("Delete", 600, 100)],
      width: 1280,
      height: 720,
    },
    null,
  );

  it("picks the nth of repeated texts in reading order", () => {
    const second = groundInContext(ctx, "the second Edit link");
    expect(second.found).toBe(true);
    expect(contains({ x: 500, y: 140, width: 40, height: 16 }, second)).toBe(true);
    const last = groundInContext(ctx, "the last Edit link");
    expect(contains({ x: 500, y: 180, width: 40, height: 16 }, last)).toBe(true);
  });

  it("answers found=false with null coordinates and a confidence below the threshold", () => {
    const r = groundInContext(ctx, "the Archive button");
    expect(r).toMatchObject({ found: false, x: null, y: null, bbox: null });
    expect(r.confidence).toBeLessThan(0.8);
  });
});
