// Pixel geometry for grounding: input boxes (long horizontal edges paired top and bottom), small
// square controls (checkboxes, radios) beside a label, and whether text sits on a filled shape
// (a button) rather than on the page background.
import type { Box, RgbaImage } from "./image.ts";

function lumAt(img: RgbaImage, x: number, y: number): number {
  const p = (y * img.width + x) * 4;
  const d = img.data;
  return ((d[p] ?? 0) * 299 + (d[p + 1] ?? 0) * 587 + (d[p + 2] ?? 0) * 114) / 1000;
}

function rgbAt(img: RgbaImage, x: number, y: number): [number, number, number] {
  const p = (y * img.width + x) * 4;
  const d = img.data;
  return [d[p] ?? 0, d[p + 1] ?? 0, d[p + 2] ?? 0];
}

function colorDist(a: [number, number, number], b: [number, number, number]): number {
  return Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2]);
}

function clip(img: RgbaImage, b: Box): Box {
  const x0 = Math.max(0, Math.floor(b.x));
  const y0 = Math.max(0, Math.floor(b.y));
  const x1 = Math.min(img.width, Math.ceil(b.x + b.width));
  const y1 = Math.min(img.height, Math.ceil(b.y + b.height));
  return { x: x0, y: y0, width: Math.max(0, x1 - x0), height: Math.max(0, y1 - y0) };
}

interface HSeg {
  y: number;
  x0: number;
  x1: number;
}

/** Horizontal edges: runs along a row where the pixel differs from the one below it. */
function horizontalEdges(img: RgbaImage, region: Box, minLen: number, thr = 14): HSeg[] {
  const r = clip(img, region);
  const segs: HSeg[] = [];
  for (let y = r.y; y < r.y + r.height - 1 && y < img.height - 1; y++) {
    let start = -1;
    let gap = 0;
    for (let x = r.x; x <= r.x + r.width; x++) {
      const on = x < r.x + r.width && Math.abs(lumAt(img, x, y) - lumAt(img, x, y + 1)) >= thr;
      if (on) {
        if (start < 0) start = x;
        gap = 0;
      } else if (start >= 0) {
        gap++;
        // tolerate 1-pixel breaks (anti-aliasing at rounded corners)
        if (gap > 1 || x === r.x + r.width) {
          const end = x - gap + 1;
          if (end - start >= minLen) segs.push({ y, x0: start, x1: end });
          start = -1;
          gap = 0;
        }
      }
    }
  }
  return mergeAdjacentRows(segs);
}

/** A 1-2 px border produces edges on consecutive rows: keep the outer one of each pair. */
function mergeAdjacentRows(segs: HSeg[]): HSeg[] {
  const out: HSeg[] = [];
  for (const s of segs) {
    const twin = out.find(
      (o) => Math.abs(o.y - s.y) <= 2 && overlapLen(o, s) > 0.8 * Math.min(o.x1 - o.x0, s.x1 - s.x0),
    );
    if (!twin) out.push({ ...s });
  }
  return out;
}

function overlapLen(a: HSeg, b: HSeg): number {
  return Math.max(0, Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0));
}

/** Vertical edge strength along a column between two rows: share of rows where x differs from x-1. */
function verticalEdgeShare(img: RgbaImage, x: number, y0: number, y1: number): number {
  if (x <= 0 || x >= img.width) return 0;
  let hits = 0;
  let n = 0;
  for (let y = y0; y < y1; y++) {
    n++;
    if (Math.abs(lumAt(img, x, y) - lumAt(img, x - 1, y)) >= 12) hits++;
  }
  return n ? hits / n : 0;
}

/**
 * Rectangles shaped like text inputs (wide, 16-90 px tall) inside region: a top and a bottom edge
 * of similar extent, confirmed by an edge near either end. Smallest area first.
 */
export function findInputBoxes(img: RgbaImage, region: Box): Box[] {
  const segs = horizontalEdges(img, region, 40);
  const boxes: Box[] = [];
  for (const top of segs) {
    for (const bot of segs) {
      const h = bot.y - top.y;
      if (h < 14 || h > 90) continue;
      const ov = overlapLen(top, bot);
      const wTop = top.x1 - top.x0;
      const wBot = bot.x1 - bot.x0;
      if (ov < 0.85 * Math.max(wTop, wBot)) continue;
      let x0 = Math.max(top.x0, bot.x0);
      let x1 = Math.min(top.x1, bot.x1);
      if (x1 - x0 < 2.2 * h && x1 - x0 < 60) continue;
      // another long edge between them means two stacked boxes, not one
      if (segs.some((o) => o.y > top.y + 3 && o.y < bot.y - 3 && overlapLen(o, { y: 0, x0, x1 }) > 0.6 * (x1 - x0)))
        continue;
      // side borders: rounded corners start the horizontal edges a few pixels inside the box
      const y0 = top.y + 3;
      const y1 = bot.y - 2;
      let left = 0;
      let leftX = x0;
      for (let x = x0 - 10; x <= x0 + 3; x++) {
        const v = verticalEdgeShare(img, x, y0, y1);
        if (v > left + 0.05) {
          left = v;
          leftX = x;
        }
      }
      let right = 0;
      let rightX = x1;
      for (let x = x1 + 10; x >= x1 - 3; x--) {
        const v = verticalEdgeShare(img, x, y0, y1);
        if (v > right + 0.05) {
          right = v;
          rightX = x;
        }
      }
      if (left < 0.6 && right < 0.6) continue;
      if (left >= 0.6) x0 = Math.min(x0, leftX);
      if (right >= 0.6) x1 = Math.max(x1, rightX);
      boxes.push({ x: x0, y: top.y + 1, width: x1 - x0, height: h });
    }
  }
  // drop boxes that contain a smaller one (a card around an input)
  const inner = boxes.filter(
    (b) =>
      !boxes.some(
        (o) =>
          o !== b &&
          o.x >= b.x &&
          o.y >= b.y &&
          o.x + o.width <= b.x + b.width &&
          o.y + o.height <= b.y + b.height &&
          o.width * o.height < b.width * b.height * 0.8,
      ),
  );
  return dedupeBoxes(inner).sort((a, b) => a.width * a.height - b.width * b.height);
}

function dedupeBoxes(boxes: Box[]): Box[] {
  const out: Box[] = [];
  for (const b of boxes) {
    if (
      out.some(
        (o) =>
          Math.abs(o.x - b.x) <= 3 &&
          Math.abs(o.y - b.y) <= 3 &&
          Math.abs(o.width - b.width) <= 4 &&
          Math.abs(o.height - b.height) <= 4,
      )
    )
      continue;
    out.push(b);
  }
  return out;
}

/**
 * The input box a label names: one whose vertical span holds the label's centre to its right, or one
 * starting just below it and overlapping it horizontally; or the box the label sits in (placeholder).
 */
export function inputBoxForLabel(
  img: RgbaImage,
  label: Box,
  opts: { buttonLabel?: boolean } = {},
): { box: Box; where: "inside" | "right" | "below" | "left" } | null {
  const h = Math.max(10, label.height);
  const cy = label.y + label.height / 2;
  // wide to the left too: a search box's only label may be the Search button at its right end
  const region: Box = { x: label.x - 30 * h, y: label.y - 3 * h, width: 58 * h + label.width, height: 9 * h };
  const boxes = findInputBoxes(img, region);
  let best: { box: Box; where: "inside" | "right" | "below" | "left"; d: number } | null = null;
  // inside beats right beats below beats left; distance decides within a kind
  const rank = { inside: 0, right: 1, below: 2, left: 3 } as const;
  const consider = (box: Box, where: "inside" | "right" | "below" | "left", d: number) => {
    if (d > 14 * h) return;
    if (!best || rank[where] < rank[best.where] || (rank[where] === rank[best.where] && d < best.d))
      best = { box, where, d };
  };
  // a filled box (a button: its inside differs from what surrounds it) is no input field
  const filled = (b: Box) => {
    const y = Math.round(b.y + b.height / 2);
    // what surrounds it on both sides (a neighbour may touch one side)
    const outs = [
      rgbAt(img, Math.min(img.width - 1, Math.round(b.x + b.width + 4)), y),
      rgbAt(img, Math.max(0, Math.round(b.x - 4)), y),
    ];
    let differ = 0;
    let saturated = 0;
    for (let k = 1; k <= 10; k++) {
      const p = rgbAt(img, Math.round(b.x + (b.width * k) / 11), Math.round(b.y + b.height * 0.3));
      if (outs.every((o) => colorDist(p, o) > 60)) differ++;
      if (Math.max(...p) - Math.min(...p) > 80) saturated++;
    }
    return { filled: differ >= 6, coloured: saturated >= 6 };
  };
  for (const b of boxes) {
    const f = filled(b);
    const inside =
      label.x >= b.x - 2 &&
      label.x + label.width <= b.x + b.width + 2 &&
      label.y >= b.y - 2 &&
      label.y + label.height <= b.y + b.height + 2;
    if (inside) {
      // text inside a coloured filled box is a button's label; a neutral fill may be an input's
      if (!(f.filled && f.coloured)) consider(b, "inside", 0);
      continue;
    }
    if (f.filled) continue; // a button is never the field beside a label
    // a button's label names the field it acts on, at its left (a search box), never one beyond it
    if (opts.buttonLabel && b.x + b.width > label.x + 2) continue;
    const spansY = cy >= b.y && cy <= b.y + b.height;
    if (spansY && b.x >= label.x + label.width - 2) consider(b, "right", b.x - (label.x + label.width));
    else if (spansY && b.x + b.width <= label.x + 2) consider(b, "left", (label.x - (b.x + b.width)) * 1.5 + 2 * h);
    const xOverlap = Math.min(b.x + b.width, label.x + label.width) - Math.max(b.x, label.x);
    // a stacked label sits just above its field (a few pixels), left edges roughly aligned
    const gapBelow = b.y - (label.y + label.height);
    if (gapBelow >= -2 && gapBelow <= 2.5 * h && xOverlap > Math.min(label.width, b.width) * 0.5)
      consider(b, "below", gapBelow * 2);
  }
  const chosen = best as { box: Box; where: "inside" | "right" | "below" | "left"; d: number } | null;
  if (chosen) return { box: chosen.box, where: chosen.where };
  // a button right against its input (a search box and its Search button) joins their edges: look
  // at the strip left of the label alone
  const strip: Box = {
    x: Math.max(0, label.x - 30 * h),
    y: label.y - 2 * h,
    width: Math.min(label.x, 30 * h) - 2,
    height: 5 * h,
  };
  const left = findInputBoxes(img, strip)
    .filter((b) => !filled(b).filled && cy >= b.y && cy <= b.y + b.height && b.x < label.x - 2 * h)
    .sort((a, b) => b.x + b.width - (a.x + a.width))[0];
  return left ? { box: left, where: "left" } : null;
}

/**
 * A small square-ish control (checkbox, radio, toggle) left or right of a label, within a few text
 * heights, vertically centred on it: the bounding box of pixels that differ from the label's row
 * background in that strip.
 */
export function smallControlBeside(img: RgbaImage, label: Box, side: "left" | "right"): Box | null {
  const h = Math.max(10, label.height);
  const cy = Math.round(label.y + label.height / 2);
  const reach = Math.round(3.2 * h);
  const x0 = side === "left" ? label.x - reach : label.x + label.width + 1;
  // the control is centred on the label: a band of +-0.7 text heights keeps neighbouring rows out
  const strip = clip(img, { x: x0, y: Math.round(cy - 0.7 * h), width: reach, height: Math.round(1.4 * h) });
  if (strip.width < 4 || strip.height < 4) return null;
  const bg = rgbAt(
    img,
    side === "left" ? Math.max(0, label.x - 2) : Math.min(img.width - 1, label.x + label.width + 1),
    Math.min(img.height - 1, Math.max(0, label.y - 2)),
  );
  // columns with "ink", scanning outward from the label; the control is the first ink cluster
  const cols: number[] = [];
  const order: number[] = [];
  for (let i = 0; i < strip.width; i++) order.push(side === "left" ? strip.x + strip.width - 1 - i : strip.x + i);
  let started = false;
  let blank = 0;
  // the label's own edge pixels may spill into the strip: skip ink until the first blank column
  let leaving = true;
  let left = 3;
  for (const x of order) {
    let ink = false;
    for (let y = strip.y; y < strip.y + strip.height; y++) {
      if (colorDist(rgbAt(img, x, y), bg) > 60) {
        ink = true;
        break;
      }
    }
    if (leaving) {
      if (ink && --left > 0) continue;
      leaving = false;
      if (!ink) continue;
    }
    if (ink) {
      cols.push(x);
      started = true;
      blank = 0;
    } else if (started && ++blank > 2) break;
  }
  if (cols.length < 6) return null;
  const bx0 = Math.min(...cols);
  const bx1 = Math.max(...cols) + 1;
  // vertical extent: rows with ink in those columns, contiguous with the label's middle row
  const rowHasInk = (y: number) => {
    for (let x = bx0; x < bx1; x++) if (colorDist(rgbAt(img, x, y), bg) > 60) return true;
    return false;
  };
  let mid = cy;
  for (let d = 0; d <= Math.round(h / 2) && !rowHasInk(mid); d++) mid = d % 2 === 0 ? cy + d / 2 + 1 : cy - (d + 1) / 2;
  if (!rowHasInk(mid)) return null;
  let by0 = mid;
  let by1 = mid + 1;
  while (by0 - 1 >= strip.y && rowHasInk(by0 - 1)) by0--;
  while (by1 < strip.y + strip.height && rowHasInk(by1)) by1++;
  const w = bx1 - bx0;
  const hh = by1 - by0;
  if (hh <= 0 || w < 6 || hh < 6) return null;
  // squares (checkbox/radio) or pill toggles up to ~2.2:1
  if (w > 2.4 * hh || hh > 1.6 * w || w > 3 * h) return null;
  return { x: bx0, y: by0, width: w, height: hh };
}

/** Median colour of the image border rows/columns: the page background, roughly. */
export function pageBackground(img: RgbaImage): [number, number, number] {
  const samples: [number, number, number][] = [];
  const step = Math.max(1, Math.floor(img.width / 64));
  for (let x = 0; x < img.width; x += step) samples.push(rgbAt(img, x, 0), rgbAt(img, x, img.height - 1));
  const med = (k: 0 | 1 | 2) => {
    const v = samples.map((s) => s[k]).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)] ?? 255;
  };
  return [med(0), med(1), med(2)];
}

/**
 * Whether text sits on a filled shape (button-like): the ring just outside the text box has one
 * colour that differs from the colour further out.
 */
export function onFilledShape(img: RgbaImage, text: Box): boolean {
  const pad = Math.max(3, Math.round(text.height * 0.25));
  const inner = [
    rgbAt(img, clampX(img, text.x - pad), clampY(img, text.y + text.height / 2)),
    rgbAt(img, clampX(img, text.x + text.width + pad), clampY(img, text.y + text.height / 2)),
  ];
  const far = Math.round(text.height * 3);
  const outer = [
    rgbAt(img, clampX(img, text.x - far), clampY(img, text.y + text.height / 2)),
    rgbAt(img, clampX(img, text.x + text.width + far), clampY(img, text.y + text.height / 2)),
    rgbAt(img, clampX(img, text.x + text.width / 2), clampY(img, text.y - far)),
  ];
  const [a, b] = inner;
  if (!a || !b || colorDist(a, b) > 30) return false;
  return outer.filter((o) => colorDist(o, a) > 40).length >= 2;
}

function clampX(img: RgbaImage, x: number): number {
  return Math.max(0, Math.min(img.width - 1, Math.round(x)));
}
function clampY(img: RgbaImage, y: number): number {
  return Math.max(0, Math.min(img.height - 1, Math.round(y)));
}

/**
 * Whether an input box is a dropdown (a select): a small mark (the arrow) near its right end, with blank
 * space before it, rather than text running up to the edge or nothing at all.
 */
export function looksLikeDropdown(img: RgbaImage, box: Box): boolean {
  const right = Math.round(box.x + box.width);
  const cy = Math.round(box.y + box.height / 2);
  if (box.width < 60 || box.height < 12) return false;
  const bg = lumAt(img, clampX(img, right - 40), clampY(img, box.y + 5));
  const ink = (x: number, y: number) => Math.abs(lumAt(img, clampX(img, x), clampY(img, y)) - bg) > 70;
  // ink in the band around the middle row, leaving out vertical lines (the box's own border, a button's edge)
  const mark = (x0: number, x1: number) => {
    let n = 0;
    let minX = Number.POSITIVE_INFINITY;
    let maxX = Number.NEGATIVE_INFINITY;
    const rows = new Set<number>();
    for (let x = x0; x <= x1; x++) {
      let col = 0;
      for (let y = cy - 5; y <= cy + 5; y++) if (ink(x, y)) col++;
      if (col === 0 || col >= 9) continue;
      for (let y = cy - 5; y <= cy + 5; y++) {
        if (!ink(x, y)) continue;
        n++;
        rows.add(y);
        minX = Math.min(minX, x);
        maxX = Math.max(maxX, x);
      }
    }
    return { n, span: n ? maxX - minX + 1 : 0, rows: rows.size };
  };
  const arrow = mark(right - 30, right - 5);
  const gap = mark(right - 60, right - 33);
  return arrow.n >= 5 && arrow.span >= 5 && arrow.span <= 16 && arrow.rows <= 8 && gap.n <= 2;
}
