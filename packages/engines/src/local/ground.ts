// Grounding: find the element a plain-language description names on a screenshot, from OCR runs
// (text, with character positions) and, where geometry matters (input boxes, checkboxes), the
// pixels. Everything is in the sent image's pixel space.
import type { DecodedImage } from "../types.ts";
import { type ParsedDescription, parseDescription, type RelationKind, type Role } from "./describe.ts";
import { type Box, boxCenter, decodeToRgba, imageDigest, type RgbaImage, roundBox } from "./image.ts";
import { buildSegments, findText, type Segment, type TextMatch } from "./match-text.ts";
import { hasFinerPass, type LocalOcrResult, type OcrRun, runLocalOcr, sharedPixels } from "./ocr.ts";
import { inputBoxForLabel, onFilledShape, smallControlBeside } from "./pixels.ts";

/** Below this match score an element counts as not found. */
export const FOUND_THRESHOLD = 0.8;

export interface GroundResult {
  found: boolean;
  x: number | null;
  y: number | null;
  bbox: Box | null;
  /** 0..1; for found=false, how close the nearest candidate came */
  confidence: number;
  /** what OCR read at the chosen place (or the nearest miss) */
  matchedText: string | null;
  /** a short human explanation, used in fail reasons */
  reason: string;
  /** what was found: an input box (from its label or placeholder), a small control, or text */
  element?: "input" | "control" | "text";
}

export interface OcrView {
  runs: OcrRun[];
  width: number;
  height: number;
}

interface Candidate {
  match: TextMatch;
  /** score after role and geometry adjustments */
  score: number;
  point: { x: number; y: number };
  bbox: Box;
  element?: "input" | "control" | "text";
}

const FIELD_ROLES: Role[] = ["field", "dropdown"];

/** A prepared screenshot: OCR runs, their joined segments and (optionally) pixels. */
export interface GroundingContext {
  ocr: OcrView;
  segments: Segment[];
  pixels: RgbaImage | null;
  /** median height of the text runs: text much taller than it is a heading */
  textHeight?: number;
  /** the screenshot shows a browser's tab strip and address bar (an address near the top) */
  browserChrome?: boolean;
  /** where the previous action happened: of equal matches, the nearer one is meant (the form just filled) */
  near?: { x: number; y: number } | null;
}

export function groundingContext(ocr: OcrView, pixels: RgbaImage | null): GroundingContext {
  const hs = ocr.runs.map((r) => r.bbox.height).sort((a, b) => a - b);
  const textHeight = hs.length ? hs[Math.floor(hs.length / 2)] : undefined;
  // an address in the top 110 px (a host with a port or a dotted name and a path, "Not secure"): a browser
  const browserChrome = ocr.runs.some(
    (r) =>
      r.bbox.y < 110 &&
      (/(?:^|\s)(?:[\w-]+\.)+[\w-]+(?::\d{2,5})?\/|localhost|:\d{2,5}\b|^not secure$/i.test(r.text.trim()) ||
        /^https?:/i.test(r.text.trim())),
  );
  return { ocr, segments: buildSegments(ocr.runs), pixels, textHeight, browserChrome };
}

function notFound(confidence: number, matchedText: string | null, reason: string): GroundResult {
  return {
    found: false,
    x: null,
    y: null,
    bbox: null,
    confidence: round3(Math.max(0, confidence)),
    matchedText,
    reason,
  };
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** Text candidates over the readings of the text, best first; later readings are slightly discounted. */
function textCandidates(ctx: GroundingContext, texts: string[]): TextMatch[] {
  const all: TextMatch[] = [];
  texts.forEach((t, k) => {
    for (const m of findText(ctx.segments, t, 0.5)) all.push({ ...m, score: m.score - 0.02 * k });
  });
  return all.sort((a, b) => b.score - a.score);
}

function candidateFor(ctx: GroundingContext, m: TextMatch, role: Role | null): Candidate {
  let score = m.score;
  let bbox = m.bbox;
  let point = boxCenter(m.bbox);
  let element: Candidate["element"] = "text";
  // standalone labels (the whole run) are what buttons, links and tabs show
  if (m.whole) score += 0.04;
  // text much taller than the page's usual text is a heading: rarely what a click means
  // (a button's label sits on a filled shape and is never a heading; the median includes a browser's
  // small chrome text, so the bar is well above it)
  if (
    role !== "heading" &&
    ctx.textHeight &&
    m.bbox.height > 1.5 * ctx.textHeight &&
    !(ctx.pixels && onFilledShape(ctx.pixels, m.bbox))
  )
    score -= 0.06;
  // the top strip of the screen holds a browser's tabs and window titles, which repeat the page's
  // title: what a click means is on the page (unless a tab is asked for)
  if (role !== "tab" && ctx.browserChrome && m.bbox.y + m.bbox.height / 2 < Math.min(44, ctx.ocr.height * 0.06))
    score -= 0.15;
  if (ctx.pixels && role === "button" && onFilledShape(ctx.pixels, m.bbox)) score += 0.03;
  if (ctx.near) {
    const c = boxCenter(m.bbox);
    const diag = Math.hypot(ctx.ocr.width, ctx.ocr.height) || 1;
    score -= 0.03 * Math.min(1, Math.hypot(c.x - ctx.near.x, c.y - ctx.near.y) / diag);
  }
  if (ctx.pixels && role && FIELD_ROLES.includes(role)) {
    const onButton = onFilledShape(ctx.pixels, m.bbox);
    const input = inputBoxForLabel(ctx.pixels, m.bbox, { buttonLabel: onButton });
    if (input) {
      bbox = input.box;
      point = input.where === "inside" ? boxCenter(m.bbox) : boxCenter(input.box);
      element = "input";
      score += 0.03;
    } else {
      score -= 0.02;
    }
    // "the search box" is the input, not the Search button beside it: text on a filled shape that
    // is not inside an input box is a button's label
    if (input?.where !== "inside" && onButton) score -= input ? 0.08 : 0.5;
  }
  return { match: m, score, point, bbox, element };
}

function pickOrdinal(cands: Candidate[], ordinal: number | null): Candidate | undefined {
  const best = cands[0];
  if (!best || ordinal === null) return best;
  const peers = cands
    // the same label read a little worse (a red button's text) is still one of them
    .filter((c) => c.match.score >= Math.max(FOUND_THRESHOLD, best.match.score - 0.2))
    // one element read by several readings or segments counts once
    .filter((c, i, all) => !all.slice(0, i).some((o) => Math.hypot(o.point.x - c.point.x, o.point.y - c.point.y) < 6))
    .sort((a, b) => (Math.abs(a.point.y - b.point.y) > 8 ? a.point.y - b.point.y : a.point.x - b.point.x));
  return ordinal === -1 ? peers[peers.length - 1] : peers[ordinal - 1];
}

function found(c: Candidate, confidence: number, reason: string): GroundResult {
  const bbox = roundBox(c.bbox);
  return {
    found: true,
    x: Math.round(c.point.x),
    y: Math.round(c.point.y),
    bbox,
    confidence: round3(Math.min(1, Math.max(0, confidence))),
    matchedText: c.match.text,
    reason,
    element: c.element ?? "text",
  };
}

/** Grounds one description against prepared OCR (pure apart from reading pixels). */
export function groundInContext(ctx: GroundingContext, description: string): GroundResult {
  const parsed = parseDescription(description);
  if (parsed.ordinal !== null) {
    // "First name" is a label, "the first Edit link" an ordinal: the literal reading wins when it matches
    const literal = groundParsed(ctx, parseDescription(description, { ordinals: false }), description);
    // only when what it matched holds the ordinal word (a quoted 'the last "Delete"' matches any Delete)
    const words =
      description
        .toLowerCase()
        .match(
          /\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d{1,2}(?:st|nd|rd|th))\b/g,
        ) ?? [];
    if (literal.found && words.some((w) => (literal.matchedText ?? "").toLowerCase().includes(w))) return literal;
  }
  return groundParsed(ctx, parsed, description);
}

function groundParsed(ctx: GroundingContext, parsed: ParsedDescription, description: string): GroundResult {
  if (parsed.relation && parsed.relation.kind !== "labelled") return groundRelative(ctx, parsed);
  if ((parsed.role === "checkbox" || parsed.role === "radio") && parsed.texts[0]) {
    // "the Remember me checkbox": the control beside that label
    return groundRelative(ctx, { ...parsed, texts: [], relation: { kind: "next-to", anchor: parsed.texts[0] } });
  }
  const text = parsed.texts[0];
  if (!text) return notFound(0, null, `"${description}" names no text to look for`);
  const matches = textCandidates(ctx, parsed.texts).filter((m) => inArea(ctx, m.bbox, parsed.area));
  const cands = matches.map((m) => candidateFor(ctx, m, parsed.role)).sort((a, b) => b.score - a.score);
  const best = pickOrdinal(cands, parsed.ordinal);
  // a role that rules the match out (a button's label where a field is asked for) makes it no answer
  if (!best || best.match.score < FOUND_THRESHOLD || best.score < FOUND_THRESHOLD - 0.1) {
    const near = cands[0];
    return notFound(
      near ? near.match.score * near.match.ocrConfidence : 0,
      near?.match.text ?? null,
      near
        ? `no text matching "${text}" is visible (closest: "${near.match.text}")`
        : `no text matching "${text}" is visible`,
    );
  }
  return found(best, Math.min(1, best.match.score) * best.match.ocrConfidence, `matched "${best.match.text}"`);
}

/** Whether a box lies in a named part of the screen ("in the top navigation", "in the sidebar"). */
function inArea(ctx: GroundingContext, b: Box, area: ParsedDescription["area"]): boolean {
  if (!area) return true;
  const c = boxCenter(b);
  const { width: w, height: h } = ctx.ocr;
  switch (area) {
    case "top":
      return c.y < h * 0.22;
    case "bottom":
      return c.y > h * 0.75;
    case "left":
      return c.x < w * 0.35;
    case "right":
      return c.x > w * 0.65;
  }
}

/** "the checkbox next to Remember me", "the button below Total", "the field right of Name". */
function groundRelative(ctx: GroundingContext, parsed: ParsedDescription): GroundResult {
  const rel = parsed.relation;
  if (!rel) return notFound(0, null, "no relation");
  if (rel.kind === "row") return groundInRow(ctx, parsed, rel.anchor);
  const anchors = textCandidates(ctx, [rel.anchor]).filter((m) => m.score >= FOUND_THRESHOLD);
  const anchor = anchors[0];
  if (!anchor) {
    const near = findText(ctx.segments, rel.anchor, 0.5)[0];
    return notFound(
      near ? near.score * near.ocrConfidence : 0,
      near?.text ?? null,
      `no text matching "${rel.anchor}" is visible`,
    );
  }
  // a control sits beside its whole label, not beside the words of it that were asked for ("agree to
  // the terms" in "I agree to the Terms of Service"): when other words of its line come first or after
  const a = anchor.bbox;
  const line =
    parsed.role === "checkbox" || parsed.role === "radio"
      ? ctx.ocr.runs.find((r) => {
          const c = boxCenter(a);
          return (
            c.x >= r.bbox.x && c.x <= r.bbox.x + r.bbox.width && c.y >= r.bbox.y && c.y <= r.bbox.y + r.bbox.height
          );
        })
      : undefined;
  const sideBox = (side: "left" | "right"): Box => {
    // the letters of the line before (or after) the words asked for
    const others = (line?.chars ?? []).filter((c) => {
      const cx = (c.x0 + c.x1) / 2;
      return /[\p{L}\p{N}]/u.test(c.text) && (side === "left" ? cx < a.x - 2 : cx > a.x + a.width + 2);
    });
    if (others.length === 0) return a;
    if (side === "left") {
      const x0 = Math.min(...others.map((c) => c.x0));
      return { ...a, x: x0, width: a.x + a.width - x0 };
    }
    const x1 = Math.max(...others.map((c) => c.x1));
    return { ...a, width: x1 - a.x };
  };
  const aConf = anchor.score * anchor.ocrConfidence;
  const role = parsed.role;
  // a control beside the label: checkbox, radio, toggle, icon
  const text = parsed.texts[0] ?? null;
  if (!text || role === "checkbox" || role === "radio" || role === "icon") {
    if (ctx.pixels && (role === "checkbox" || role === "radio" || role === "icon" || !role)) {
      const sides: ("left" | "right")[] =
        rel.kind === "right-of" ? ["right"] : rel.kind === "left-of" ? ["left"] : ["left", "right"];
      for (const side of sides) {
        const box = smallControlBeside(ctx.pixels, sideBox(side), side);
        if (box)
          return found(
            { match: anchor, score: anchor.score, point: boxCenter(box), bbox: box, element: "control" },
            aConf * 0.95,
            `control ${side} of "${anchor.text}"`,
          );
      }
    }
    if (ctx.pixels && role && FIELD_ROLES.includes(role)) {
      const input = inputBoxForLabel(ctx.pixels, a);
      if (input)
        return found(
          { match: anchor, score: anchor.score, point: boxCenter(input.box), bbox: input.box, element: "input" },
          aConf * 0.95,
          `field beside "${anchor.text}"`,
        );
    }
    if (!text) {
      // no visible control found: clicking the label itself toggles most checkboxes and radios
      return found(
        { match: anchor, score: anchor.score, point: boxCenter(a), bbox: a },
        aConf * 0.6,
        `label "${anchor.text}" (no control seen beside it)`,
      );
    }
  }
  // a named element in a direction from the anchor: nearest match of the text there
  if (!text) return notFound(aConf, anchor.text, "nothing to look for beside the anchor");
  const cands = textCandidates(ctx, parsed.texts)
    .filter((m) => m.score >= FOUND_THRESHOLD && m.bbox !== a)
    .map((m) => ({ m, d: directionalDistance(a, m.bbox, rel.kind) }))
    .filter((x) => Number.isFinite(x.d))
    .sort((x, y) => x.d - y.d || y.m.score - x.m.score);
  const best = cands[0];
  if (!best) return notFound(aConf * 0.5, null, `no "${text}" ${rel.kind.replace("-", " ")} "${rel.anchor}"`);
  const c = candidateFor(ctx, best.m, role);
  return found(
    c,
    best.m.score * best.m.ocrConfidence,
    `"${best.m.text}" ${rel.kind.replace("-", " ")} "${anchor.text}"`,
  );
}

/** "View on the row for ACME": the anchor (a description of its own), then the text nearest on its row. */
function groundInRow(ctx: GroundingContext, parsed: ParsedDescription, anchor: string): GroundResult {
  const a = groundInContext(ctx, anchor);
  if (!a.found || !a.bbox) return notFound(a.confidence * 0.5, a.matchedText, a.reason);
  const box = a.bbox;
  const cy = box.y + box.height / 2;
  const cands = textCandidates(ctx, parsed.texts)
    .filter((m) => m.score >= FOUND_THRESHOLD)
    .filter((m) => Math.abs(m.bbox.y + m.bbox.height / 2 - cy) < Math.max(box.height, m.bbox.height))
    .filter((m) => m.bbox.x >= box.x + box.width - 2 || m.bbox.x + m.bbox.width <= box.x + 2)
    .sort(
      (p, q) => Math.abs(boxCenter(p.bbox).x - boxCenter(box).x) - Math.abs(boxCenter(q.bbox).x - boxCenter(box).x),
    );
  const best = cands[0];
  if (!best)
    return notFound(a.confidence * 0.5, null, `no "${parsed.texts[0] ?? ""}" on the row of "${a.matchedText}"`);
  const c = candidateFor(ctx, best, parsed.role);
  return found(c, best.score * best.ocrConfidence, `"${best.text}" on the row of "${a.matchedText}"`);
}

/** Distance from anchor to box in the named direction; Infinity when the box is not that way. */
export function directionalDistance(anchor: Box, b: Box, kind: RelationKind): number {
  const ac = boxCenter(anchor);
  const bc = boxCenter(b);
  const dx = bc.x - ac.x;
  const dy = bc.y - ac.y;
  const rowTol = Math.max(anchor.height, b.height);
  switch (kind) {
    case "right-of":
      return b.x >= anchor.x + anchor.width - 2 && Math.abs(dy) < rowTol ? dx : Number.POSITIVE_INFINITY;
    case "left-of":
      return b.x + b.width <= anchor.x + 2 && Math.abs(dy) < rowTol ? -dx : Number.POSITIVE_INFINITY;
    case "below":
      return b.y >= anchor.y + anchor.height - 2 ? dy + Math.abs(dx) * 0.5 : Number.POSITIVE_INFINITY;
    case "within":
      // inside a section or table named by its title: below the title, the nearest rows first
      return b.y >= anchor.y + anchor.height * 0.5 ? dy + Math.abs(dx) * 0.1 : Number.POSITIVE_INFINITY;
    case "above":
      return b.y + b.height <= anchor.y + 2 ? -dy + Math.abs(dx) * 0.5 : Number.POSITIVE_INFINITY;
    default:
      return Math.hypot(dx, dy);
  }
}

type Prepared = GroundingContext & { ocr: LocalOcrResult };

/**
 * Runs `use` on the fast OCR pass; when it reports a miss and the image has a finer pass (paddle, and
 * the image is larger than the fast side), runs it again on the fine pass (detection at a higher
 * resolution: smaller or fainter text), whose answer stands. `use` must be pure: it may run twice.
 */
export async function onFastThenFine<T>(
  image: DecodedImage,
  signal: AbortSignal | undefined,
  use: (ctx: Prepared) => { value: T; missed: boolean },
): Promise<{ value: T; ctx: Prepared; pass: "fast" | "fine" }> {
  const fast = await prepareGrounding(image, signal);
  const first = use(fast);
  if (!first.missed || fast.ocr.backend !== "paddle" || !hasFinerPass(fast.ocr)) {
    return { value: first.value, ctx: fast, pass: "fast" };
  }
  const fine = await prepareGrounding(image, signal, "fine", fast);
  return { value: use(fine).value, ctx: fine, pass: "fine" };
}

/** Grounds a description on a screenshot: OCR (cached per image and pass) plus pixels. */
export async function groundElement(
  image: DecodedImage,
  description: string,
  signal?: AbortSignal,
): Promise<GroundResult & { ocr: LocalOcrResult; pass: "fast" | "fine" }> {
  const { value, ctx, pass } = await onFastThenFine(image, signal, (c) => {
    const r = groundInContext(c, description);
    return { value: r, missed: !r.found };
  });
  return { ...value, ocr: ctx.ocr, pass };
}

/** the last screenshots decoded, by digest: the steps of one screen ground several descriptions on it */
const decoded = new Map<string, Promise<RgbaImage | null>>();
const KEEP_DECODED = 2;

/** The screenshot's pixels, decoded once per image (null when it cannot be decoded here). */
function pixelsOf(image: DecodedImage): Promise<RgbaImage | null> {
  const key = imageDigest(image);
  const hit = decoded.get(key);
  if (hit) return hit;
  // in shared memory from the start: the OCR workers read these very pixels
  const p = decodeToRgba(image).then(sharedPixels, () => null);
  decoded.set(key, p);
  while (decoded.size > KEEP_DECODED) {
    const oldest = decoded.keys().next().value;
    if (oldest === undefined) break;
    decoded.delete(oldest);
  }
  return p;
}

/**
 * OCR and pixels of a screenshot, ready for several groundings. The image is decoded once, here, while the
 * OCR's detector reads the bytes (it needs no pixel array); its recognisers then read these pixels (shared
 * memory) instead of decoding the bytes again. `from` lends its decoded pixels.
 */
async function prepareGrounding(
  image: DecodedImage,
  signal?: AbortSignal,
  pass: "fast" | "fine" = "fast",
  from?: Prepared,
): Promise<Prepared> {
  const decoding = from ? Promise.resolve(from.pixels) : pixelsOf(image);
  const ocr = await runLocalOcr(image, signal, pass, decoding);
  const pixels = await decoding;
  return { ...groundingContext(ocr, pixels), ocr };
}
