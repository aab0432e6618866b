// The paddle OCR backend on its own thread. onnxruntime-node runs every model call synchronously on the
// calling thread (microsoft/onnxruntime#19611), so in the API process it would stall every other request
// for the length of a call; here it stalls only this worker. Loaded by ocr.ts (`paddleWorkerBackend`), one
// or more per process: the first may detect, every one recognises (its `role`). Plain Node strips the types
// of this file and what it imports (erasable syntax only).
import { parentPort, workerData } from "node:worker_threads";
import {
  configureLocalOcr,
  type LocalOcrConfig,
  type OcrWorkerMessage,
  type OcrWorkerReply,
  type PaddlePixels,
  type PaddleRole,
  paddleSteps,
} from "./ocr.ts";

const port = parentPort;
if (!port) throw new Error("ocr-worker.ts runs as a worker thread");
const data = workerData as { config: LocalOcrConfig; role: PaddleRole };
configureLocalOcr({ ...data.config, worker: false });

/** decoded images waiting for their "recognize", by pass id (a few at most: passes are serialised) */
const kept = new Map<number, Promise<PaddlePixels>>();
const KEEP = 4;

const reply = (m: OcrWorkerReply) => port.postMessage(m);
const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

paddleSteps(data.role).then(
  (steps) => {
    const bytesOf = (m: Extract<OcrWorkerMessage, { type: "load" | "detect" | "run" }>) => ({
      ...m.image,
      bytes: Buffer.from(m.image.bytes.buffer, m.image.bytes.byteOffset, m.image.bytes.byteLength),
    });
    const pixelsOf = (m: Extract<OcrWorkerMessage, { type: "load" | "detect" | "run" }>) => steps.decode(bytesOf(m));
    const keep = (m: Extract<OcrWorkerMessage, { type: "load" | "detect" }>) => {
      const id = m.id;
      const p = pixelsOf(m);
      p.catch(() => undefined);
      kept.set(id, p);
      while (kept.size > KEEP) {
        const oldest = kept.keys().next().value;
        if (oldest === undefined) break;
        kept.delete(oldest);
      }
      return p;
    };
    port.on("message", async (m: OcrWorkerMessage) => {
      try {
        if (m.type === "load") keep(m);
        else if (m.type === "drop") kept.delete(m.id);
        else if (m.type === "detect" && !m.keep) {
          // the main thread decodes the pixels and sends them with "recognize": read only what detection needs
          const det = await steps.detectBytes(bytesOf(m), m.pass.maxSide);
          reply({
            type: "boxes",
            id: m.id,
            boxes: det.boxes,
            width: det.width,
            height: det.height,
            stages: det.stages,
          });
        } else if (m.type === "detect") {
          const pixels = await keep(m);
          const det = await steps.detect(pixels, m.pass.maxSide);
          const { width, height } = pixels.rgba;
          reply({
            type: "boxes",
            id: m.id,
            boxes: det.boxes,
            width,
            height,
            stages: { decode: Math.round(pixels.ms), ...det.stages },
          });
        } else if (m.type === "recognize") {
          // the main thread's pixels (decoded once there, in shared memory), else the ones kept here
          const pixels = m.pixels ? Promise.resolve(steps.adopt(m.pixels)) : kept.get(m.id);
          kept.delete(m.id);
          if (!pixels) throw new Error(`no image kept for pass ${m.id}`);
          const rec = await steps.recognize(await pixels, m.boxes, m.pass);
          reply({ type: "runs", id: m.id, runs: rec.runs, stages: rec.stages });
        } else if (m.type === "run") {
          const pixels = await pixelsOf(m);
          const det = await steps.detect(pixels, m.pass.maxSide);
          const t1 = performance.now();
          const rec = await steps.recognize(pixels, det.boxes, m.pass);
          const recognize = Math.round(performance.now() - t1);
          reply({
            type: "result",
            id: m.id,
            runs: rec.runs.filter((r) => r !== null),
            width: pixels.rgba.width,
            height: pixels.rgba.height,
            stages: { decode: Math.round(pixels.ms), ...det.stages, recognize, ...rec.stages },
          });
        }
      } catch (e) {
        if (m.type !== "load" && m.type !== "drop") reply({ type: "error", id: m.id, message: message(e) });
      }
    });
    reply({ type: "ready" });
  },
  (e: unknown) => reply({ type: "init-error", message: message(e) }),
);
