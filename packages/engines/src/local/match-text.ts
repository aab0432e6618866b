// Fuzzy phrase matching over OCR runs: ignores case, whitespace and punctuation, tolerates small OCR
// errors (edit distance, with cheap substitutions between look-alike characters), and reports
// whether a match lines up with word boundaries so exact, whole-word phrases win.
import type { Box } from "./image.ts";
import type { OcrChar, OcrRun } from "./ocr.ts";

/** A stretch of text on one visual line: one run or neighbouring runs joined. */
export interface Segment {
  runs: OcrRun[];
  /** characters of all runs in order, spaces included; a space separates joined runs */
  chars: (OcrChar & { run: number })[];
}

export interface TextMatch {
  /** 0..1: 1 = exact (after normalisation) at word boundaries */
  score: number;
  /** edit distance after normalisation */
  distance: number;
  /** the matched text as OCR read it */
  text: string;
  bbox: Box;
  /** the match is the whole text of its run(s): a standalone element such as a button label */
  whole: boolean;
  /** mean OCR confidence of the matched characters */
  ocrConfidence: number;
  segment: Segment;
}

const LOOKALIKE: Record<string, string> = {
  i: "l",
  l: "l",
  "1": "l",
  "|": "l",
  "!": "l",
  o: "o",
  "0": "o",
  q: "o",
  s: "s",
  "5": "s",
  z: "z",
  "2": "z",
  b: "b",
  "8": "b",
  g: "g",
  "9": "g",
  u: "u",
  v: "u",
};

/** Lowercase, accents removed; letters and digits only unless keepSymbols. */
export function normalizeChar(ch: string, keepSymbols = false): string {
  const base = ch.normalize("NFKD").replace(/\p{M}/gu, "").toLowerCase();
  if (keepSymbols) return base.replace(/\s/g, "");
  return base.replace(/[^\p{L}\p{N}]/gu, "");
}

export function normalizeText(s: string, keepSymbols = false): string {
  return Array.from(s)
    .map((c) => normalizeChar(c, keepSymbols))
    .join("");
}

/**
 * OCR reads "m" as "rn" and "w" as "vv" (and the reverse): fold both digraphs into the single
 * letter, in the pattern and in the text alike, keeping the source index ranges aligned.
 */
export function foldDigraphs(chars: string[], start: number[], end: number[]): void {
  for (let i = 0; i < chars.length - 1; i++) {
    const pair = `${chars[i]}${chars[i + 1]}`;
    const folded = pair === "rn" ? "m" : pair === "vv" ? "w" : null;
    if (!folded) continue;
    chars.splice(i, 2, folded);
    if (start.length) start.splice(i + 1, 1);
    if (end.length) end.splice(i, 1);
  }
}

function subCost(a: string, b: string): number {
  if (a === b) return 0;
  const la = LOOKALIKE[a];
  if (la !== undefined && la === LOOKALIKE[b]) return 0.25;
  return 1;
}

/**
 * Approximate substring search (Sellers): every end position j of `text` with the smallest edit
 * distance of `pattern` against some substring ending at j. Returns [start, end) ranges with their
 * distances, best first, one per distinct start.
 */
export function approximateMatches(
  pattern: string[],
  text: string[],
  maxDistance: number,
): { start: number; end: number; distance: number }[] {
  const m = pattern.length;
  const n = text.length;
  if (m === 0 || n === 0) return [];
  // prev/cur rows over text positions, with the start index carried along
  let prevD = new Float64Array(n + 1);
  let prevS = new Int32Array(n + 1);
  for (let j = 0; j <= n; j++) prevS[j] = j;
  for (let i = 1; i <= m; i++) {
    const curD = new Float64Array(n + 1);
    const curS = new Int32Array(n + 1);
    curD[0] = i;
    curS[0] = 0;
    const pc = pattern[i - 1] ?? "";
    for (let j = 1; j <= n; j++) {
      const sub = (prevD[j - 1] ?? 0) + subCost(pc, text[j - 1] ?? "");
      const del = (prevD[j] ?? 0) + 1; // pattern char missing from text
      const ins = (curD[j - 1] ?? 0) + 1; // extra text char
      let d = sub;
      let s = prevS[j - 1] ?? 0;
      if (del < d) {
        d = del;
        s = prevS[j] ?? 0;
      }
      if (ins < d) {
        d = ins;
        s = curS[j - 1] ?? 0;
      }
      curD[j] = d;
      curS[j] = s;
    }
    prevD = curD;
    prevS = curS;
  }
  const byStart = new Map<number, { start: number; end: number; distance: number }>();
  for (let j = 1; j <= n; j++) {
    const d = prevD[j] ?? Number.POSITIVE_INFINITY;
    if (d > maxDistance) continue;
    const start = prevS[j] ?? 0;
    const cur = byStart.get(start);
    if (!cur || d < cur.distance || (d === cur.distance && j - start > cur.end - cur.start)) {
      byStart.set(start, { start, end: j, distance: d });
    }
  }
  return [...byStart.values()].sort((a, b) => a.distance - b.distance);
}

/** Joins runs on the same visual line whose horizontal gap is small into segments. */
export function buildSegments(runs: OcrRun[]): Segment[] {
  const sorted = [...runs].sort((a, b) => a.bbox.x - b.bbox.x);
  const used = new Set<OcrRun>();
  const segments: Segment[] = [];
  for (const r of sorted) {
    if (used.has(r)) continue;
    used.add(r);
    const chain = [r];
    let last = r;
    for (;;) {
      const cy = last.bbox.y + last.bbox.height / 2;
      const next = sorted.find(
        (o) =>
          !used.has(o) &&
          o.bbox.x >= last.bbox.x + last.bbox.width - 2 &&
          o.bbox.x - (last.bbox.x + last.bbox.width) < 1.6 * Math.max(last.bbox.height, o.bbox.height) &&
          Math.abs(o.bbox.y + o.bbox.height / 2 - cy) < Math.min(o.bbox.height, last.bbox.height) * 0.35 &&
          Math.abs(o.bbox.height - last.bbox.height) < Math.max(o.bbox.height, last.bbox.height) * 0.35,
      );
      if (!next) break;
      used.add(next);
      chain.push(next);
      last = next;
    }
    // every run alone is a segment too, so a match inside one run is not judged against its neighbours
    for (const c of chain) segments.push(segmentOf([c]));
    if (chain.length > 1) segments.push(segmentOf(chain));
  }
  return segments;
}

function segmentOf(runs: OcrRun[]): Segment {
  const chars: Segment["chars"] = [];
  runs.forEach((r, k) => {
    if (k > 0) {
      const prev = runs[k - 1];
      const px = prev ? prev.bbox.x + prev.bbox.width : r.bbox.x;
      chars.push({ text: " ", x0: px, x1: r.bbox.x, confidence: 1, run: k });
    }
    for (const c of r.chars) chars.push({ ...c, run: k });
  });
  return { runs, chars };
}

function isBoundary(ch: string | undefined): boolean {
  return ch === undefined || !/[\p{L}\p{N}]/u.test(ch);
}

/**
 * All places in the segments where `target` appears, scored. Score = 1 - distance/length, minus 0.3
 * for each end that falls inside a word. Matches below minScore are dropped.
 */
export function findText(segments: Segment[], target: string, minScore: number): TextMatch[] {
  const symbolsOnly = normalizeText(target) === "";
  const pattern = Array.from(normalizeText(target, symbolsOnly));
  foldDigraphs(pattern, [], []);
  if (pattern.length === 0) return [];
  const maxDist = pattern.length <= 3 ? 0.3 : pattern.length <= 5 ? 1 : Math.ceil(pattern.length * 0.25);
  const out: TextMatch[] = [];
  for (const seg of segments) {
    const norm: string[] = [];
    const srcStart: number[] = [];
    const srcEnd: number[] = [];
    seg.chars.forEach((c, i) => {
      for (const n of Array.from(normalizeChar(c.text, symbolsOnly))) {
        norm.push(n);
        srcStart.push(i);
        srcEnd.push(i);
      }
    });
    foldDigraphs(norm, srcStart, srcEnd);
    for (const m of approximateMatches(pattern, norm, maxDist)) {
      const first = srcStart[m.start];
      const last = srcEnd[m.end - 1];
      if (first === undefined || last === undefined) continue;
      const c0 = seg.chars[first];
      const c1 = seg.chars[last];
      if (!c0 || !c1) continue;
      const startsWord = isBoundary(seg.chars[first - 1]?.text);
      const endsWord = isBoundary(seg.chars[last + 1]?.text);
      let score = 1 - m.distance / pattern.length;
      if (!startsWord) score -= 0.3;
      if (!endsWord) score -= 0.3;
      if (score < minScore) continue;
      const matched = seg.chars.slice(first, last + 1);
      const visible = matched.filter((c) => c.text.trim() !== "");
      const runsHit = seg.runs.filter((_, k) => matched.some((c) => c.run === k));
      const y0 = Math.min(...runsHit.map((r) => r.bbox.y));
      const y1 = Math.max(...runsHit.map((r) => r.bbox.y + r.bbox.height));
      const allVisible = seg.chars.filter((c) => c.text.trim() !== "" && /[\p{L}\p{N}]/u.test(c.text));
      const matchedAlnum = visible.filter((c) => /[\p{L}\p{N}]/u.test(c.text));
      out.push({
        score,
        distance: m.distance,
        text: matched
          .map((c) => c.text)
          .join("")
          .trim(),
        bbox: {
          x: Math.floor(c0.x0),
          y: y0,
          width: Math.max(1, Math.ceil(c1.x1) - Math.floor(c0.x0)),
          height: y1 - y0,
        },
        whole: matchedAlnum.length === allVisible.length,
        ocrConfidence: visible.length ? visible.reduce((s, c) => s + c.confidence, 0) / visible.length : 0,
        segment: seg,
      });
    }
  }
  return dedupe(out);
}

/** Keeps the best of overlapping matches (a single run and its joined segment can both match). */
function dedupe(matches: TextMatch[]): TextMatch[] {
  const sorted = [...matches].sort((a, b) => b.score - a.score || Number(b.whole) - Number(a.whole));
  const kept: TextMatch[] = [];
  for (const m of sorted) {
    if (kept.some((k) => overlap(k.bbox, m.bbox) > 0.5)) continue;
    kept.push(m);
  }
  return kept;
}

export function overlap(a: Box, b: Box): number {
  const x0 = Math.max(a.x, b.x);
  const y0 = Math.max(a.y, b.y);
  const x1 = Math.min(a.x + a.width, b.x + b.width);
  const y1 = Math.min(a.y + a.height, b.y + b.height);
  if (x1 <= x0 || y1 <= y0) return 0;
  const inter = (x1 - x0) * (y1 - y0);
  return inter / Math.min(a.width * a.height, b.width * b.height);
}
