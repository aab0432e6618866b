// Shared by the local-engine tests: fixture screenshots with their DOM boxes, and stub OCR runs for
// the pure interpreter tests.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { charsByProportion, type OcrRun } from "../../src/local/ocr.ts";
import type { DecodedImage } from "../../src/types.ts";

const here = path.dirname(fileURLToPath(import.meta.url));

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Fixture {
  image: DecodedImage;
  boxes: Record<string, Box>;
  box(id: string): Box;
}

export function loadFixture(name: "login" | "dashboard" | "dashboard-jpeg"): Fixture {
  const jpeg = name.endsWith("jpeg");
  const bytes = readFileSync(path.join(here, "fixtures", `${name}.${jpeg ? "jpg" : "png"}`));
  const meta = JSON.parse(readFileSync(path.join(here, "fixtures", `${name}.boxes.json`), "utf8")) as {
    width: number;
    height: number;
    boxes: Record<string, Box>;
  };
  return {
    image: { bytes, mime: jpeg ? "image/jpeg" : "image/png", width: meta.width, height: meta.height },
    boxes: meta.boxes,
    box(id) {
      const b = meta.boxes[id];
      if (!b) throw new Error(`fixture ${name} has no box ${id}`);
      return b;
    },
  };
}

export function contains(b: Box, p: { x: number | null; y: number | null }, slack = 0): boolean {
  if (p.x === null || p.y === null) return false;
  return p.x >= b.x - slack && p.x <= b.x + b.width + slack && p.y >= b.y - slack && p.y <= b.y + b.height + slack;
}

export function center(b: Box): { x: number; y: number } {
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
}

/** An OCR run as the recogniser would report it: text at a box, characters split by width. */
export function run(text: string, x: number, y: number, height = 16, width?: number): OcrRun {
  const w = width ?? Math.round(text.length * height * 0.55);
  const bbox = { x, y, width: w, height };
  return { text, confidence: 0.98, bbox, chars: charsByProportion(text, bbox, 0.98) };
}
