// usage: scratch-page.ts <seed> [description...]
import { writeFileSync } from "node:fs";
import { chromium } from "playwright-core";
import { generatePage } from "./pages.ts";
import { prepareGrounding, groundInContext } from "../../packages/core/src/engines/local/ground.ts";
import { findInputBoxes } from "../../packages/core/src/engines/local/pixels.ts";
const seed = Number(process.argv[2]);
const page = generatePage(seed);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--headless", "--disable-gpu"] });
const ctx = await browser.newContext({ viewport: { width: page.width, height: page.height } });
const tab = await ctx.newPage();
await tab.setContent(page.html);
const png = await tab.screenshot();
writeFileSync(`/tmp/page-${seed}.png`, png);
const boxes = await tab.evaluate(() => Object.fromEntries(Array.from(document.querySelectorAll("[data-bench-id]")).map((e) => { const r = e.getBoundingClientRect(); return [(e as HTMLElement).dataset.benchId, [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)]]; })));
await browser.close();
const g = await prepareGrounding({ bytes: png, mime: "image/png", width: page.width, height: page.height });
console.log("ocr ms", g.ocr.ms, "runs", g.ocr.runs.length);
if (process.argv.includes("--runs")) for (const r of g.ocr.runs) console.log(JSON.stringify(r.text), r.bbox);
const descs = process.argv.slice(3).filter((a) => !a.startsWith("--"));
for (const c of page.cases) if (descs.length === 0 || descs.includes(c.description)) {
  const r = groundInContext(g, c.description);
  console.log(c.category, JSON.stringify(c.description), "->", r.found ? [r.x, r.y, r.matchedText, r.bbox] : r.reason, "target", c.targetId ? boxes[c.targetId] : null);
}
if (process.argv.includes("--inputs") && g.pixels) console.log(findInputBoxes(g.pixels, { x: 0, y: 0, width: page.width, height: page.height }));
