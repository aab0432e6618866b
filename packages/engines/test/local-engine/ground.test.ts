// Grounding on real screenshots: the returned point lies inside the element's DOM box; text that is
// not on the page gives found=false.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { groundElement } from "../../src/local/ground.ts";
import { createLocalEngine } from "../../src/local/local-engine.ts";
import { configureLocalOcr, localOcrConfig, warmUpLocalOcr } from "../../src/local/ocr.ts";
import { contains, loadFixture } from "./helpers.ts";

beforeAll(async () => {
  await warmUpLocalOcr();
});

describe("grounding on the login page", () => {
  const f = loadFixture("login");
  it.each([
    ["the Sign in button", "signin", 0],
    ["Cancel", "cancel", 0],
    ["link 'Pricing'", "pricing", 0],
    ["Contact sales", "contact", 0],
    ["the Forgot password? link", "forgot", 0],
    ["the Email address field", "email", 0],
    ["field labelled Password", "password", 0],
    ["the checkbox next to Remember me", "remember", 2],
    ["the heading 'Sign in to your account'", "title", 0],
  ])("%s", async (description, id, slack) => {
    const r = await groundElement(f.image, description);
    expect(r.found, r.reason).toBe(true);
    expect(contains(f.box(id), r, slack), `${JSON.stringify(r.bbox)} vs ${JSON.stringify(f.box(id))}`).toBe(true);
    expect(r.confidence).toBeGreaterThan(0.5);
    expect(r.bbox).not.toBeNull();
    if (r.bbox && r.x !== null && r.y !== null) expect(contains(r.bbox, r)).toBe(true);
  });

  it.each(["the Delete account button", "link 'Careers'", "Quarterly forecast"])(
    "%s is not found",
    async (description) => {
      const r = await groundElement(f.image, description);
      expect(r).toMatchObject({ found: false, x: null, y: null, bbox: null });
      expect(r.confidence).toBeLessThan(0.8);
    },
  );
});

describe("grounding on the dark dashboard", () => {
  const f = loadFixture("dashboard");
  it.each([
    ["Search field", "search"],
    ["the Export CSV button", "export"],
    ["New order", "new"],
    ["the Reports menu item", "menu-reports"],
    ["the second Edit link", "edit2"],
    ["the cell Bob Martinez", "bob"],
  ])("%s", async (description, id) => {
    const r = await groundElement(f.image, description);
    expect(r.found, r.reason).toBe(true);
    expect(contains(f.box(id), r), `(${r.x}, ${r.y}) vs ${JSON.stringify(f.box(id))}`).toBe(true);
  });

  it("answers in the space of the image sent (a 1024x640 JPEG)", async () => {
    const j = loadFixture("dashboard-jpeg");
    const r = await groundElement(j.image, "the New order button");
    expect(r.found).toBe(true);
    expect(contains(j.box("new"), r)).toBe(true);
  });
});

describe("two OCR passes", () => {
  afterEach(() =>
    configureLocalOcr({ detectionMaxSide: DEFAULTS.detectionMaxSide, detectionFineSide: DEFAULTS.detectionFineSide }),
  );
  const DEFAULTS = { ...localOcrConfig() };

  it("the fast pass answers what it finds; the image is read once", async () => {
    const f = loadFixture("login");
    const r = await groundElement(f.image, "the Sign in button");
    expect(r).toMatchObject({ found: true, pass: "fast" });
    expect(contains(f.box("signin"), r)).toBe(true);
  });

  it("what the fast pass cannot see is found on the fine pass, through the engine too", async () => {
    // a fast pass at 256 px cannot detect 14 px text on a 1280x720 screen; the fine pass at 1280 can
    configureLocalOcr({ detectionMaxSide: 256, detectionFineSide: 1280 });
    const f = loadFixture("login");
    const r = await groundElement(f.image, "the Forgot password? link");
    expect(r).toMatchObject({ found: true, pass: "fine" });
    expect(contains(f.box("forgot"), r)).toBe(true);
    const g = await createLocalEngine().ground({
      screenshot: f.image,
      description: "the Forgot password? link",
      cuaVersion: "v4",
    });
    expect(g.found).toBe(true);
    expect(contains(f.box("forgot"), g)).toBe(true);
  });

  it("text that is on no page is looked for on both passes and still not found", async () => {
    const f = loadFixture("login");
    const r = await groundElement(f.image, "the Delete account button");
    expect(r).toMatchObject({ found: false, pass: "fine" });
  });

  it("an image no larger than the fast side has a single pass", async () => {
    configureLocalOcr({ detectionMaxSide: 1024 });
    const j = loadFixture("dashboard-jpeg"); // 1024x640: the fast pass already sees it at full size
    const r = await groundElement(j.image, "the Delete account button");
    expect(r).toMatchObject({ found: false, pass: "fast" });
  });
});
