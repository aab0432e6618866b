// Measures the activation ranges of the OCR recogniser's convolutions that int8 quantization needs
// (packages/engines/src/local/onnx-quant.ts) and writes packages/engines/src/local/ocr-int8-ranges.json.
//
//   npx tsx bench/grounding/calibrate.ts [--pages 16] [--seed 501] [--out path]
//
// The calibration screenshots are the local engine's test fixtures (packages/engines/test/local-engine/
// fixtures) and pages of the bench's generator with seeds the bench does not use (it uses 1-40 by default):
// none of the bench's own images. Each is read as the OCR reads it: detection at 960 and 1600 px (the fast
// and fine passes) and recognition of every box found (crops narrowed by the default recognitionSqueeze). The result is deterministic for the same
// screenshots, and holds the SHA-256 of the model file it was measured on: another model file loads in float.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { measureInt8Ranges } from "@cua/engines/local/ocr";
import { generatePage, launchPageBrowser } from "./pages.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
}

const pages = Number(arg("--pages", "16"));
const seed = Number(arg("--seed", "501"));
const out = arg("--out", path.join(root, "packages/engines/src/local/ocr-int8-ranges.json"));
if (seed <= 40 && seed + pages > 1) console.warn("warning: these seeds overlap the bench's pages (1-40)");

type Image = { bytes: Buffer; mime: "image/png" | "image/jpeg"; width: number; height: number };
const images: Image[] = [];
const fixtures = path.join(root, "packages/engines/test/local-engine/fixtures");
for (const f of readdirSync(fixtures).sort()) {
  if (!/\.(png|jpg)$/.test(f)) continue;
  const bytes = readFileSync(path.join(fixtures, f));
  // the sizes are read from the decoded image; these are placeholders
  images.push({ bytes, mime: f.endsWith(".png") ? "image/png" : "image/jpeg", width: 0, height: 0 });
}
const browser = await launchPageBrowser();
try {
  for (let k = 0; k < pages; k++) {
    const page = generatePage(seed + k);
    const ctx = await browser.newContext({
      viewport: { width: page.width, height: page.height },
      deviceScaleFactor: 1,
    });
    const tab = await ctx.newPage();
    await tab.setContent(page.html, { waitUntil: "load" });
    await tab.evaluate(() => document.fonts.ready);
    images.push({
      bytes: await tab.screenshot({ type: "png" }),
      mime: "image/png",
      width: page.width,
      height: page.height,
    });
    await ctx.close();
  }
} finally {
  await browser.close();
}
const t0 = performance.now();
const ranges = await measureInt8Ranges(images, [960, 1600]);
ranges.about = `activation ranges (min, max) of the OCR recogniser's quantized convolutions, measured by bench/grounding/calibrate.ts on the ${images.length - pages} test fixtures and ${pages} generated pages (seeds ${seed}-${seed + pages - 1}), detection at 960 and 1600 px`;
// laid out as the repository's formatter (biome) lays out JSON: one range per line
const entries = Object.entries(ranges.recognition.ranges).map(
  ([k, [lo, hi]]) => `      ${JSON.stringify(k)}: [${lo}, ${hi}]`,
);
writeFileSync(
  out,
  `{\n  "about": ${JSON.stringify(ranges.about)},\n  "recognition": {\n    "sha256": ${JSON.stringify(ranges.recognition.sha256)},\n    "ranges": {\n${entries.join(",\n")}\n    }\n  }\n}\n`,
);
console.log(
  `${images.length} screenshots, ${entries.length} recognition tensors in ${Math.round(performance.now() - t0)} ms; wrote ${out}`,
);
