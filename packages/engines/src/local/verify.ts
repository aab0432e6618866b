// Verification from a fresh screenshot: after each action the local engine records what it expects
// the next screenshot to show (the typed text in its field, a screen that changed after a click, a
// control whose pixels changed), and the next call checks it before doing anything else. The record
// travels in the step's reasoning (`[local-check ...]`, next to the progress marker), so it works for
// runs and for stateless callers who pass the trajectory back. See docs/engines-local.md.
import { createHash } from "node:crypto";
import type { GroundingContext } from "./ground.ts";
import type { Box, RgbaImage } from "./image.ts";
import { buildSegments, findText, normalizeText } from "./match-text.ts";
import type { OcrRun } from "./ocr.ts";

/** What the next screenshot must show. */
export interface Check {
  /** typed: the text is visible (in its field); change: the screen changed; scroll: the page moved */
  k: "typed" | "change" | "scroll";
  /** the step it verifies */
  step: number;
  /** the step, in words, for messages */
  d: string;
  text?: string;
  /** where the typed text must show (the input box), when known */
  box?: Box | null;
  secret?: boolean;
  /** the field must hold the text and nothing else (a form's value: not appended to an autofilled one) */
  exact?: boolean;
  /** screen text signature before the action */
  sig?: string;
  /** pixel fingerprint of the clicked control, and its box (checkboxes, radios) */
  reg?: string;
  regBox?: Box;
  /** the control in regBox must look selected (true) or not (false) afterwards */
  on?: boolean;
  /** a submit's screen signature when it was last seen changed, and waits spent for it to settle */
  settle?: string;
  sw?: number;
  /** error-like text was already visible before a submit */
  err?: boolean;
  submit?: boolean;
  /** a line the screen must show afterwards (a regular expression: a terminal's prompt) */
  expect?: string;
  /** tries of the step so far (0 = first) */
  t: number;
  /** waits spent on this check so far */
  w: number;
}

/** The engine's state between calls, carried in the reasoning. */
export interface LocalState {
  check?: Check;
  /** a step being retried: its try number */
  retry?: { step: number; t: number };
  /** a step that repeats (wait for X to finish, scroll until X, open a dropdown): attempts so far */
  again?: { step: number; n: number; sig?: string };
}

const STATE_RE = /\[local-check ([A-Za-z0-9_-]+)\]/;

export function encodeState(state: LocalState): string {
  if (!state.check && !state.retry && !state.again) return "";
  return `[local-check ${Buffer.from(JSON.stringify(state)).toString("base64url")}]`;
}

export function decodeState(reasoning: string | undefined): LocalState | null {
  if (!reasoning) return null;
  const m = STATE_RE.exec(reasoning);
  if (!m?.[1]) return null;
  try {
    const v = JSON.parse(Buffer.from(m[1], "base64url").toString("utf8")) as LocalState;
    return v && typeof v === "object" ? v : null;
  } catch {
    return null;
  }
}

/** Text that says something is still being worked on. */
export const BUSY =
  /\b(?:generating|loading|processing|please wait|in progress|working on|preparing|uploading|downloading|saving|pending|queued|running|calculating|exporting|building)\b|\b\d{1,2}(?:\.\d+)?\s?%|\.\.\.\s*$/i;

/** Text that says an action went wrong (a form's validation, a failed submit). */
export const ERRORS =
  /\b(?:required|invalid|error|failed|incorrect|please (?:fill|enter|select|provide|match)|must be|not valid|try again|is missing|can't be blank|cannot be blank)\b/i;

export function screenLines(ctx: GroundingContext): string[] {
  return ctx.ocr.runs.map((r) => r.text);
}

/** A digest of the screen's text (order-independent, noise-tolerant): equal digests = same text. */
export function screenSignature(ctx: GroundingContext): string {
  const words = new Set<string>();
  for (const r of ctx.ocr.runs) {
    const n = normalizeText(r.text);
    if (n.length >= 2) words.add(n);
  }
  return createHash("sha256")
    .update([...words].sort().join("|"))
    .digest("hex")
    .slice(0, 12);
}

/** A 4x4 grid of mean grey values over a box (padded): a control's look. */
export function regionPrint(img: RgbaImage, box: Box): string {
  const pad = 2;
  const x0 = Math.max(0, Math.floor(box.x - pad));
  const y0 = Math.max(0, Math.floor(box.y - pad));
  const x1 = Math.min(img.width, Math.ceil(box.x + box.width + pad));
  const y1 = Math.min(img.height, Math.ceil(box.y + box.height + pad));
  const out: number[] = [];
  for (let gy = 0; gy < 4; gy++) {
    for (let gx = 0; gx < 4; gx++) {
      const ax = x0 + Math.floor(((x1 - x0) * gx) / 4);
      const bx = Math.max(ax + 1, x0 + Math.floor(((x1 - x0) * (gx + 1)) / 4));
      const ay = y0 + Math.floor(((y1 - y0) * gy) / 4);
      const by = Math.max(ay + 1, y0 + Math.floor(((y1 - y0) * (gy + 1)) / 4));
      let sum = 0;
      let n = 0;
      for (let y = ay; y < by && y < img.height; y++) {
        for (let x = ax; x < bx && x < img.width; x++) {
          const i = (y * img.width + x) * 4;
          sum += 0.299 * (img.data[i] ?? 0) + 0.587 * (img.data[i + 1] ?? 0) + 0.114 * (img.data[i + 2] ?? 0);
          n++;
        }
      }
      out.push(n ? Math.round(sum / n) : 0);
    }
  }
  return out.map((v) => v.toString(16).padStart(2, "0")).join("");
}

/**
 * Whether a small control (radio, checkbox) looks selected: its inner part is filled (a dot, a tick on a
 * coloured fill) rather than the plain background its ring encloses. Null when the box is too small.
 */
export function controlLooksOn(img: RgbaImage, box: Box): boolean | null {
  if (box.width < 8 || box.height < 8) return null;
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  const r = Math.max(2, Math.floor(Math.min(box.width, box.height) * 0.2));
  let sum = 0;
  let sat = 0;
  let n = 0;
  for (let y = Math.round(cy - r); y <= Math.round(cy + r); y++) {
    for (let x = Math.round(cx - r); x <= Math.round(cx + r); x++) {
      if (x < 0 || y < 0 || x >= img.width || y >= img.height) continue;
      const i = (y * img.width + x) * 4;
      const R = img.data[i] ?? 0;
      const G = img.data[i + 1] ?? 0;
      const B = img.data[i + 2] ?? 0;
      sum += 0.299 * R + 0.587 * G + 0.114 * B;
      sat += Math.max(R, G, B) - Math.min(R, G, B);
      n++;
    }
  }
  if (!n) return null;
  // the page around the control: its background (light or dark)
  const bg = regionMeanLum(img, { x: box.x + box.width + 2, y: box.y, width: 4, height: box.height });
  const lum = sum / n;
  return Math.abs(lum - bg) > 50 || sat / n > 60;
}

function regionMeanLum(img: RgbaImage, b: Box): number {
  let sum = 0;
  let n = 0;
  for (let y = Math.max(0, Math.round(b.y)); y < Math.min(img.height, Math.round(b.y + b.height)); y++) {
    for (let x = Math.max(0, Math.round(b.x)); x < Math.min(img.width, Math.round(b.x + b.width)); x++) {
      const i = (y * img.width + x) * 4;
      sum += 0.299 * (img.data[i] ?? 0) + 0.587 * (img.data[i + 1] ?? 0) + 0.114 * (img.data[i + 2] ?? 0);
      n++;
    }
  }
  return n ? sum / n : 255;
}

/** Whether two region prints differ (some cell's mean grey moved by more than 20). */
export function regionChanged(a: string, b: string): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i += 2) {
    if (Math.abs(Number.parseInt(a.slice(i, i + 2), 16) - Number.parseInt(b.slice(i, i + 2), 16)) > 20) return true;
  }
  return false;
}

/** Parts of a typed text that must be readable: the whole of a short one, else its start or its end. */
export function typedProbes(text: string): string[] {
  const t = text.replace(/\s+/g, " ").trim();
  if (normalizeText(t).length === 0) return [];
  if (t.length <= 24) return [t];
  const lines = t.split(/\n/);
  const last = (lines[lines.length - 1] ?? t).trim();
  // cut at word boundaries: a partial word at the cut is dropped
  const head =
    (/\S/.test(t.charAt(16)) ? t.slice(0, 16).replace(/\s+\S*$/, "") : t.slice(0, 16)).trim() || t.slice(0, 16);
  const cut = last.length - 16;
  const tail =
    (cut > 0 && /\S/.test(last.charAt(cut - 1)) ? last.slice(-16).replace(/^\S*\s+/, "") : last.slice(-16)).trim() ||
    last.slice(-16);
  return [head, tail];
}

/** Is the typed text visible inside the box (or anywhere when the box is unknown)? */
export function typedVisible(ctx: GroundingContext, text: string, box: Box | null | undefined, exact = false): boolean {
  const probes = typedProbes(text);
  if (probes.length === 0) return true; // only spaces or symbols: nothing OCR can read back
  // the characters inside the box: a detection box may join the field's label and its text
  const pad = 8;
  const runs: OcrRun[] = [];
  for (const r of ctx.ocr.runs) {
    if (!box) {
      runs.push(r);
      continue;
    }
    const cy = r.bbox.y + r.bbox.height / 2;
    if (cy < box.y - pad || cy > box.y + box.height + pad) continue;
    const chars = r.chars.filter((c) => {
      const cx = (c.x0 + c.x1) / 2;
      return cx >= box.x - pad && cx <= box.x + box.width + pad;
    });
    const first = chars[0];
    const last = chars[chars.length - 1];
    if (!first || !last) continue;
    runs.push({
      text: chars.map((c) => c.text).join(""),
      confidence: r.confidence,
      bbox: { x: first.x0, y: r.bbox.y, width: Math.max(1, last.x1 - first.x0), height: r.bbox.height },
      chars,
    });
  }
  if (runs.length === 0) return false;
  if (exact && box && text.length <= 24) {
    // all the field shows, against the value (the caret may read as one more letter)
    const shown = normalizeText(runs.map((r) => r.text).join(""));
    const want = normalizeText(text);
    return editDistance(shown, want) <= Math.max(1, Math.floor(0.25 * Math.max(shown.length, want.length)));
  }
  const segments = buildSegments(runs);
  // the caret right after the text reads as a letter ("Grace|" -> "Gracel"): word boundaries do not
  // count here, only how many characters differ
  return probes.some((p) => {
    const n = Math.max(1, normalizeText(p).length);
    return findText(segments, p, 0.2).some((m) => 1 - m.distance / n >= 0.75);
  });
}

/** Levenshtein distance (short strings: a field's value). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(
        (prev[j] ?? 0) + 1,
        (cur[j - 1] ?? 0) + 1,
        (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/** The result of checking a record against the current screenshot. */
export type CheckResult = { ok: true } | { ok: false; why: string; fatal: boolean };

export function evaluateCheck(check: Check, ctx: GroundingContext): CheckResult {
  switch (check.k) {
    case "typed": {
      if (check.secret || !check.text) return { ok: true };
      if (typedVisible(ctx, check.text, check.box, check.exact)) return { ok: true };
      return {
        ok: false,
        fatal: false,
        why: `after "${check.d}" the typed text is not visible ${check.box ? "in the field" : "on the screen"}`,
      };
    }
    case "change":
    case "scroll": {
      const sigChanged = check.sig !== undefined && screenSignature(ctx) !== check.sig;
      const regChanged =
        check.reg !== undefined && check.regBox && ctx.pixels
          ? regionChanged(check.reg, regionPrint(ctx.pixels, check.regBox))
          : false;
      if (check.submit && !check.err) {
        const line = screenLines(ctx).find((l) => ERRORS.test(l));
        if (line) return { ok: false, fatal: true, why: `after "${check.d}" the screen shows "${line.slice(0, 120)}"` };
      }
      if (check.expect) {
        const re = new RegExp(check.expect, "im");
        if (!screenLines(ctx).some((l) => re.test(l)))
          return { ok: false, fatal: false, why: `after "${check.d}" its window is not seen` };
      }
      if (check.on !== undefined && check.regBox && ctx.pixels) {
        const state = controlLooksOn(ctx.pixels, check.regBox);
        if (state !== null && state !== check.on)
          return {
            ok: false,
            fatal: false,
            why: `after "${check.d}" the control does not look ${check.on ? "selected" : "cleared"}`,
          };
        if (state === check.on) return { ok: true };
      }
      if (sigChanged || regChanged) return { ok: true };
      return {
        ok: false,
        fatal: check.k === "scroll",
        why:
          check.k === "scroll"
            ? `scrolling no longer changes the screen (${check.d})`
            : `"${check.d}" did not change the screen`,
      };
    }
  }
}
