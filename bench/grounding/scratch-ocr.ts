import { readFileSync } from "node:fs";
import { runLocalOcr, warmUpLocalOcr, configureLocalOcr } from "../../packages/core/src/engines/local/ocr.ts";
if (process.argv[3]) configureLocalOcr({ backend: process.argv[3] as any });
console.log(await warmUpLocalOcr());
const bytes = readFileSync(process.argv[2] ?? "/tmp/probe.png");
for (let i = 0; i < 3; i++) {
  const r = await runLocalOcr({ bytes: Buffer.from(bytes.subarray(0)), mime: "image/png", width: 0, height: 0 });
  console.log(r.ms, r.backend, r.cached);
  if (i === 0) { for (const run of r.runs) console.log(JSON.stringify(run.text), run.bbox, run.confidence); console.log(r.words.map(w => `${w.text}@${w.bbox.x},${w.bbox.width}`).join("  ")); }
  // defeat cache
  bytes[bytes.length - 1] = (bytes[bytes.length - 1]! + 1) % 256;
}
