import { readFileSync } from "node:fs";
import { runLocalOcr } from "../../packages/core/src/engines/local/ocr.ts";
const bytes = readFileSync(process.argv[2] ?? "/tmp/probe.png");
const r = await runLocalOcr({ bytes, mime: "image/png", width: 0, height: 0 });
for (const run of r.runs) {
  const cs = run.chars.filter(c => c.text !== " ");
  const cen = cs.map(c => (c.x0 + c.x1) / 2);
  console.log(run.text, run.bbox.height, cs.map((c, i) => `${c.text}${i ? (cen[i]! - cen[i - 1]!).toFixed(1) : ""}`).join(" "));
}
