// int8 recognition (opt-in, `int8: true`): the recogniser's wide convolutions quantized at load from the
// shipped model and the calibrated ranges (onnx-quant.ts, ocr-int8-ranges.json). The ranges must belong to
// the installed model file (else int8 silently loads the float model), the rewritten model must load in
// onnxruntime, and it must read the fixtures' labels where the float model reads them.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-node";
import { afterAll, describe, expect, it } from "vitest";
import {
  clearLocalOcrCache,
  configureLocalOcr,
  type Int8RangesFile,
  ocrModelPaths,
  runLocalOcr,
} from "../../src/local/ocr.ts";
import { fuseAffineOps } from "../../src/local/onnx-fuse.ts";
import { activationParams, quantizeConvs } from "../../src/local/onnx-quant.ts";
import { center, contains, loadFixture } from "./helpers.ts";

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, "");
const rangesFile = JSON.parse(
  readFileSync(new URL("../../src/local/ocr-int8-ranges.json", import.meta.url), "utf8"),
) as Int8RangesFile;

afterAll(() => configureLocalOcr({ int8: false }));

describe("int8 recognition", () => {
  it("the calibrated ranges were measured on the installed recogniser", () => {
    const sha = createHash("sha256").update(readFileSync(ocrModelPaths().recognition)).digest("hex");
    expect(rangesFile.recognition.sha256).toBe(sha);
  });

  it("quantizes the recogniser's wide convolutions into a model onnxruntime loads and runs", async () => {
    const fused = fuseAffineOps(readFileSync(ocrModelPaths().recognition)).bytes;
    const { bytes, stats } = quantizeConvs(fused, rangesFile.recognition.ranges);
    expect(stats.quantized).toBeGreaterThanOrEqual(10);
    expect(stats.quantized).toBeLessThan(stats.convs); // the depthwise and narrow ones stay float
    const s = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
    try {
      const out = await s.run({
        [s.inputNames[0]!]: new ort.Tensor("float32", new Float32Array(3 * 48 * 320), [1, 3, 48, 320]),
      });
      const t = out[s.outputNames[0]!]!;
      expect(t.dims[2]).toBe(6625); // the dictionary's classes
    } finally {
      await s.release();
    }
  });

  it("reads the login page's labels where the float recogniser reads them", async () => {
    const f = loadFixture("login");
    configureLocalOcr({ int8: true });
    clearLocalOcrCache();
    const r = await runLocalOcr(f.image);
    for (const [id, word] of [
      ["pricing", "Pricing"],
      ["docs", "Docs"],
      ["signin", "Sign"],
      ["cancel", "Cancel"],
      ["email-label", "Email"],
      ["password-label", "Password"],
      ["remember-label", "Remember"],
    ] as const) {
      const w = r.words.find((x) => norm(x.text) === norm(word) && contains(f.box(id), center(x.bbox), 2));
      expect(w, word).toBeDefined();
    }
  });

  it("uint8 activation parameters cover the range and zero", () => {
    expect(activationParams(-1, 3)).toEqual({ scale: Math.fround(4 / 255), zeroPoint: 64 });
    expect(activationParams(0.5, 2).zeroPoint).toBe(0); // zero is kept representable
    expect(activationParams(-2, -1).zeroPoint).toBe(255);
  });
});
