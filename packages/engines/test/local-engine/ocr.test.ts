// OCR on real screenshots rendered by Chromium (fixtures/): words with boxes that sit on the DOM's
// own boxes, in the sent image's pixel space; the cache; the tesseract fallback; pure helpers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeToRgba } from "../../src/local/image.ts";
import {
  charsByProportion,
  clearLocalOcrCache,
  closeLocalOcr,
  configureLocalOcr,
  loadDictionary,
  localOcrBackend,
  ocrModelPaths,
  ocrWorkerCount,
  parseTesseractTsv,
  runLocalOcr,
  splitBoxes,
  warmUpLocalOcr,
  wordsOfRun,
} from "../../src/local/ocr.ts";
import { center, contains, loadFixture } from "./helpers.ts";

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, "");

beforeAll(async () => {
  configureLocalOcr({ backend: "auto" });
  await warmUpLocalOcr();
});

describe("paddle OCR on a light login page", () => {
  const f = loadFixture("login");

  it("reads every label with word boxes on the DOM boxes", async () => {
    const r = await runLocalOcr(f.image);
    expect(r.backend).toBe("paddle");
    expect(r.width).toBe(1280);
    expect(r.height).toBe(720);
    const cases: [string, string][] = [
      ["pricing", "Pricing"],
      ["docs", "Docs"],
      ["signin", "Sign"],
      ["cancel", "Cancel"],
      ["email-label", "Email"],
      ["password-label", "Password"],
      ["remember-label", "Remember"],
    ];
    for (const [id, word] of cases) {
      // some OCR word with this text has its centre on the element (texts may repeat: "Sign")
      const hits = r.words.filter((x) => norm(x.text) === norm(word));
      expect(hits.length, `word ${word}`).toBeGreaterThan(0);
      const w = hits.find((x) => contains(f.box(id), center(x.bbox), 2));
      expect(w, `${word} centre on ${id}: ${JSON.stringify(hits.map((h) => h.bbox))}`).toBeDefined();
      expect(w?.confidence).toBeGreaterThan(0.5);
      expect(w?.confidence).toBeLessThanOrEqual(1);
    }
  });

  it("splits a text run into word boxes (Contact | sales) that do not overlap", async () => {
    const r = await runLocalOcr(f.image);
    const contact = r.words.find((w) => norm(w.text) === "contact");
    const sales = r.words.find((w) => norm(w.text) === "sales");
    expect(contact && sales).toBeTruthy();
    if (!contact || !sales) return;
    expect(contact.bbox.x + contact.bbox.width).toBeLessThanOrEqual(sales.bbox.x + 1);
    const dom = f.box("contact");
    expect(contains(dom, center(contact.bbox), 2)).toBe(true);
    expect(contains(dom, center(sales.bbox), 2)).toBe(true);
    expect(r.lines.some((l) => /contact\s*sales/i.test(l.text))).toBe(true);
  });

  it("serves a second call on the same bytes from the cache", async () => {
    const a = await runLocalOcr(f.image);
    const b = await runLocalOcr({ ...f.image, bytes: Buffer.from(f.image.bytes) });
    expect(b.cached).toBe(true);
    expect(b.words).toEqual(a.words);
  });
});

describe("the paddle backend's thread", () => {
  /** The longest the event loop went without running a 5 ms timer while one OCR pass ran. */
  async function longestStall(): Promise<{ stall: number; text: string }> {
    clearLocalOcrCache();
    let last = performance.now();
    let stall = 0;
    const t = setInterval(() => {
      const now = performance.now();
      stall = Math.max(stall, now - last);
      last = now;
    }, 5);
    try {
      const r = await runLocalOcr(loadFixture("login").image, undefined, "fine");
      return { stall, text: r.text };
    } finally {
      clearInterval(t);
    }
  }

  it("runs the models on a worker: the event loop keeps turning during a pass; in-process it stalls", async () => {
    const onWorker = await longestStall();
    configureLocalOcr({ worker: false });
    try {
      await warmUpLocalOcr();
      const inProcess = await longestStall();
      // the same reading either way
      expect(inProcess.text).toBe(onWorker.text);
      // in-process, each model call holds the loop for its whole length (microsoft/onnxruntime#19611)
      expect(inProcess.stall).toBeGreaterThan(onWorker.stall * 2);
    } finally {
      configureLocalOcr({ worker: true });
      await warmUpLocalOcr();
    }
  });

  it("closing while the models load lets the load end, then stops the worker; the next pass starts a new one", async () => {
    await closeLocalOcr();
    const loading = warmUpLocalOcr(); // a fresh worker starts loading its models
    const outcome = loading.then(
      () => null,
      (e: Error) => e,
    );
    // shutdown in the middle of that load: the load ends first (terminating a worker inside onnxruntime
    // aborts the process), then the worker stops
    await closeLocalOcr();
    expect((await outcome)?.message).toMatch(/closed while loading/); // no fallback to tesseract for good
    const r = await runLocalOcr(loadFixture("login").image);
    expect(r.backend).toBe("paddle");
    expect(norm(r.text)).toContain("signin");
  });

  it("two OCR workers (detection on one, recognition split between both) read what one worker reads", async () => {
    const f = loadFixture("login");
    configureLocalOcr({ workers: 1 });
    try {
      const one = await runLocalOcr(f.image);
      configureLocalOcr({ workers: 2 });
      expect(ocrWorkerCount()).toBe(2);
      const two = await runLocalOcr(f.image);
      expect(two.cached).toBe(false);
      expect(two.runs).toEqual(one.runs);
      expect(two.words).toEqual(one.words);
      // the pass reports its stages: detection on the first worker, recognition summed over both
      for (const stage of ["decode", "det.model", "recognize", "rec.model"])
        expect(two.stages[stage]).toBeGreaterThan(0);
    } finally {
      configureLocalOcr({ workers: 0 });
    }
  });

  it("pixels the caller decodes (while the detector reads the bytes) are read as the bytes are", async () => {
    const f = loadFixture("login");
    for (const workers of [1, 2]) {
      configureLocalOcr({ workers });
      try {
        clearLocalOcrCache();
        const fromBytes = await runLocalOcr(f.image);
        clearLocalOcrCache();
        const fromPixels = await runLocalOcr(f.image, undefined, "fast", decodeToRgba(f.image));
        expect(fromPixels.cached).toBe(false);
        expect(fromPixels.runs, `${workers} worker(s)`).toEqual(fromBytes.runs);
        for (const stage of ["decode", "det.model", "rec.model"]) expect(fromPixels.stages[stage]).toBeDefined();
        clearLocalOcrCache();
        // the caller could not decode them: the pass fails as decoding in the worker would
        await expect(runLocalOcr(f.image, undefined, "fast", Promise.resolve(null))).rejects.toThrow(
          /could not be decoded/,
        );
      } finally {
        configureLocalOcr({ workers: 0 });
      }
    }
  });

  it("splits boxes between recognisers by crop width, widest first", () => {
    const box = (width: number) => ({ x: 0, y: 0, width, height: 20 });
    const boxes = [box(400), box(100), box(300), box(200), box(100)];
    const parts = splitBoxes(boxes, 2, 1);
    expect(parts.flat().sort()).toEqual([0, 1, 2, 3, 4]);
    const load = (p: number[]) => p.reduce((s, i) => s + (boxes[i]?.width ?? 0), 0);
    expect(parts.map(load).sort()).toEqual([500, 600]);
    expect(splitBoxes(boxes, 1, 1)).toEqual([[0, 1, 2, 3, 4]]);
  });

  it("a closed worker (settings changed) is replaced by a new one on the next pass", async () => {
    configureLocalOcr({ worker: false });
    configureLocalOcr({ worker: true });
    const r = await runLocalOcr(loadFixture("login").image);
    expect(r.backend).toBe("paddle");
    expect(norm(r.text)).toContain("signin");
  });
});

describe("paddle OCR on a dark JPEG", () => {
  it("decodes JPEG and reads white-on-colour button text", async () => {
    const f = loadFixture("dashboard-jpeg");
    const r = await runLocalOcr(f.image);
    expect(r.width).toBe(1024);
    for (const [id, word] of [
      ["export", "Export"],
      ["new", "order"],
      ["alice", "Alice"],
      ["menu-reports", "Reports"],
    ] as const) {
      const w = r.words.find((x) => norm(x.text) === norm(word) && contains(f.box(id), center(x.bbox), 2));
      expect(w, word).toBeDefined();
    }
  });
});

describe("tesseract fallback", () => {
  afterAll(() => {
    configureLocalOcr({ backend: "auto" });
    clearLocalOcrCache();
  });

  it("reads the page with preprocessing, including white text on a blue button", async () => {
    configureLocalOcr({ backend: "tesseract" });
    expect((await localOcrBackend()).backend).toBe("tesseract");
    const f = loadFixture("login");
    const r = await runLocalOcr(f.image);
    expect(r.backend).toBe("tesseract");
    for (const [id, word] of [
      ["signin", "Sign"],
      ["pricing", "Pricing"],
      ["remember-label", "Remember"],
      ["cancel", "Cancel"],
    ] as const) {
      const w = r.words.find((x) => norm(x.text) === norm(word) && contains(f.box(id), center(x.bbox), 3));
      expect(w, word).toBeDefined();
    }
  });
});

describe("pure helpers", () => {
  it("loads the PP-OCRv4 dictionary with blank first and the space class last", () => {
    const dict = loadDictionary(ocrModelPaths().dictionary);
    expect(dict).toHaveLength(6625);
    expect(dict[0]).toBe("");
    expect(dict[dict.length - 1]).toBe(" ");
  });

  it("splits a run's box among words by character widths", () => {
    const bbox = { x: 100, y: 10, width: 120, height: 20 };
    const words = wordsOfRun({
      text: "Save changes",
      confidence: 0.9,
      bbox,
      chars: charsByProportion("Save changes", bbox, 0.9),
    });
    expect(words.map((w) => w.text)).toEqual(["Save", "changes"]);
    const [save, changes] = words;
    expect(save?.bbox.x).toBe(100);
    expect((save?.bbox.x ?? 0) + (save?.bbox.width ?? 0)).toBeLessThanOrEqual(changes?.bbox.x ?? 0);
    expect((changes?.bbox.x ?? 0) + (changes?.bbox.width ?? 0)).toBeLessThanOrEqual(220);
    expect(changes?.bbox.width).toBeGreaterThan(save?.bbox.width ?? 0);
  });

  it("parses tesseract TSV into runs in the original scale", () => {
    const tsv = [
      "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext",
      "5\t1\t1\t1\t1\t1\t200\t100\t80\t30\t95.5\tSign",
      "5\t1\t1\t1\t1\t2\t290\t100\t40\t30\t91\tin",
      "5\t1\t1\t1\t1\t3\t900\t100\t100\t30\t90\tCancel",
    ].join("\n");
    const runs = parseTesseractTsv(tsv, 2);
    expect(runs.map((r) => r.text)).toEqual(["Sign in", "Cancel"]);
    expect(runs[0]?.bbox).toEqual({ x: 100, y: 50, width: 65, height: 15 });
  });
});
