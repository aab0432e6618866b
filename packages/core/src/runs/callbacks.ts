// Run callbacks (SPEC.md "Events" 2, "Authentication" 8; DECISIONS.md "Runs", "Cross-cutting rules"):
// POST {id: "dlv_<hex>", event, created_at, data: {run}} to the run's webhook_url, signed
// `Service-Signature: t=<unix>,v1=<hex HMAC-SHA256(webhook_secret, "<t>.<body>")>` with the per-run
// secret, `Service-Delivery-Id: <id>` stable across attempts. At most three recorded attempts (the
// Inngest function run-callback sleeps between them); any 2xx counts as delivered.
//
// Targets must be https and must not resolve to loopback, private, link-local, CGNAT, multicast or
// metadata addresses, checked at create and again on every attempt, on the very address connected to
// (a custom DNS lookup), so DNS rebinding cannot redirect a callback inward. ALLOW_INSECURE_CALLBACKS=1
// (development) allows http and those addresses.
import { createHmac } from "node:crypto";
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Tx } from "@cua/db/client";
import type { Run } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import { validationError } from "../errors.ts";
import { hex } from "../ids.ts";
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

// --- address policy -------------------------------------------------------------------------------

const blocked = new net.BlockList();
for (const [net4, bits] of [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata (169.254.169.254)
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net4, bits, "ipv4");
}
for (const [net6, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7], // unique local (incl. fd00:ec2::254 metadata)
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
  ["2001:db8::", 32], // documentation
  ["64:ff9b::", 96], // NAT64 of any IPv4: checked as its IPv4 below
] as const) {
  blocked.addSubnet(net6, bits, "ipv6");
}

/** True when a callback may not connect to this IP address (without ALLOW_INSECURE_CALLBACKS). */
export function isForbiddenAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 0) return true;
  if (family === 6) {
    const lower = ip.toLowerCase();
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
    if (mapped) return isForbiddenAddress(mapped[1]!);
    return blocked.check(lower, "ipv6");
  }
  return blocked.check(ip, "ipv4");
}

export type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: LookupAll = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/** 422 VALIDATION_ERROR at body.webhook_url unless the URL is an allowed callback target. */
export async function checkCallbackUrl(
  raw: string,
  allowInsecure: boolean,
  lookup: LookupAll = systemLookup,
): Promise<string> {
  const field = "body.webhook_url";
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validationError(field, "must be an absolute https URL");
  }
  if (u.protocol !== "https:" && !(allowInsecure && u.protocol === "http:")) {
    throw validationError(field, "must use https");
  }
  if (u.username || u.password) throw validationError(field, "must not carry credentials");
  if (raw.length > 2048) throw validationError(field, "must be at most 2048 characters");
  if (allowInsecure) return u.toString();
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if (net.isIP(host)) {
    if (isForbiddenAddress(host))
      throw validationError(field, "must not point at a loopback, private, link-local or metadata address");
    return u.toString();
  }
  if (host === "localhost" || host.endsWith(".localhost")) {
    throw validationError(field, "must not point at a loopback, private, link-local or metadata address");
  }
  let addrs: { address: string }[];
  try {
    addrs = await lookup(host);
  } catch {
    throw validationError(field, `the host ${host} does not resolve`);
  }
  if (addrs.length === 0) throw validationError(field, `the host ${host} does not resolve`);
  if (addrs.some((a) => isForbiddenAddress(a.address))) {
    throw validationError(field, "must not resolve to a loopback, private, link-local or metadata address");
  }
  return u.toString();
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
  const body = JSON.stringify({ id, event, created_at: now.toISOString(), data: { run: data } });
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
    const lookup: net.LookupFunction = (hostname, options, cb) => {
      dns.lookup(hostname, { ...options, all: true, verbatim: true }, (err, addrs) => {
        if (err) return cb(err, "", 0);
        const list = addrs as dns.LookupAddress[];
        const ok = allowInsecure ? list : list.filter((a) => !isForbiddenAddress(a.address));
        if (ok.length === 0) {
          return cb(
            Object.assign(new Error("the callback host resolves to a forbidden address"), { code: "EFORBIDDEN" }),
            "",
            0,
          );
        }
        if ((options as { all?: boolean }).all)
          return (cb as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, ok);
        cb(null, ok[0]!.address, ok[0]!.family);
      });
    };
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (net.isIP(host) && !allowInsecure && isForbiddenAddress(host)) {
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
  const secret = openRunSecret(deps.kek, run.id, "webhook", run.webhookSecretSealed);
  const t = Math.floor(deps.clock.now().getTime() / 1000);
  const started = performance.now();
  const r = await post(
    run.webhookUrl,
    d.body,
    {
      "Content-Type": "application/json",
      "User-Agent": "svc-callbacks/1",
      "Service-Signature": signCallback(secret, d.body, t),
      "Service-Delivery-Id": d.id,
    },
    deps.runsConfig.callbackTimeoutMs,
    deps.runsConfig.allowInsecureCallbacks,
  );
  const ok = r.statusCode !== null && r.statusCode >= 200 && r.statusCode < 300;
  const entry = {
    attempt,
    at: new Date().toISOString(),
    status_code: r.statusCode,
    error: ok ? null : (r.error ?? `HTTP ${r.statusCode}`),
    duration_ms: Math.round(performance.now() - started),
  };
  const status = ok ? "delivered" : attempt >= CALLBACK_MAX_ATTEMPTS ? "failed" : "pending";
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
    status_code: r.statusCode,
    ok,
  });
  return { done: status !== "pending", status, attempt, status_code: r.statusCode };
}
