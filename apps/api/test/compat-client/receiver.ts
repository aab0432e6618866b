// A callback receiver as the commercial cookbook writes it: it reads the top-level `run_id` (and `status`,
// `reason`) of the delivery, looks the run's webhook secret up by that id, verifies Service-Signature over the
// raw body, and answers 400 when the body lacks run_id (what failed every delivery before issue 12).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { verifySignature } from "./client.ts";

export interface Delivery {
  deliveryId: string;
  runId: string;
  event: string;
  status: string;
  reason?: string;
  verified: boolean;
}

export async function startReceiver(secretOf: (runId: string) => string | undefined) {
  const deliveries: Delivery[] = [];
  const rejected: string[] = [];
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {}
      const runId = typeof body.run_id === "string" ? body.run_id : null;
      if (!runId) {
        rejected.push(raw.slice(0, 200));
        res.writeHead(400).end("run_id missing");
        return;
      }
      const secret = secretOf(runId) ?? "";
      const verified = verifySignature(secret, raw, String(req.headers["service-signature"] ?? ""));
      deliveries.push({
        deliveryId: String(req.headers["service-delivery-id"] ?? ""),
        runId,
        event: String(body.event),
        status: String(body.status),
        ...(typeof body.reason === "string" ? { reason: body.reason } : {}),
        verified,
      });
      res.writeHead(verified ? 200 : 401).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/webhooks/runs`,
    deliveries,
    rejected,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
