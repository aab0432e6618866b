// Run callbacks (SPEC.md "Events" 2, "Authentication" 8; DECISIONS.md "Runs", "Cross-cutting rules"):
// POST {id: "dlv_<hex>", event, created_at, run_id, status, reason?, data: {run}} to the run's webhook_url, signed
// `Service-Signature: t=<unix>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.<body>")>` with the per-run
// secret, `Service-Delivery-Id: <id>` stable across attempts. At most three recorded attempts (the
// Inngest function run-callback sleeps between them); any 2xx counts as delivered.
//
// Targets must be https and must not resolve to loopback, private, link-local, CGNAT, multicast or
// metadata addresses, checked at create and again on every attempt, on the very address connected to
// (a custom DNS lookup), so DNS rebinding cannot redirect a callback inward. ALLOW_INSECURE_CALLBACKS=1
// (development) allows http and loopback only, never private, link-local or metadata addresses.
import { createHmac } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { hex } from "@cua/base/ids";
import type { Tx } from "@cua/db/client";
import type { Run } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import {
  checkOutboundUrl,
  isForbiddenAddress,
  isIpLiteral,
  type LookupAll,
  pinnedLookup,
} from "../policy/outbound-address.ts";
import { toRunRecord } from "./run-record.ts";
import { openRunSecret } from "./run-secrets.ts";

export const CALLBACK_MAX_ATTEMPTS = 3;
export const CALLBACK_EVENTS = [
  "run.awaiting_human",
  "run.succeeded",
  "run.failed",
  "run.cancelled",
  "run.timed_out",
] as const;

// --- address policy (packages/core/src/policy/outbound-address.ts) ------------------------------------

export { isForbiddenAddress, type LookupAll } from "../policy/outbound-address.ts";

/** 422 VALIDATION_ERROR at body.webhook_url unless the URL is an allowed callback target. */
export function checkCallbackUrl(raw: string, allowInsecure: boolean, lookup?: LookupAll): Promise<string> {
  return checkOutboundUrl(raw, { allowInsecure, field: "body.webhook_url", lookup });
}

// --- signing ------------------------------------------------------------------------------------------

/** `t=<unix seconds>,v1=<lowercase hex HMAC-SHA256 keyed with the secret over "<t>.<body>">`. */
export function signCallback(secret: string, body: string, t: number): string {
  const v1 = createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
  return `t=${t},v1=${v1}`;
}

// --- queueing (inside the transition's transaction) -------------------------------------------------

/** Queues a delivery for `event` unless the run has no webhook_url or one was queued under eventKey. */
export async function queueCallback(
  tx: Tx,
  run: Run,
  event: (typeof CALLBACK_EVENTS)[number],
  eventKey: string,
  now: Date,
): Promise<string | null> {
  if (!run.webhookUrl) return null;
  const id = `dlv_${hex(12)}`;
  const record = toRunRecord(run);
  const { callbacks: _omit, ...data } = record;
  // DECISIONS.md "Compatibility amendments": top-level run_id, status and (awaiting_human) reason besides data.run
  const body = JSON.stringify({
    id,
    event,
    created_at: now.toISOString(),
    run_id: run.id,
    status: run.status,
    ...(event === "run.awaiting_human" ? { reason: run.awaitingHumanReason } : {}),
    data: { run: data },
  });
  await tx.runCallbackDelivery.createMany({
    data: [{ id, runId: run.id, event, eventKey, body, status: "pending", createdAt: now }],
    skipDuplicates: true,
  });
  const row = await tx.runCallbackDelivery.findUnique({ where: { runId_eventKey: { runId: run.id, eventKey } } });
  return row?.id ?? null;
}

// --- delivery ------------------------------------------------------------------------------------------

export interface DeliveryOutcome {
  /** no further attempt is needed (delivered, failed for good, or nothing to do) */
  done: boolean;
  status: "pending" | "delivered" | "failed" | "missing";
  attempt: number;
  status_code: number | null;
}

interface PostResult {
  statusCode: number | null;
  error: string | null;
}

function post(
  url: string,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  allowInsecure: boolean,
): Promise<PostResult> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const lib = u.protocol === "https:" ? https : http;
    const lookup = pinnedLookup(allowInsecure); // the socket connects to the addresses checked here
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (isIpLiteral(host) && isForbiddenAddress(host, allowInsecure)) {
      return resolve({ statusCode: null, error: "the callback address is forbidden" });
    }
    const req = lib.request(
      u,
      {
        method: "POST",
        headers: { ...headers, "Content-Length": String(Buffer.byteLength(body)) },
        timeout: timeoutMs,
        lookup,
        agent: false,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ statusCode: res.statusCode ?? null, error: null }));
        res.on("error", () => resolve({ statusCode: res.statusCode ?? null, error: null }));
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (e) => resolve({ statusCode: null, error: e.message }));
    req.end(body);
  });
}

/**
 * Attempt number `attempt` (1..3) of one delivery. Idempotent: an attempt already recorded is not
 * made again (a retried step after a crash returns what was recorded).
 */
export async function deliverCallback(
  deps: CoreDeps & { runsConfig: { allowInsecureCallbacks: boolean; callbackTimeoutMs: number } },
  deliveryId: string,
  attempt: number,
): Promise<DeliveryOutcome> {
  const d = await deps.db.runCallbackDelivery.findUnique({ where: { id: deliveryId } });
  if (!d) return { done: true, status: "missing", attempt, status_code: null };
  if (d.status !== "pending" || d.attemptCount >= attempt) {
    return {
      done: d.status !== "pending",
      status: d.status as DeliveryOutcome["status"],
      attempt: d.attemptCount,
      status_code: null,
    };
  }
  const run = await deps.db.run.findUnique({ where: { id: d.runId } });
  if (!run?.webhookUrl || !run.webhookSecretSealed) {
    await deps.db.runCallbackDelivery.update({ where: { id: d.id }, data: { status: "failed" } });
    return { done: true, status: "failed", attempt, status_code: null };
  }
  const { entry, status, statusCode, ok } = await attemptSignedDelivery(deps, {
    runId: run.id,
    url: run.webhookUrl,
    secretSealed: run.webhookSecretSealed,
    deliveryId: d.id,
    body: d.body,
    attempt,
  });
  // record the attempt once (a concurrent duplicate attempt loses the conditional update)
  await deps.db.$executeRaw`
    UPDATE run_callback_deliveries
    SET attempts = attempts || ${JSON.stringify([entry])}::jsonb, attempt_count = ${attempt}, status = ${status},
        last_attempt_at = now(), delivered_at = ${ok ? new Date() : null}::timestamptz
    WHERE id = ${d.id} AND attempt_count = ${attempt - 1} AND status = 'pending'`;
  deps.logger.info("run callback attempt", {
    delivery_id: d.id,
    run_id: run.id,
    event: d.event,
    attempt,
    status_code: statusCode,
    ok,
  });
  return { done: status !== "pending", status, attempt, status_code: statusCode };
}

/**
 * One signed POST of a callback delivery (task-run and workflow-run callbacks): the run's sealed secret
 * opened, `Service-Signature` over `t.` + body, `Service-Delivery-Id`, the pinned-address POST; returns the
 * attempt's history entry and the delivery status it leads to (delivered, pending for a retry, or failed
 * after CALLBACK_MAX_ATTEMPTS). The caller records it with its conditional update.
 */
export async function attemptSignedDelivery(
  deps: CoreDeps & { runsConfig: { allowInsecureCallbacks: boolean; callbackTimeoutMs: number } },
  a: { runId: string; url: string; secretSealed: Uint8Array; deliveryId: string; body: string; attempt: number },
): Promise<{
  ok: boolean;
  statusCode: number | null;
  status: "delivered" | "pending" | "failed";
  entry: { attempt: number; at: string; status_code: number | null; error: string | null; duration_ms: number };
}> {
  const secret = openRunSecret(deps.kek, a.runId, "webhook", a.secretSealed);
  const t = Math.floor(deps.clock.now().getTime() / 1000);
  const started = performance.now();
  const r = await post(
    a.url,
    a.body,
    {
      "Content-Type": "application/json",
      "User-Agent": "svc-callbacks/1",
      "Service-Signature": signCallback(secret, a.body, t),
      "Service-Delivery-Id": a.deliveryId,
    },
    deps.runsConfig.callbackTimeoutMs,
    deps.runsConfig.allowInsecureCallbacks,
  );
  const ok = r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
  const entry = {
    attempt: a.attempt,
    at: new Date().toISOString(),
    status_code: r.statusCode,
    error: ok ? null : (r.error ?? `HTTP ${r.statusCode}`),
    duration_ms: Math.round(performance.now() - started),
  };
  const status = ok ? "delivered" : a.attempt >= CALLBACK_MAX_ATTEMPTS ? "failed" : "pending";
  return { ok, statusCode: r.statusCode, status, entry };
}
