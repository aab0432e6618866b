// Grounding benchmark for the local engine.
//
//   npx tsx bench/grounding/run.ts [--pages 40] [--seed 1] [--out results.json] [--verbose]
//        [--backend auto|paddle|tesseract] [--det-side 960] [--fine-side 1600] [--squeeze 1] [--threads 0]
//        [--workers 0] [--batch 4] [--no-fuse] [--int8 on|off] [--spin] [--no-baseline]
//        [--baseline key=value,...]
//
// Renders generated pages (bench/grounding/pages.ts) in headless Chromium (Debian's /usr/bin/chromium),
// takes a PNG screenshot of the viewport, reads each target's box from the DOM
// (getBoundingClientRect), and asks the local engine to ground every case's description on the
// screenshot. All pages are rendered before any grounding and Chromium is closed, so timings see the
// engine alone. A positive case passes when the returned point lies inside the target's box; a
// negative case (text that is on no page) passes when the engine answers found=false.
// Latency per image is the time of the first grounding on a fresh image (decode + OCR + matching);
// the following descriptions on the same image reuse the cached OCR and are timed separately.
// Unless --no-baseline, every image's first grounding is also timed with the previous defaults (one OCR
// worker, detection at 1088 px, batches of 8: BASELINE below), before or after the measured settings in
// turn, so the two latencies share the machine's load; the paired ratio per image is printed too.
// --baseline changes the baseline's settings (LocalOcrConfig fields, numbers or on/off), e.g.
// --baseline workers=2,detectionMaxSide=960,recognitionBatch=1 for the settings of issue 16's first step.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { groundElement } from "@cua/engines/local/ground";
import {
  clearLocalOcrCache,
  configureLocalOcr,
  localOcrConfig,
  ocrWorkerCount,
  warmUpLocalOcr,
} from "@cua/engines/local/ocr";
import { reportTarget } from "../lib.ts";
import { type BenchCase, type Category, generatePage, launchPageBrowser, TEXT_CATEGORIES } from "./pages.ts";

interface Args {
  pages: number;
  seed: number;
  out: string | null;
  verbose: boolean;
  backend: "auto" | "paddle" | "tesseract";
  detSide: number | null;
  fineSide: number | null;
  spin: boolean;
  squeeze: number | null;
  threads: number;
  workers: number | null;
  batch: number | null;
  fuse: boolean;
  int8: boolean | null;
  baseline: boolean;
  /** fields of the baseline's settings that differ from BASELINE */
  baselineOverrides: Record<string, number | boolean>;
}

/** The defaults before issue 16 (one OCR worker with two onnxruntime threads, detection at 1088, batches of 8, float). */
const BASELINE = {
  workers: 1,
  detectionMaxSide: 1088,
  recognitionBatch: 8,
  recognitionSqueeze: 1,
  int8: false,
} as const;

function parseArgs(argv: string[]): Args {
  const args: Args = {
    pages: 40,
    seed: 1,
    out: null,
    verbose: false,
    backend: "auto",
    detSide: null,
    fineSide: null,
    spin: false,
    squeeze: null,
    threads: 0,
    workers: null,
    batch: null,
    fuse: true,
    int8: null,
    baseline: true,
    baselineOverrides: {},
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--pages") args.pages = Number(argv[++i]);
    else if (a === "--seed") args.seed = Number(argv[++i]);
    else if (a === "--out") args.out = argv[++i] ?? null;
    else if (a === "--verbose") args.verbose = true;
    else if (a === "--backend") args.backend = (argv[++i] ?? "auto") as Args["backend"];
    else if (a === "--det-side") args.detSide = Number(argv[++i]);
    else if (a === "--fine-side") args.fineSide = Number(argv[++i]);
    else if (a === "--squeeze") args.squeeze = Number(argv[++i]);
    else if (a === "--threads") args.threads = Number(argv[++i]);
    else if (a === "--workers") args.workers = Number(argv[++i]);
    else if (a === "--batch") args.batch = Number(argv[++i]);
    else if (a === "--no-baseline") args.baseline = false;
    else if (a === "--baseline") {
      for (const kv of (argv[++i] ?? "").split(",").filter(Boolean)) {
        const [k, v = ""] = kv.split("=");
        if (!k) continue;
        args.baselineOverrides[k] =
          v === "on" || v === "true" ? true : v === "off" || v === "false" ? false : Number(v);
      }
    } else if (a === "--no-fuse") args.fuse = false;
    else if (a === "--int8") args.int8 = argv[++i] !== "off";
    else if (a === "--spin") args.spin = true;
  }
  return args;
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

interface CaseResult {
  page: string;
  category: Category;
  description: string;
  pass: boolean;
  found: boolean;
  point: { x: number; y: number } | null;
  target: Box | null;
  confidence: number;
  matched: string | null;
}

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx] ?? Number.NaN;
}

function inside(pt: { x: number; y: number }, b: Box, slack = 0): boolean {
  return pt.x >= b.x - slack && pt.x <= b.x + b.width + slack && pt.y >= b.y - slack && pt.y <= b.y + b.height + slack;
}

/** `npm run bench -- grounding` (and perf): the default run (40 pages, paired with the old settings). */
export async function benchGrounding(argv: string[] = []): Promise<void> {
  await main(argv);
}

async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const args = parseArgs(argv);
  configureLocalOcr({
    backend: args.backend,
    ...(args.detSide ? { detectionMaxSide: args.detSide } : {}),
    ...(args.fineSide ? { detectionFineSide: args.fineSide } : {}),
    ...(args.workers !== null ? { workers: args.workers } : {}),
    ...(args.batch !== null ? { recognitionBatch: args.batch } : {}),
    ...(args.squeeze !== null ? { recognitionSqueeze: args.squeeze } : {}),
    threads: args.threads,
    fuseModels: args.fuse,
    ...(args.int8 !== null ? { int8: args.int8 } : {}),
    spinning: args.spin,
  });
  // the measured settings, and the baseline's (the same but for BASELINE's fields)
  const measured = { ...localOcrConfig() };
  const baselineFields = { ...BASELINE, ...args.baselineOverrides };
  const baseline = { ...measured, ...baselineFields };
  const before16 = Object.keys(args.baselineOverrides).length === 0;
  const warm = await warmUpLocalOcr();
  if (args.baseline) {
    configureLocalOcr(baseline);
    await warmUpLocalOcr();
    configureLocalOcr(measured);
  }
  const loadStart = loadavg()[0] ?? 0;
  const c = localOcrConfig();
  console.log(
    `OCR backend: ${warm.backend} (warm-up ${warm.ms} ms); detection side ${c.detectionMaxSide} (fine pass ${c.detectionFineSide}), OCR workers ${ocrWorkerCount()}, batch ${c.recognitionBatch}, squeeze ${c.recognitionSqueeze}, fused models ${args.fuse ? "yes" : "no"}, int8 ${c.int8 ? "yes" : "no"}`,
  );
  const browser = await launchPageBrowser();
  const results: CaseResult[] = [];
  const firstLatency: Record<string, number[]> = { "1280x720": [], "1920x1080": [] };
  const firstCpu: Record<string, number[]> = { "1280x720": [], "1920x1080": [] };
  const stageTotals: Record<string, number> = {};
  let stageImages = 0;
  const warmLatency: number[] = [];
  const baseLatency: Record<string, number[]> = { "1280x720": [], "1920x1080": [] };
  const baseCpu: Record<string, number[]> = { "1280x720": [], "1920x1080": [] };
  const pairedRatio: Record<string, number[]> = { "1280x720": [], "1920x1080": [] };
  const finePasses = { first: 0, all: 0 };
  // Render every page first and close Chromium, so the browser's own work never runs during a timing.
  const rendered: { page: ReturnType<typeof generatePage>; png: Buffer; boxes: Record<string, Box> }[] = [];
  try {
    for (let k = 0; k < args.pages; k++) {
      const page = generatePage(args.seed + k);
      const ctx = await browser.newContext({
        viewport: { width: page.width, height: page.height },
        deviceScaleFactor: 1,
      });
      const tab = await ctx.newPage();
      await tab.setContent(page.html, { waitUntil: "load" });
      await tab.evaluate(() => document.fonts.ready);
      const png = await tab.screenshot({ type: "png" });
      const boxes: Record<string, Box> = await tab.evaluate(() => {
        const out: Record<string, { x: number; y: number; width: number; height: number }> = {};
        for (const el of Array.from(document.querySelectorAll("[data-bench-id]"))) {
          const r = el.getBoundingClientRect();
          out[(el as HTMLElement).dataset.benchId ?? ""] = { x: r.x, y: r.y, width: r.width, height: r.height };
        }
        return out;
      });
      await ctx.close();
      rendered.push({ page, png, boxes });
    }
  } finally {
    await browser.close();
  }
  await new Promise((r) => setTimeout(r, 1000));
  for (const [k, { page, png, boxes }] of rendered.entries()) {
    clearLocalOcrCache();
    const image = { bytes: png, mime: "image/png" as const, width: page.width, height: page.height };
    const size = `${page.width}x${page.height}`;
    // the baseline's first grounding on this image, before the measured settings on even images, after on odd
    let baseMs = Number.NaN;
    const timeBaseline = async (description: string) => {
      configureLocalOcr(baseline);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await groundElement(image, description);
      baseMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      baseLatency[size]?.push(baseMs);
      baseCpu[size]?.push((cpu.user + cpu.system) / 1000);
      configureLocalOcr(measured); // also drops the baseline's cached OCR
    };
    const visible = (c: BenchCase) => {
      if (!c.targetId) return true;
      const b = boxes[c.targetId];
      return (
        !!b &&
        b.width > 0 &&
        b.height > 0 &&
        b.x >= 0 &&
        b.y >= 0 &&
        b.x + b.width <= page.width &&
        b.y + b.height <= page.height
      );
    };
    const firstDescription = page.cases.find((c) => visible(c))?.description;
    if (args.baseline && firstDescription && k % 2 === 0) await timeBaseline(firstDescription);
    let first = true;
    let firstMs = Number.NaN;
    for (const c of page.cases.filter(visible)) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const g = await groundElement(image, c.description);
      const ms = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      if (g.pass === "fine") {
        finePasses.all++;
        if (first) finePasses.first++;
      }
      if (first) {
        firstLatency[size]?.push(ms);
        if (args.baseline && k % 2 === 0) pairedRatio[size]?.push(ms / baseMs);
        firstMs = ms;
        firstCpu[size]?.push((cpu.user + cpu.system) / 1000);
        for (const [k, v] of Object.entries(g.ocr.stages)) stageTotals[k] = (stageTotals[k] ?? 0) + v;
        stageImages++;
        first = false;
      } else warmLatency.push(ms);
      const target = c.targetId ? (boxes[c.targetId] ?? null) : null;
      const point = g.found && g.x !== null && g.y !== null ? { x: g.x, y: g.y } : null;
      // a checkbox's own box is small: a click within 3 px of it still toggles it
      const slack = c.category === "checkbox" ? 3 : 0;
      const pass = c.targetId === null ? !g.found : !!point && !!target && inside(point, target, slack);
      results.push({
        page: page.name,
        category: c.category,
        description: c.description,
        pass,
        found: g.found,
        point,
        target,
        confidence: g.confidence,
        matched: g.matchedText,
      });
      if (args.verbose && !pass) {
        console.log(
          `FAIL ${page.name} [${c.category}] "${c.description}" -> ${g.found ? `(${g.x},${g.y}) "${g.matchedText}"` : `not found: ${g.reason}`}; target ${target ? JSON.stringify(target) : "none"}`,
        );
      }
    }
    if (args.baseline && firstDescription && k % 2 === 1) {
      await timeBaseline(firstDescription);
      pairedRatio[size]?.push(firstMs / baseMs);
    }
  }

  const cats = [...new Set(results.map((r) => r.category))];
  console.log("\ncategory            cases  passed  accuracy");
  const line = (name: string, rs: CaseResult[]) => {
    const passed = rs.filter((r) => r.pass).length;
    console.log(
      `${name.padEnd(18)} ${String(rs.length).padStart(6)}  ${String(passed).padStart(6)}  ${rs.length ? ((100 * passed) / rs.length).toFixed(1) : "-"}%`,
    );
  };
  for (const c of cats.sort())
    line(
      c,
      results.filter((r) => r.category === c),
    );
  line(
    "TEXT TARGETS",
    results.filter((r) => TEXT_CATEGORIES.includes(r.category)),
  );
  line(
    "ALL POSITIVE",
    results.filter((r) => r.category !== "negative"),
  );
  line("ALL", results);
  const loadEnd = loadavg()[0] ?? 0;
  console.log(
    `\nlatency per image (first grounding: decode + OCR + match); 1-min load average ${loadStart.toFixed(2)} at start, ${loadEnd.toFixed(2)} at end`,
  );
  const row = (label: string, xs: number[], cpu: number[]) =>
    console.log(
      `  ${label.padEnd(22)} images ${String(xs.length).padStart(3)}  wall p50 ${percentile(xs, 50).toFixed(0)} ms  p95 ${percentile(xs, 95).toFixed(0)} ms   process CPU p50 ${percentile(cpu, 50).toFixed(0)} ms  p95 ${percentile(cpu, 95).toFixed(0)} ms`,
    );
  for (const [size, xs] of Object.entries(firstLatency)) {
    if (!xs.length) continue;
    row(`${size} measured`, xs, firstCpu[size] ?? []);
    const base = baseLatency[size] ?? [];
    if (!base.length) continue;
    row(`${size} baseline`, base, baseCpu[size] ?? []);
    const ratios = pairedRatio[size] ?? [];
    if (size.startsWith("1280x720"))
      reportTarget({
        row: "local grounding, 1280x720, p50 on 2 cores, accuracy kept",
        value: `${percentile(xs, 50).toFixed(0)} ms`,
        baseline: `${percentile(base, 50).toFixed(0)} ms with ${before16 ? "the settings before issue 16" : "the baseline settings below"}; ${results.filter((r) => r.pass).length}/${results.length} cases right`,
        target: "<= 250 ms",
        met: percentile(xs, 50) <= 250,
      });
    console.log(
      `  ${size.padEnd(22)} measured / baseline: p50 ${(percentile(xs, 50) / percentile(base, 50)).toFixed(2)}x; per image (paired) median ${percentile(ratios, 50).toFixed(2)}x`,
    );
  }
  if (args.baseline)
    console.log(
      `  baseline: the same settings but ${Object.entries(baselineFields)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}${before16 ? " (the defaults before issue 16)" : ""}, timed on the same images in turn`,
    );
  if (stageImages) {
    const parts = Object.entries(stageTotals).map(([k, v]) => `${k} ${(v / stageImages).toFixed(0)} ms`);
    console.log(`  mean stage time (of the pass that answered; rec.* summed over OCR workers): ${parts.join(", ")}`);
  }
  console.log(
    `  fine pass (the fast one found nothing): ${finePasses.first} of ${stageImages} first groundings, ${finePasses.all} of ${results.length} in all`,
  );
  console.log(
    `  cached     groundings ${warmLatency.length}  p50 ${percentile(warmLatency, 50).toFixed(1)} ms  p95 ${percentile(warmLatency, 95).toFixed(1)} ms`,
  );
  if (args.out) {
    writeFileSync(
      args.out,
      JSON.stringify({ args, results, latency: { firstLatency, firstCpu, warmLatency, loadStart, loadEnd } }, null, 2),
    );
    console.log(`\nwrote ${args.out}`);
  }
}

// run directly (npx tsx bench/grounding/run.ts ...): parse the command line; imported by bench/run.ts: nothing runs
if (import.meta.filename === process.argv[1] || process.argv[1]?.endsWith("bench/grounding/run.ts")) await main();
