// Issue 15: targets resolved by role as well as text, on a real managed-desktop screenshot (Chromium
// with its tab strip and address bar): a page with a search input and a blue Search button right
// against it, and no other label. fixtures/search-box-desktop.png (1280x720) was taken on a managed
// desktop: the input spans x 84-531, y 237-279; the button x 539-655, its text x 553-634.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { groundElement } from "../../src/local/ground.ts";
import { warmUpLocalOcr } from "../../src/local/ocr.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const image = {
  bytes: readFileSync(path.join(here, "fixtures", "search-box-desktop.png")),
  mime: "image/png" as const,
  width: 1280,
  height: 720,
};

beforeAll(async () => {
  await warmUpLocalOcr();
});

describe("roles on a desktop screenshot (issue 15)", () => {
  it("'the search box' is the input left of the Search button, not the button", async () => {
    const g = await groundElement(image, "the search box");
    expect(g).toMatchObject({ found: true, element: "input" });
    expect(g.x).toBeGreaterThan(84);
    expect(g.x).toBeLessThan(531);
    expect(g.y).toBeGreaterThan(237);
    expect(g.y).toBeLessThan(279);
  });

  it("'the Search button' is the button", async () => {
    const g = await groundElement(image, "the Search button");
    expect(g.found).toBe(true);
    expect(g.x).toBeGreaterThan(539);
    expect(g.x).toBeLessThan(655);
  });

  it("the page's title in the browser's tab strip loses to the page's own text", async () => {
    // "Shop" is both the tab's title (y about 20) and the page's heading (y about 185)
    const g = await groundElement(image, "Shop");
    expect(g.found).toBe(true);
    expect(g.y).toBeGreaterThan(100);
  });
});
