// Reserve-and-replay idempotency (SPEC.md "Limits" Idempotency, "Errors" IDEMPOTENCY_*):
// the first request with a key inserts a `processing` record (a unique constraint decides the one
// winner among concurrent requests), executes, and stores its response; later requests with the same
// key and the same endpoint+body replay it; another body or endpoint is 422 IDEMPOTENCY_KEY_REUSED; a
// request while the first is processing is 409 IDEMPOTENCY_IN_FLIGHT until the pending window lapses.
import { createHash } from "node:crypto";
import { CoreError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import type { CoreDeps } from "../deps.ts";
import { open, seal } from "../llm-keys/envelope.ts";

// Stored responses can hold secrets shown once (a raw API key, a webhook secret): they are kept
// encrypted at rest with the key-encryption key, bound to their scope and key.
function sealBody(deps: CoreDeps, scopeKey: string, body: unknown): { sealed: string } {
  const s = seal(deps.kek, JSON.stringify(body ?? null), scopeKey);
  return { sealed: Buffer.concat([s.iv, s.tag, s.wrappedDek, s.ciphertext]).toString("base64") };
}

function openBody(deps: CoreDeps, scopeKey: string, stored: unknown): unknown {
  const b64 = (stored as { sealed?: string } | null)?.sealed;
  if (typeof b64 !== "string") return stored;
  const buf = Buffer.from(b64, "base64");
  const plain = open(
    deps.kek,
    {
      iv: buf.subarray(0, 12),
      tag: buf.subarray(12, 28),
      wrappedDek: buf.subarray(28, 88),
      ciphertext: buf.subarray(88),
    },
    scopeKey,
  );
  return JSON.parse(plain);
}

export const IDEMPOTENCY_KEY_RE = /^[A-Za-z0-9_\-:]{1,128}$/;
export const IDEMPOTENCY_RETENTION_SECONDS = 86_400;
export const DEFAULT_PENDING_WINDOW_SECONDS = 600;
export const MAX_PENDING_WINDOW_SECONDS = 21_600;

export function checkIdempotencyKey(key: string): void {
  if (!IDEMPOTENCY_KEY_RE.test(key)) throw new CoreError("INVALID_IDEMPOTENCY_KEY");
}

/** Canonical JSON (sorted keys) so that key order does not change the fingerprint. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(",")}}`;
}

export function fingerprint(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

export interface StoredResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

export type BeginResult = { kind: "execute"; recordId: string } | ({ kind: "replay" } & StoredResponse);

export interface BeginArgs {
  scope: string;
  key: string;
  accountId: string;
  mode: "live" | "test";
  endpoint: string;
  bodyHash: string;
  pendingWindowSeconds?: number;
}

export async function beginIdempotent(deps: CoreDeps, a: BeginArgs): Promise<BeginResult> {
  checkIdempotencyKey(a.key);
  const windowS = Math.min(a.pendingWindowSeconds ?? DEFAULT_PENDING_WINDOW_SECONDS, MAX_PENDING_WINDOW_SECONDS);
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = deps.clock.now();
    const lockedUntil = new Date(now.getTime() + windowS * 1000);
    const expiresAt = new Date(now.getTime() + IDEMPOTENCY_RETENTION_SECONDS * 1000);
    const id = `idm_${hex(12)}`;
    const inserted = await deps.db.$queryRaw<{ id: string }[]>`
      INSERT INTO idempotency_records (id, scope, key, account_id, mode, endpoint, body_hash, status, locked_until, created_at, expires_at)
      VALUES (${id}, ${a.scope}, ${a.key}, ${a.accountId}::uuid, ${a.mode}::"KeyMode", ${a.endpoint}, ${a.bodyHash}, 'processing', ${lockedUntil}, ${now}, ${expiresAt})
      ON CONFLICT (scope, key) DO NOTHING RETURNING id`;
    if (inserted[0]) return { kind: "execute", recordId: id };
    const rec = await deps.db.idempotencyRecord.findUnique({ where: { scope_key: { scope: a.scope, key: a.key } } });
    if (!rec) continue; // deleted between our insert and read: try again
    if (rec.expiresAt <= now) {
      await deps.db.idempotencyRecord.deleteMany({ where: { id: rec.id, expiresAt: { lte: now } } });
      continue;
    }
    if (rec.endpoint !== a.endpoint || rec.bodyHash !== a.bodyHash) {
      throw new CoreError(
        "IDEMPOTENCY_KEY_REUSED",
        rec.endpoint !== a.endpoint
          ? `This Idempotency-Key was used for ${rec.endpoint}.`
          : "This Idempotency-Key was used with a different request body.",
      );
    }
    if (rec.status === "completed") {
      return {
        kind: "replay",
        status: rec.responseStatus ?? 200,
        body: openBody(deps, `${rec.scope}|${rec.key}`, rec.responseBody),
        headers: (rec.responseHeaders as Record<string, string> | null) ?? {},
      };
    }
    if (rec.lockedUntil > now) {
      const retryAfter = Math.max(1, Math.min(5, Math.ceil((rec.lockedUntil.getTime() - now.getTime()) / 1000)));
      throw new CoreError("IDEMPOTENCY_IN_FLIGHT", undefined, { retry_after: retryAfter });
    }
    // The first holder outlived the pending window (it crashed): take the record over.
    const taken = await deps.db.idempotencyRecord.updateMany({
      where: { id: rec.id, status: "processing", lockedUntil: { lte: now } },
      data: { lockedUntil },
    });
    if (taken.count === 1) return { kind: "execute", recordId: rec.id };
  }
  throw new CoreError("IDEMPOTENCY_IN_FLIGHT", undefined, { retry_after: 1 });
}

export async function completeIdempotent(deps: CoreDeps, recordId: string, res: StoredResponse): Promise<void> {
  const rec = await deps.db.idempotencyRecord.findUnique({
    where: { id: recordId },
    select: { scope: true, key: true },
  });
  if (!rec) return;
  await deps.db.idempotencyRecord.update({
    where: { id: recordId },
    data: {
      status: "completed",
      responseStatus: res.status,
      responseBody: sealBody(deps, `${rec.scope}|${rec.key}`, res.body),
      responseHeaders: res.headers,
    },
  });
}

/** Forget a processing record so a retry with the same key executes (errors safe to retry with the same key). */
export async function abandonIdempotent(deps: CoreDeps, recordId: string): Promise<void> {
  await deps.db.idempotencyRecord.deleteMany({ where: { id: recordId, status: "processing" } });
}

export type LookupResult = { status: "processing" } | { status: "completed"; original_status: number; result: unknown };

export async function lookupIdempotent(deps: CoreDeps, scope: string, key: string): Promise<LookupResult> {
  checkIdempotencyKey(key);
  const rec = await deps.db.idempotencyRecord.findUnique({ where: { scope_key: { scope, key } } });
  if (!rec || rec.expiresAt <= deps.clock.now())
    throw new CoreError("NOT_FOUND", "No result is stored for this Idempotency-Key.");
  if (rec.status !== "completed") return { status: "processing" };
  return {
    status: "completed",
    original_status: rec.responseStatus ?? 200,
    result: openBody(deps, `${rec.scope}|${rec.key}`, rec.responseBody),
  };
}

export async function purgeExpiredIdempotency(deps: CoreDeps): Promise<number> {
  const r = await deps.db.idempotencyRecord.deleteMany({ where: { expiresAt: { lte: deps.clock.now() } } });
  return r.count;
}
