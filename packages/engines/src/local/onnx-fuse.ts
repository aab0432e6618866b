// Exact graph rewrites of the PP-OCRv4 ONNX models (PP-LCNetV3 backbones, exported by paddle2onnx at
// opset 9), done in memory when the OCR engine loads. onnxruntime leaves these element-wise chains
// alone, and on a CPU they cost a third of the models' time (memory-bound ops plus NCHWc layout
// reorders around each of them):
//   1. Mul/Add with the constant first are flipped to constant-second (the form every rewrite expects).
//   2. hard-swish as exported, Add(x,3) -> Clip(0,6) -> Mul(x,.) -> Div(6), becomes
//      Mul(x, HardSigmoid(x; alpha=1/6, beta=0.5)), the same function in two ops instead of four.
//   3. Conv -> Mul(scalar a) [-> Add(scalar b)] (the "learnable affine block" after a conv) is folded
//      into the conv: W' = aW, bias' = a*bias + b.
//   4. Mul(scalar c) -> Add(scalar d) -> Conv without padding is folded into that conv:
//      W' = cW, bias'[o] = bias[o] + d * sum(W[o]). (With padding the border would differ, so those stay.)
// Each rewrite is exact up to float rounding; the OCR test compares both models' outputs.
import { createRequire } from "node:module";
import type { onnx as OnnxNs } from "onnx-proto";

const require = createRequire(import.meta.url);
const { onnx } = require("onnx-proto") as { onnx: typeof OnnxNs };

type Node = OnnxNs.NodeProto;
type Tensor = OnnxNs.ITensorProto;

export interface FuseStats {
  flipped: number;
  hardSwish: number;
  foldedAfterConv: number;
  foldedBeforeConv: number;
  nodesBefore: number;
  nodesAfter: number;
}

const FLOAT = 1; // TensorProto.DataType.FLOAT

export function fuseAffineOps(model: Uint8Array): { bytes: Uint8Array; stats: FuseStats } {
  const m = onnx.ModelProto.decode(model);
  const g = m.graph;
  if (!g) throw new Error("the ONNX model has no graph");
  const stats: FuseStats = {
    flipped: 0,
    hardSwish: 0,
    foldedAfterConv: 0,
    foldedBeforeConv: 0,
    nodesBefore: g.node?.length ?? 0,
    nodesAfter: 0,
  };
  let nodes = (g.node ?? []) as Node[];
  const byOut = new Map<string, Node>();
  const consumers = new Map<string, Node[]>();
  const index = () => {
    byOut.clear();
    consumers.clear();
    for (const n of nodes) {
      for (const o of n.output) byOut.set(o, n);
      for (const i of n.input) consumers.set(i, [...(consumers.get(i) ?? []), n]);
    }
  };
  const constTensor = (name: string | undefined): Tensor | null => {
    const c = name === undefined ? undefined : byOut.get(name);
    if (c?.opType !== "Constant") return null;
    return c.attribute.find((a) => a.name === "value")?.t ?? null;
  };
  const floats = (t: Tensor): Float32Array => {
    if (t.floatData?.length) return Float32Array.from(t.floatData);
    const raw = t.rawData ?? new Uint8Array();
    return new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
  };
  const setFloats = (t: Tensor, a: Float32Array) => {
    t.floatData = [];
    t.rawData = new Uint8Array(a.buffer.slice(0));
  };
  const scalar = (name: string | undefined): number | null => {
    const t = constTensor(name);
    if (!t || t.dataType !== FLOAT) return null;
    const a = floats(t);
    return a.length === 1 ? a[0]! : null;
  };
  const only = (name: string | undefined): Node | null => {
    const c = name === undefined ? undefined : consumers.get(name);
    return c?.length === 1 ? c[0]! : null;
  };
  /** The conv's weight and bias constants are read by it alone (safe to rewrite in place). */
  const ownedBy = (conv: Node) => conv.input.slice(1).every((i) => !i || (consumers.get(i)?.length ?? 0) === 1);
  const isConst = (name: string | undefined) => constTensor(name) !== null;
  let biasNo = 0;
  const added: Node[] = [];
  /** The conv's bias values, creating a zero bias when it has none. */
  const biasOf = (conv: Node, oc: number): Tensor => {
    const existing = constTensor(conv.input[2]);
    if (existing) return existing;
    const name = `fused_bias_${biasNo++}`;
    const t = onnx.TensorProto.create({ dims: [oc], dataType: FLOAT, rawData: new Uint8Array(oc * 4) });
    const c = onnx.NodeProto.create({
      opType: "Constant",
      output: [name],
      attribute: [onnx.AttributeProto.create({ name: "value", t, type: onnx.AttributeProto.AttributeType.TENSOR })],
    });
    added.push(c);
    byOut.set(name, c);
    conv.input = [conv.input[0]!, conv.input[1]!, name];
    return t;
  };
  const commit = (remove: Set<Node>) => {
    nodes = [...added, ...nodes.filter((n) => !remove.has(n))];
    added.length = 0;
    index();
  };

  index();
  // 1. constant second
  for (const n of nodes) {
    if ((n.opType === "Mul" || n.opType === "Add") && isConst(n.input[0]) && !isConst(n.input[1])) {
      n.input = [n.input[1]!, n.input[0]!];
      stats.flipped++;
    }
  }
  index();

  // 2. hard-swish
  const removed = new Set<Node>();
  for (const clip of nodes.filter((n) => n.opType === "Clip")) {
    const add = byOut.get(clip.input[0]!);
    if (add?.opType !== "Add" || scalar(add.input[1]) !== 3 || only(add.output[0]) !== clip) continue;
    // bounds are attributes up to opset 10, inputs from opset 11
    const bound = (k: "min" | "max", i: number) =>
      clip.input.length > 1 ? scalar(clip.input[i]) : (clip.attribute.find((a) => a.name === k)?.f ?? null);
    if (bound("min", 1) !== 0 || bound("max", 2) !== 6) continue;
    const x = add.input[0]!;
    const mul = only(clip.output[0]);
    if (mul?.opType !== "Mul" || !mul.input.includes(x)) continue;
    const div = only(mul.output[0]);
    if (div?.opType !== "Div" || div.input[0] !== mul.output[0] || scalar(div.input[1]) !== 6) continue;
    add.opType = "HardSigmoid";
    add.input = [x];
    add.attribute = [
      onnx.AttributeProto.create({ name: "alpha", f: 1 / 6, type: onnx.AttributeProto.AttributeType.FLOAT }),
      onnx.AttributeProto.create({ name: "beta", f: 0.5, type: onnx.AttributeProto.AttributeType.FLOAT }),
    ];
    add.output = [clip.output[0]!];
    mul.output = [div.output[0]!];
    removed.add(clip).add(div);
    stats.hardSwish++;
  }
  commit(removed);
  removed.clear();

  // 3. Conv -> Mul(a) [-> Add(b)]
  for (const conv of nodes.filter((n) => n.opType === "Conv")) {
    const wT = constTensor(conv.input[1]);
    const mul = only(conv.output[0]);
    if (!wT || mul?.opType !== "Mul" || mul.input[0] !== conv.output[0]) continue;
    const a = scalar(mul.input[1]);
    if (a === null || !ownedBy(conv)) continue;
    const oc = Number(wT.dims?.[0]);
    const bT = biasOf(conv, oc);
    const W = floats(wT);
    const B = floats(bT);
    for (let i = 0; i < W.length; i++) W[i]! *= a;
    for (let i = 0; i < oc; i++) B[i]! *= a;
    let last = mul;
    removed.add(mul);
    const add = only(mul.output[0]);
    const b = add?.opType === "Add" && add.input[0] === mul.output[0] ? scalar(add.input[1]) : null;
    if (add && b !== null) {
      for (let i = 0; i < oc; i++) B[i]! += b;
      removed.add(add);
      last = add;
    }
    setFloats(wT, W);
    setFloats(bT, B);
    conv.output = [last.output[0]!];
    stats.foldedAfterConv++;
  }
  commit(removed);
  removed.clear();

  // 4. Mul(c) -> Add(d) -> Conv without padding
  for (const conv of nodes.filter((n) => n.opType === "Conv")) {
    const pads = conv.attribute.find((a) => a.name === "pads")?.ints ?? [];
    const autoPad = conv.attribute.find((a) => a.name === "auto_pad")?.s;
    if (pads.some((p) => Number(p) !== 0)) continue;
    if (autoPad?.length && Buffer.from(autoPad).toString() !== "NOTSET" && Buffer.from(autoPad).toString() !== "VALID")
      continue;
    const add = byOut.get(conv.input[0]!);
    if (add?.opType !== "Add" || only(add.output[0]) !== conv) continue;
    const d = scalar(add.input[1]);
    const mul = byOut.get(add.input[0]!);
    if (d === null || mul?.opType !== "Mul" || only(mul.output[0]) !== add) continue;
    const c = scalar(mul.input[1]);
    const wT = constTensor(conv.input[1]);
    if (c === null || !wT || !ownedBy(conv)) continue;
    const W = floats(wT);
    const oc = Number(wT.dims?.[0]);
    const per = W.length / oc;
    const bT = biasOf(conv, oc);
    const B = floats(bT);
    for (let o = 0; o < oc; o++) {
      let s = 0;
      for (let k = 0; k < per; k++) s += W[o * per + k]!;
      B[o]! += d * s;
    }
    for (let i = 0; i < W.length; i++) W[i]! *= c;
    setFloats(wT, W);
    setFloats(bT, B);
    conv.input = [mul.input[0]!, ...conv.input.slice(1)];
    removed.add(mul).add(add);
    stats.foldedBeforeConv++;
  }
  commit(removed);

  // constants nothing reads any more
  const used = new Set(nodes.flatMap((n) => n.input));
  for (const o of g.output ?? []) used.add(o.name ?? "");
  nodes = nodes.filter((n) => n.opType !== "Constant" || n.output.some((o) => used.has(o)));
  g.node = nodes;
  stats.nodesAfter = nodes.length;
  return { bytes: onnx.ModelProto.encode(m).finish(), stats };
}
