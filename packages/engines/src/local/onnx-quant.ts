// Static int8 quantization of an OCR model's wide convolutions, done in memory when the OCR engine loads
// (after onnx-fuse.ts), from the shipped float model and the activation ranges in ocr-int8-ranges.json
// (measured by bench/grounding/calibrate.ts on screenshots that are not the bench's pages). Opt-in
// (`int8`, recogniser only): see docs/engines-local.md for what it gains and what it costs.
//
// The rewrite is onnxruntime's "QDQ" form: every convolution reads DequantizeLinear(int8 weights, one
// scale per output channel) and DequantizeLinear(QuantizeLinear(input)), and its output goes through
// QuantizeLinear -> DequantizeLinear; onnxruntime fuses each such group into one QLinearConv (uint8
// activations, int8 weights: VNNI dot products on this CPU) and leaves everything else in float.
// The quantize nodes are the com.microsoft ones (axis from opset 1): the recogniser is an opset 9 model,
// and raising its opset would change the meaning of its Slice, Squeeze and Softmax nodes.
// A BatchNormalization right after a convolution is folded into it first (onnxruntime would do that
// itself on the float model, but not across a QuantizeLinear).
import { createRequire } from "node:module";
import type { onnx as OnnxNs } from "onnx-proto";

const require = createRequire(import.meta.url);
const { onnx } = require("onnx-proto") as { onnx: typeof OnnxNs };

type Node = OnnxNs.NodeProto;
type Tensor = OnnxNs.ITensorProto;

const FLOAT = 1;
const UINT8 = 2;
const INT8 = 3;
const INT32 = 6;
const MS = "com.microsoft";

/** min and max of a tensor over the calibration inputs */
export type Ranges = Record<string, [number, number]>;

export interface QuantStats {
  /** convolutions in the model, and how many of them were quantized */
  convs: number;
  quantized: number;
  foldedBatchNorms: number;
  tensors: number;
}

interface Graph {
  m: OnnxNs.ModelProto;
  g: OnnxNs.GraphProto;
  nodes: Node[];
  byOut: Map<string, Node>;
  consumers: Map<string, Node[]>;
  consts: Map<string, Tensor>;
}

function load(model: Uint8Array): Graph {
  const m = onnx.ModelProto.decode(model);
  const g = m.graph;
  if (!g) throw new Error("the ONNX model has no graph");
  const nodes = (g.node ?? []) as Node[];
  const gr: Graph = { m, g: g as OnnxNs.GraphProto, nodes, byOut: new Map(), consumers: new Map(), consts: new Map() };
  index(gr);
  return gr;
}

function index(gr: Graph): void {
  gr.byOut.clear();
  gr.consumers.clear();
  gr.consts.clear();
  for (const t of gr.g.initializer ?? []) gr.consts.set(t.name ?? "", t);
  for (const n of gr.nodes) {
    for (const o of n.output) gr.byOut.set(o, n);
    for (const i of n.input) gr.consumers.set(i, [...(gr.consumers.get(i) ?? []), n]);
    if (n.opType === "Constant") {
      const t = n.attribute.find((a) => a.name === "value")?.t;
      if (t && n.output[0]) gr.consts.set(n.output[0], t);
    }
  }
}

function floats(t: Tensor): Float32Array {
  if (t.floatData?.length) return Float32Array.from(t.floatData);
  const raw = t.rawData ?? new Uint8Array();
  return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
}

function attrF(n: Node, name: string, dflt: number): number {
  const a = n.attribute.find((x) => x.name === name);
  return a ? Number(a.f) : dflt;
}

/** Folds BatchNormalization nodes that alone read a convolution's output into the convolution. */
function foldBatchNorms(gr: Graph): number {
  let folded = 0;
  const removed = new Set<Node>();
  for (const bn of gr.nodes.filter((n) => n.opType === "BatchNormalization")) {
    const conv = gr.byOut.get(bn.input[0] ?? "");
    if (conv?.opType !== "Conv" || gr.consumers.get(conv.output[0] ?? "")?.length !== 1) continue;
    if (bn.output.length !== 1) continue;
    const [g, b, mean, v] = [1, 2, 3, 4].map((i) => gr.consts.get(bn.input[i] ?? ""));
    const wT = gr.consts.get(conv.input[1] ?? "");
    if (!g || !b || !mean || !v || !wT) continue;
    if ((gr.consumers.get(conv.input[1] ?? "")?.length ?? 0) !== 1) continue;
    const eps = attrF(bn, "epsilon", 1e-5);
    const W = floats(wT);
    const oc = Number(wT.dims?.[0]);
    const per = W.length / oc;
    const bias = conv.input[2] ? gr.consts.get(conv.input[2]) : undefined;
    const B = bias ? floats(bias) : new Float32Array(oc);
    const [G, Be, M, V] = [g, b, mean, v].map(floats) as [Float32Array, Float32Array, Float32Array, Float32Array];
    const newW = new Float32Array(W.length);
    const newB = new Float32Array(oc);
    for (let o = 0; o < oc; o++) {
      const k = (G[o] ?? 1) / Math.sqrt((V[o] ?? 1) + eps);
      for (let i = 0; i < per; i++) newW[o * per + i] = (W[o * per + i] ?? 0) * k;
      newB[o] = ((B[o] ?? 0) - (M[o] ?? 0)) * k + (Be[o] ?? 0);
    }
    const wName = `${conv.output[0]}_bnfold_w`;
    const bName = `${conv.output[0]}_bnfold_b`;
    gr.g.initializer.push(
      onnx.TensorProto.create({ name: wName, dims: wT.dims, dataType: FLOAT, rawData: new Uint8Array(newW.buffer) }),
      onnx.TensorProto.create({ name: bName, dims: [oc], dataType: FLOAT, rawData: new Uint8Array(newB.buffer) }),
    );
    conv.input = [conv.input[0] ?? "", wName, bName];
    conv.output = [bn.output[0] ?? ""];
    removed.add(bn);
    folded++;
  }
  gr.nodes = gr.nodes.filter((n) => !removed.has(n));
  index(gr);
  return folded;
}

/** Convolutions with fewer input channels (per group) than this stay float. */
export const MIN_INT8_CHANNELS = 64;

/**
 * The convolutions that get quantized: constant float weights, one group (not depthwise), at least
 * MIN_INT8_CHANNELS input channels. Measured on both models (one thread, CPU time): all 38 + 62 convolutions
 * in int8 cost as much as float (the quantize/dequantize and layout changes around each eat the gain; the
 * depthwise ones are no faster in int8), while the wide pointwise ones alone took 11-15% off.
 */
function quantizableConvs(gr: Graph): Node[] {
  return gr.nodes.filter((n) => {
    if (n.opType !== "Conv" || !n.output[0] || !n.input[0]) return false;
    const w = gr.consts.get(n.input[1] ?? "");
    if (w?.dataType !== FLOAT) return false;
    const group = Number(n.attribute.find((a) => a.name === "group")?.i ?? 1);
    return group === 1 && Number(w.dims?.[1] ?? 0) >= MIN_INT8_CHANNELS;
  });
}

/**
 * The tensors whose ranges quantization needs: every quantizable convolution's input and output. The
 * model given is the float model (fused); BatchNormalizations after convolutions are folded first, so
 * the names are those of the graph the quantizer sees.
 */
export function calibrationModel(model: Uint8Array): { bytes: Uint8Array; tensors: string[] } {
  const gr = load(model);
  foldBatchNorms(gr);
  const names = new Set<string>();
  for (const c of quantizableConvs(gr)) {
    names.add(c.input[0] ?? "");
    names.add(c.output[0] ?? "");
  }
  const outputs = new Set((gr.g.output ?? []).map((o) => o.name));
  const tensors = [...names].filter((n) => n && !outputs.has(n));
  for (const t of tensors) {
    gr.g.output.push(
      onnx.ValueInfoProto.create({ name: t, type: { tensorType: { elemType: FLOAT } } as OnnxNs.ITypeProto }),
    );
  }
  const used = new Set(gr.nodes.flatMap((n) => n.input));
  gr.g.node = gr.nodes.filter((n) => n.opType !== "Constant" || n.output.some((o) => used.has(o)));
  return { bytes: onnx.ModelProto.encode(gr.m).finish(), tensors };
}

/** uint8 activation parameters covering [min, max] and zero. */
export function activationParams(min: number, max: number): { scale: number; zeroPoint: number } {
  const lo = Math.min(0, min);
  const hi = Math.max(0, max);
  const scale = hi > lo ? (hi - lo) / 255 : 1;
  const zeroPoint = Math.max(0, Math.min(255, Math.round(-lo / scale)));
  return { scale: Math.fround(scale), zeroPoint };
}

/**
 * Rewrites every convolution with known input and output ranges into onnxruntime's QDQ form (see the
 * top of this file). Convolutions without ranges stay float.
 */
export function quantizeConvs(model: Uint8Array, ranges: Ranges): { bytes: Uint8Array; stats: QuantStats } {
  const gr = load(model);
  const foldedBatchNorms = foldBatchNorms(gr);
  const convs = quantizableConvs(gr);
  const all = gr.nodes.filter((n) => n.opType === "Conv").length;
  const stats: QuantStats = { convs: all, quantized: 0, foldedBatchNorms, tensors: 0 };
  const init = (t: OnnxNs.ITensorProto) => gr.g.initializer.push(onnx.TensorProto.create(t));
  const msNode = (opType: string, input: string[], output: string[], axis?: number) =>
    onnx.NodeProto.create({
      opType,
      domain: MS,
      input,
      output,
      name: output[0],
      attribute:
        axis === undefined
          ? []
          : [onnx.AttributeProto.create({ name: "axis", i: axis, type: onnx.AttributeProto.AttributeType.INT })],
    });
  const added: Node[] = [];
  /** the dequantized copy of each activation tensor, and its scale */
  const qdq = new Map<string, { name: string; scale: number }>();
  const activation = (t: string): { name: string; scale: number } => {
    const hit = qdq.get(t);
    if (hit) return hit;
    const r = ranges[t];
    if (!r) throw new Error(`no range for ${t}`);
    const { scale, zeroPoint } = activationParams(r[0], r[1]);
    init({
      name: `${t}_q_scale`,
      dims: [],
      dataType: FLOAT,
      rawData: new Uint8Array(new Float32Array([scale]).buffer),
    });
    init({ name: `${t}_q_zp`, dims: [], dataType: UINT8, rawData: new Uint8Array([zeroPoint]) });
    added.push(
      msNode("QuantizeLinear", [t, `${t}_q_scale`, `${t}_q_zp`], [`${t}_q`]),
      msNode("DequantizeLinear", [`${t}_q`, `${t}_q_scale`, `${t}_q_zp`], [`${t}_dq`]),
    );
    const out = { name: `${t}_dq`, scale };
    qdq.set(t, out);
    stats.tensors++;
    return out;
  };
  for (const conv of convs) {
    const x = conv.input[0] ?? "";
    const y = conv.output[0] ?? "";
    if (!ranges[x] || !ranges[y]) continue;
    const wT = gr.consts.get(conv.input[1] ?? "");
    if (!wT) continue;
    const W = floats(wT);
    const oc = Number(wT.dims?.[0]);
    const per = W.length / oc;
    const bT = conv.input[2] ? gr.consts.get(conv.input[2]) : undefined;
    const B = bT ? floats(bT) : new Float32Array(oc);
    const xq = activation(x);
    // weights: int8, symmetric, one scale per output channel
    const wq = new Int8Array(W.length);
    const wScale = new Float32Array(oc);
    const bq = new Int32Array(oc);
    for (let o = 0; o < oc; o++) {
      let absMax = 0;
      for (let i = 0; i < per; i++) absMax = Math.max(absMax, Math.abs(W[o * per + i] ?? 0));
      const s = absMax > 0 ? absMax / 127 : 1;
      wScale[o] = s;
      for (let i = 0; i < per; i++)
        wq[o * per + i] = Math.max(-127, Math.min(127, Math.round((W[o * per + i] ?? 0) / s)));
      bq[o] = Math.round((B[o] ?? 0) / (Math.fround(s) * xq.scale));
    }
    const base = `${y}_conv`;
    const bScale = new Float32Array(oc);
    for (let o = 0; o < oc; o++) bScale[o] = (wScale[o] ?? 1) * xq.scale;
    init({ name: `${base}_w_q`, dims: wT.dims, dataType: INT8, rawData: new Uint8Array(wq.buffer) });
    init({ name: `${base}_w_scale`, dims: [oc], dataType: FLOAT, rawData: new Uint8Array(wScale.buffer) });
    init({ name: `${base}_w_zp`, dims: [oc], dataType: INT8, rawData: new Uint8Array(oc) });
    init({ name: `${base}_b_q`, dims: [oc], dataType: INT32, rawData: new Uint8Array(bq.buffer) });
    init({ name: `${base}_b_scale`, dims: [oc], dataType: FLOAT, rawData: new Uint8Array(bScale.buffer) });
    init({ name: `${base}_b_zp`, dims: [oc], dataType: INT32, rawData: new Uint8Array(oc * 4) });
    added.push(
      msNode("DequantizeLinear", [`${base}_w_q`, `${base}_w_scale`, `${base}_w_zp`], [`${base}_w_dq`], 0),
      msNode("DequantizeLinear", [`${base}_b_q`, `${base}_b_scale`, `${base}_b_zp`], [`${base}_b_dq`], 0),
    );
    conv.input = [xq.name, `${base}_w_dq`, `${base}_b_dq`];
    // the output: the convolution writes y_raw, QuantizeLinear -> DequantizeLinear gives y to its readers
    const raw = `${y}_raw`;
    conv.output = [raw];
    const { scale, zeroPoint } = activationParams(ranges[y][0], ranges[y][1]);
    init({
      name: `${raw}_q_scale`,
      dims: [],
      dataType: FLOAT,
      rawData: new Uint8Array(new Float32Array([scale]).buffer),
    });
    init({ name: `${raw}_q_zp`, dims: [], dataType: UINT8, rawData: new Uint8Array([zeroPoint]) });
    added.push(
      msNode("QuantizeLinear", [raw, `${raw}_q_scale`, `${raw}_q_zp`], [`${raw}_q`]),
      msNode("DequantizeLinear", [`${raw}_q`, `${raw}_q_scale`, `${raw}_q_zp`], [y]),
    );
    // a later convolution reading y reads it through one more QuantizeLinear -> DequantizeLinear pair with
    // the same parameters (onnxruntime removes the redundant pair)
    stats.quantized++;
  }
  // nodes must stay topologically sorted: put each added node right before its first reader
  const producers = new Map<string, Node>();
  for (const n of added) for (const o of n.output) producers.set(o, n);
  const placed = new Set<Node>();
  const out: Node[] = [];
  const place = (n: Node) => {
    if (placed.has(n)) return;
    placed.add(n);
    for (const i of n.input) {
      const p = producers.get(i);
      if (p) place(p);
    }
    out.push(n);
  };
  for (const n of gr.nodes) place(n);
  for (const n of added) place(n);
  // the convolution writing y_raw comes before the QuantizeLinear reading it: order by dependencies
  gr.g.node = topoSort(out);
  // drop the float weights nothing reads
  const used = new Set(gr.g.node.flatMap((n) => n.input ?? []));
  gr.g.initializer = gr.g.initializer.filter((t) => used.has(t.name ?? ""));
  gr.g.node = gr.g.node.filter((n) => n.opType !== "Constant" || (n.output ?? []).some((o) => used.has(o)));
  if (!gr.m.opsetImport.some((o) => o.domain === MS)) gr.m.opsetImport.push({ domain: MS, version: 1 });
  raiseToOpset10(gr);
  return { bytes: onnx.ModelProto.encode(gr.m).finish(), stats };
}

/**
 * onnxruntime writes the fused convolutions as ONNX QLinearConv, which exists from opset 10: an opset 9 model
 * (the recogniser) is raised to 10. Of its ops only Slice changed meaning between 9 and 10 (starts, ends
 * and axes moved from attributes to inputs), so Slice nodes are rewritten; anything else changed there is
 * refused.
 */
function raiseToOpset10(gr: Graph): void {
  const main = gr.m.opsetImport.find((o) => !o.domain);
  if (!main || Number(main.version) >= 10) return;
  const changed = new Set(["Upsample", "TopK", "Dropout", "MaxPool", "Mod", "IsInf", "ThresholdedRelu"]);
  for (const n of gr.g.node as Node[]) {
    if (!n.domain && changed.has(n.opType ?? ""))
      throw new Error(`cannot raise the model to opset 10: it has ${n.opType}`);
    if (n.opType !== "Slice" || n.domain) continue;
    const ints = (k: string) => n.attribute.find((a) => a.name === k)?.ints?.map(Number);
    const starts = ints("starts");
    const ends = ints("ends");
    if (!starts || !ends) continue;
    const axes = ints("axes") ?? starts.map((_, i) => i);
    const base = `${n.output[0]}_slice`;
    const add = (name: string, v: number[]) =>
      gr.g.initializer.push(
        onnx.TensorProto.create({
          name,
          dims: [v.length],
          dataType: 7, // INT64
          rawData: new Uint8Array(BigInt64Array.from(v.map((x) => BigInt(x))).buffer),
        }),
      );
    add(`${base}_starts`, starts);
    add(`${base}_ends`, ends);
    add(`${base}_axes`, axes);
    n.input = [n.input[0] ?? "", `${base}_starts`, `${base}_ends`, `${base}_axes`];
    n.attribute = [];
  }
  main.version = 10;
}

/** Kahn's order of the nodes (stable: ties keep their order). */
function topoSort(nodes: Node[]): Node[] {
  const producer = new Map<string, number>();
  nodes.forEach((n, i) => {
    for (const o of n.output) producer.set(o, i);
  });
  const deps = nodes.map(
    (n) => new Set(n.input.map((i) => producer.get(i)).filter((p): p is number => p !== undefined)),
  );
  const readers: number[][] = nodes.map(() => []);
  deps.forEach((d, i) => {
    for (const p of d) readers[p]?.push(i);
  });
  const left = deps.map((d) => d.size);
  const ready: number[] = [];
  left.forEach((c, i) => {
    if (c === 0) ready.push(i);
  });
  const order: Node[] = [];
  // a min-heap would keep the original order exactly; the graphs are small, a sorted queue is enough
  while (ready.length) {
    ready.sort((a, b) => a - b);
    const i = ready.shift() as number;
    order.push(nodes[i] as Node);
    for (const r of readers[i] ?? []) if (--left[r]! === 0) ready.push(r);
  }
  if (order.length !== nodes.length) throw new Error("the quantized graph has a cycle");
  return order;
}
