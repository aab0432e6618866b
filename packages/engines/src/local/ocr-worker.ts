// The paddle OCR backend on its own thread. onnxruntime-node runs every model call synchronously on the
// calling thread (microsoft/onnxruntime#19611), so in the API process it would stall every other request
// for the length of a call; here it stalls only this worker. Loaded by ocr.ts (`paddleWorkerBackend`);
// plain Node strips the types of this file and what it imports (erasable syntax only).
import { parentPort, workerData } from "node:worker_threads";
import { configureLocalOcr, type LocalOcrConfig, type OcrWorkerRun, paddleBackend } from "./ocr.ts";

const port = parentPort;
if (!port) throw new Error("ocr-worker.ts runs as a worker thread");
configureLocalOcr({ ...(workerData as { config: LocalOcrConfig }).config, worker: false });

paddleBackend().then(
  (backend) => {
    port.postMessage({ type: "ready" });
    port.on("message", async (m: OcrWorkerRun) => {
      try {
        const image = {
          bytes: Buffer.from(m.bytes.buffer, m.bytes.byteOffset, m.bytes.byteLength),
          mime: m.mime,
          width: m.width,
          height: m.height,
        };
        const r = await backend.run(image, m.pass);
        port.postMessage({ type: "result", id: m.id, ...r });
      } catch (e) {
        port.postMessage({ type: "error", id: m.id, message: e instanceof Error ? e.message : String(e) });
      }
    });
  },
  (e: unknown) => port.postMessage({ type: "init-error", message: e instanceof Error ? e.message : String(e) }),
);
