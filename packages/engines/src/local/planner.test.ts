// Issue 15: qualifiers, roles and verification in the local engine's planner, over stub OCR runs
// (pure logic: no image). The screen reader stands in for the OCR of a fresh screenshot.
import { describe, expect, it } from "vitest";
import { run } from "../../test/local-engine/helpers.ts";
import { parseDescription } from "./describe.ts";
import { type GroundingContext, groundInContext, groundingContext } from "./ground.ts";
import { type Plan, type PlanOptions, parseInstruction, planActions, type ScreenReader } from "./interpreter.ts";
import type { OcrRun } from "./ocr.ts";
import {
  type Check,
  decodeState,
  encodeState,
  evaluateCheck,
  regionChanged,
  screenLines,
  screenSignature,
  typedProbes,
  typedVisible,
} from "./verify.ts";

function ctxOf(runs: OcrRun[]): GroundingContext {
  return groundingContext({ runs, width: 1280, height: 720 }, null);
}

function reader(ctx: GroundingContext): ScreenReader {
  return { lines: () => screenLines(ctx), signature: () => screenSignature(ctx), region: () => null };
}

function plan(instruction: string, runs: OcrRun[], opts: Partial<PlanOptions> = {}): Plan {
  const ctx = ctxOf(runs);
  return planActions(parseInstruction(instruction), (d) => groundInContext(ctx, d), {
    maxActions: 10,
    width: 1280,
    height: 720,
    screen: reader(ctx),
    ...opts,
  });
}

function point(p: Plan, i = 0): { x: number; y: number } {
  const a = p.actions[i];
  if (!a || !("x" in a.params)) throw new Error(`no point in ${JSON.stringify(p.actions)}`);
  return { x: Number(a.params.x), y: Number(a.params.y) };
}

describe("descriptions with qualifiers (issue 15)", () => {
  it.each<[string, Record<string, unknown>]>([
    ["the Export button in the top navigation", { texts: ["Export", "Export button"], role: "button", area: "top" }],
    ["Settings in the sidebar", { texts: ["Settings"], area: "left" }],
    ["the Help link in the footer", { texts: ["Help", "Help link"], area: "bottom" }],
    [
      "the row for ACME in the invoices table",
      { texts: ["ACME"], role: "text", relation: { kind: "within", anchor: "invoices" } },
    ],
    ["the 7th Edit link", { texts: ["Edit", "Edit link"], ordinal: 7 }],
    ["Choose Team", { texts: ["Choose Team", "Team"] }],
    ["choose team", { texts: ["team", "choose team"] }],
  ])("%s", (d, want) => {
    expect(parseDescription(d)).toMatchObject(want);
  });

  const page = [
    run("Export", 1100, 20), // top navigation
    run("Invoices", 100, 300, 22),
    run("ACME", 100, 340),
    run("Globex", 100, 370),
    run("Export", 600, 500), // a second Export, lower down
    run("Team", 400, 150, 34, 100), // a plan card's heading
    run("Choose Team", 380, 260),
  ];
  const ctx = ctxOf(page);
  it("keeps to the named part of the screen", () => {
    expect(groundInContext(ctx, "the Export button in the top navigation")).toMatchObject({ found: true, y: 28 });
  });
  it("finds the row inside the named table", () => {
    expect(groundInContext(ctx, "the row for ACME in the invoices table")).toMatchObject({ found: true, y: 348 });
  });
  it("a heading whose text matches does not beat the button that says it", () => {
    expect(groundInContext(ctx, "Team").matchedText).toBe("Team"); // the word alone is still the heading
    expect(groundInContext(ctx, "Choose Team")).toMatchObject({ found: true, matchedText: "Choose Team" });
    const p = plan("Choose Team as the plan", page);
    expect(point(p)).toMatchObject({ y: 268 });
  });
});

describe("planning goal phrasings (issue 15)", () => {
  const form = [run("Sign up", 100, 40, 30), run("Name", 100, 100), run("Email", 100, 160), run("Sign up", 100, 240)];
  it("fills each field and submits with the button its goal names", () => {
    const p = plan("Sign up with the name Ada Lovelace and email ada@example.com", form);
    expect(p.actions.map((a) => a.action_type)).toEqual(["click", "type_text", "click", "type_text", "click"]);
    // the submit is the button (normal text), not the page's big heading
    expect(point(p, 4).y).toBe(248);
    // not done: the submit's effect must be seen on the next screenshot first
    expect(p.status).toBe("continue");
    expect(p.check).toMatchObject({ k: "change", submit: true, step: 2 });
  });

  it("of a goal's button names, the one near the form just filled is clicked (not a browser bubble's Save)", () => {
    const screen = [run("Company", 100, 300), run("Save", 1100, 370), run("Register", 100, 360)];
    const p = plan("Fill in Company: Bletchley and submit", screen, {
      resume: { step: 1, action: 0 },
      near: { x: 400, y: 310 },
    });
    expect(point(p)).toMatchObject({ y: 368 });
  });

  it("change X to Y selects what the field holds before typing", () => {
    const p = plan("Change the quantity to 3", [run("Quantity", 100, 100)]);
    expect(p.actions).toEqual([
      expect.objectContaining({ action_type: "click" }),
      { action_type: "key_combo", params: { keys: ["ctrl", "a"] } },
      { action_type: "type_text", params: { text: "3" } },
    ]);
    expect(p.check).toMatchObject({ k: "typed", text: "3" });
  });

  it("choose X as Y opens the list when X is not visible, then stays on the step", () => {
    const p = plan("pick CSV as the format", [run("Format", 100, 100), run("JSON", 200, 100)]);
    expect(p.actions).toHaveLength(1);
    expect(p.next).toEqual({ step: 0, action: 0 });
    expect(p.again).toEqual({ step: 0, n: 1 });
    const then = plan(
      "pick CSV as the format",
      [run("Format", 100, 100), run("JSON", 200, 100), run("CSV", 200, 130)],
      {
        again: p.again,
      },
    );
    expect(point(then)).toMatchObject({ y: 138 });
    // a list that never shows the option: not found, never a guess
    const never = plan("pick CSV as the format", [run("Format", 100, 100)], { again: { step: 0, n: 2 } });
    expect(never.actions[0]).toMatchObject({ action_type: "fail", params: { code: "ELEMENT_NOT_FOUND" } });
  });

  it("scrolls until the text shows, then goes on", () => {
    const p = plan("scroll down until Pricing shows, then click Pricing", [run("Home", 10, 10)]);
    // over the middle of the screen, wherever the pointer was left
    expect(p.actions).toEqual([
      { action_type: "scroll", params: { clicks: -5, direction: "vertical", x: 640, y: 360 } },
    ]);
    expect(p.check).toMatchObject({ k: "scroll" });
    // seen after a scroll: once more, for the page to stand still, then the click
    const moving = plan("scroll down until Pricing shows, then click Pricing", [run("Pricing", 10, 500)], {
      again: p.again,
    });
    expect(moving.actions.map((a) => a.action_type)).toEqual(["wait"]);
    const seen = plan("scroll down until Pricing shows, then click Pricing", [run("Pricing", 10, 500)], {
      again: moving.again,
    });
    expect(seen.actions.map((a) => a.action_type)).toEqual(["click"]);
  });

  it("waits for work to finish by its signs, not for the literal words", () => {
    const busy = plan("Wait for the report to finish generating", [run("Generating report... 40%", 10, 10)]);
    expect(busy.actions[0]).toMatchObject({ action_type: "wait" });
    expect(busy.status).toBe("continue");
    // waits vary, so an unchanged screen is not taken for a stalled agent
    const busy2 = plan("Wait for the report to finish generating", [run("Generating report... 40%", 10, 10)], {
      again: busy.again,
    });
    expect(busy2.actions[0]).not.toEqual(busy.actions[0]);
    const ready = plan("Wait for the report to finish generating", [run("Report ready: 12 rows", 10, 10)], {
      again: busy2.again,
    });
    expect(ready).toMatchObject({ status: "done" });
  });

  it("an Enter must change the screen (a search, a form, a command)", () => {
    const p = plan("Search the docs for webhooks", [run("Search the docs", 100, 100)], {
      resume: { step: 1, action: 0 },
    });
    expect(p.actions).toEqual([{ action_type: "key_press", params: { keys: ["enter"] } }]);
    expect(p.check).toMatchObject({ k: "change", d: "press enter" });
  });

  it("looks once more before failing when an element is missing after earlier actions", () => {
    const first = plan("click Save, then click Done", [run("Intro", 10, 10)], { resume: { step: 1, action: 0 } });
    expect(first.actions).toEqual([{ action_type: "wait", params: { seconds: 1 } }]);
    expect(first.next).toEqual({ step: 1, action: 0 });
    const second = plan("click Save, then click Done", [run("Intro", 10, 10)], {
      resume: first.next,
      again: first.again,
    });
    expect(second.actions[0]).toMatchObject({ action_type: "fail", params: { code: "ELEMENT_NOT_FOUND" } });
  });

  it("uses the terminal through its shortcut when no launcher is visible", () => {
    const p = plan("Use the terminal to create notes.txt containing hello", [run("Welcome", 10, 10)], {
      maxActions: 1,
    });
    expect(p.actions).toEqual([{ action_type: "key_combo", params: { keys: ["ctrl", "alt", "t"] } }]);
    expect(p.check).toMatchObject({ k: "change" });
  });

  it("opens the text editor and the file manager through the managed desktop's shortcuts (issue 15)", () => {
    expect(plan("open the text editor", [run("Welcome", 10, 10)]).actions).toEqual([
      { action_type: "key_combo", params: { keys: ["ctrl", "alt", "e"] } },
    ]);
    expect(plan("open the file manager", [run("Welcome", 10, 10)]).actions).toEqual([
      { action_type: "key_combo", params: { keys: ["super", "e"] } },
    ]);
  });

  it("a launcher is a label of its own, and an opened terminal shows a prompt (not just any change)", () => {
    // the word inside the page's address is no launcher: the shortcut is used
    const p = plan("open a terminal", [run("198.51.100.2/terminal-file/start", 300, 60)]);
    expect(p.actions).toEqual([{ action_type: "key_combo", params: { keys: ["ctrl", "alt", "t"] } }]);
    const check = p.check as Check;
    // the screen changed, but to a web page (with an e-mail address on it): not a terminal
    expect(evaluateCheck(check, ctxOf([run("Contact ada@example.com", 10, 10)]))).toMatchObject({ ok: false });
    expect(evaluateCheck(check, ctxOf([run("ada@desktop:~$", 10, 10)]))).toEqual({ ok: true });
  });

  it("'the search box' is the field, not the Search button", () => {
    const ctx = ctxOf([run("Search", 500, 100)]);
    expect(parseDescription("the search box").role).toBe("field");
    expect(groundInContext(ctx, "the search box").found).toBe(true);
  });
});

describe("verification records (issue 15)", () => {
  it("round-trips through the reasoning", () => {
    const check: Check = { k: "typed", step: 1, d: 'type "a" into Name', text: "a", box: null, t: 0, w: 0 };
    const token = encodeState({ check, again: { step: 2, n: 1 } });
    expect(decodeState(`did things [local-progress 2.0/3 abcdef0123] ${token}`)).toEqual({
      check,
      again: { step: 2, n: 1 },
    });
    expect(decodeState("no token")).toBeNull();
    expect(encodeState({})).toBe("");
  });

  it.each<[string, string[]]>([
    ["Ada", ["Ada"]],
    ["a very long message that scrolls inside its field", ["a very long", "inside its field"]],
    ["   ", []],
  ])("probes of %j", (text, probes) => {
    expect(typedProbes(text)).toEqual(probes);
  });

  const box = { x: 200, y: 95, width: 300, height: 30 };
  it("typed text counts only inside its field", () => {
    expect(typedVisible(ctxOf([run("Name", 100, 100), run("Ada Lovelace", 210, 102)]), "Ada Lovelace", box)).toBe(true);
    expect(typedVisible(ctxOf([run("Name", 100, 100), run("Ada Lovelace", 210, 402)]), "Ada Lovelace", box)).toBe(
      false,
    );
  });

  it("typed text is found inside its field even when OCR joined it with the field's label", () => {
    // one detection run from x=100 to x=~330: "Name" left of the box, "Grace" inside it
    const joined = run("Name          Grace", 100, 102, 16, 250);
    expect(typedVisible(ctxOf([joined]), "Grace", box)).toBe(true);
    expect(typedVisible(ctxOf([joined]), "Name", box)).toBe(false);
  });

  it("typed text is found with the field's caret read as a letter after it", () => {
    expect(typedVisible(ctxOf([run("Gracel", 210, 102)]), "Grace", box)).toBe(true);
    expect(typedVisible(ctxOf([run("Bletchleyl", 210, 102)]), "Bletchley", box)).toBe(true);
    expect(typedVisible(ctxOf([run("Grape", 210, 102)]), "Ada Lovelace", box)).toBe(false);
  });

  it("a form's value must be all the field holds (not appended to an autofilled value)", () => {
    expect(typedVisible(ctxOf([run("adalaptop", 210, 102)]), "laptop", box, true)).toBe(false);
    expect(typedVisible(ctxOf([run("laptopl", 210, 102)]), "laptop", box, true)).toBe(true);
    expect(typedVisible(ctxOf([run("adalaptop", 210, 102)]), "laptop", box, false)).toBe(true);
  });

  it("a click must change the screen; a submit must not bring up an error", () => {
    const before = ctxOf([run("Sign up", 100, 100)]);
    const check: Check = {
      k: "change",
      step: 0,
      d: "click Sign up",
      sig: screenSignature(before),
      t: 0,
      w: 0,
      submit: true,
    };
    expect(evaluateCheck(check, before)).toMatchObject({ ok: false, fatal: false });
    expect(evaluateCheck(check, ctxOf([run("Thank you", 100, 100)]))).toEqual({ ok: true });
    expect(evaluateCheck(check, ctxOf([run("Sign up", 100, 100), run("Email is required", 100, 140)]))).toMatchObject({
      ok: false,
      fatal: true,
    });
  });

  it("a control's pixels changing counts as its change", () => {
    expect(regionChanged("ffffffff", "ffff10ff")).toBe(true);
    expect(regionChanged("ffffffff", "fafff5ff")).toBe(false);
  });
});
