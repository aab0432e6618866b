// The models the OCR engine loads are rewritten in memory (onnx-fuse.ts). The rewrite must not change
// what they compute: both shipped PP-OCRv4 models, original and fused, run here on onnxruntime with
// the same input taken from a real screenshot, and their outputs must agree to float rounding.
import { readFileSync } from "node:fs";
import * as ort from "onnxruntime-node";
import { describe, expect, it } from "vitest";
import { decodeToRgba } from "../../src/local/image.ts";
import { ocrModelPaths } from "../../src/local/ocr.ts";
import { fuseAffineOps } from "../../src/local/onnx-fuse.ts";
import { loadFixture } from "./helpers.ts";

/** A [1, 3, h, w] tensor of the fixture's top-left corner, normalised the way the models expect. */
async function screenTensor(h: number, w: number): Promise<Float32Array> {
  const img = await decodeToRgba(loadFixture("login").image);
  const t = new Float32Array(3 * h * w);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++)
      for (let c = 0; c < 3; c++) t[c * h * w + y * w + x] = img.data[(y * img.width + x) * 4 + c]! / 127.5 - 1;
  return t;
}

async function outputs(model: Uint8Array, input: Float32Array, dims: number[]): Promise<Float32Array> {
  const s = await ort.InferenceSession.create(model, { logSeverityLevel: 3 });
  try {
    const r = await s.run({ [s.inputNames[0]!]: new ort.Tensor("float32", input, dims) });
    return r[s.outputNames[0]!]!.data as Float32Array;
  } finally {
    await s.release();
  }
}

describe("fused OCR models", () => {
  it.each([
    ["detection", () => ocrModelPaths().detection, [1, 3, 320, 640]],
    ["recognition", () => ocrModelPaths().recognition, [1, 3, 48, 320]],
  ] as const)("%s: same outputs, fewer nodes", async (_name, file, dims) => {
    const original = new Uint8Array(readFileSync(file()));
    const { bytes, stats } = fuseAffineOps(original);
    // the PP-LCNetV3 blocks were found and rewritten
    expect(stats.hardSwish).toBeGreaterThanOrEqual(20);
    expect(stats.foldedAfterConv).toBeGreaterThanOrEqual(20);
    expect(stats.nodesAfter).toBeLessThan(stats.nodesBefore * 0.8);
    const input = await screenTensor(dims[2], dims[3]);
    const [a, b] = [await outputs(original, input, [...dims]), await outputs(bytes, input, [...dims])];
    expect(b.length).toBe(a.length);
    let maxDiff = 0;
    let maxAbs = 0;
    for (let i = 0; i < a.length; i++) {
      maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
      maxAbs = Math.max(maxAbs, Math.abs(a[i]!));
    }
    expect(maxAbs).toBeGreaterThan(0.5); // the input is a real screen: the outputs are not all ~0
    expect(maxDiff).toBeLessThan(1e-3);
  });

  it("leaves a model without those patterns as it was, and rejects bytes that are not a model", () => {
    const once = fuseAffineOps(new Uint8Array(readFileSync(ocrModelPaths().recognition))).bytes;
    const twice = fuseAffineOps(once);
    expect(twice.stats).toMatchObject({ hardSwish: 0, foldedAfterConv: 0, foldedBeforeConv: 0 });
    expect(twice.stats.nodesAfter).toBe(twice.stats.nodesBefore);
    expect(() => fuseAffineOps(new Uint8Array([1, 2, 3, 4, 5]))).toThrow();
  });
});
