// Request signing as the JS SDK 4.24 verifies it: X-Inngest-Signature: t=<unix seconds>&s=<hex>,
// where s = HMAC-SHA256 over (RFC 8785 canonical JSON of the body) + t, keyed with the signing key
// text after its "signkey-<env>-" prefix. We send the canonical text as the body, so the bytes we
// sign are the bytes on the wire.
import { createHmac, randomBytes } from "node:crypto";

/** RFC 8785 (JCS) canonical JSON for JSON-compatible values. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("canonicalJson: non-finite number");
    return JSON.stringify(value);
  }
  if (Array.isArray(value))
    return `[${value.map((v) => (v === undefined || typeof v === "function" ? "null" : canonicalJson(v))).join(",")}]`;
  if (typeof value === "object") {
    const maybeJson = value as { toJSON?: () => unknown };
    if (typeof maybeJson.toJSON === "function") return canonicalJson(maybeJson.toJSON());
    // JCS orders keys by UTF-16 code units, which is what the default sort compares.
    const keys = Object.keys(value)
      .filter((k) => {
        const v = (value as Record<string, unknown>)[k];
        return v !== undefined && typeof v !== "function";
      })
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  throw new TypeError(`canonicalJson: unsupported value of type ${typeof value}`);
}

export function signBody(canonicalBody: string, signingKey: string, nowSeconds: number): string {
  const key = signingKey.replace(/^signkey-[\w]+-/, "");
  const s = createHmac("sha256", key)
    .update(canonicalBody + String(nowSeconds))
    .digest("hex");
  return `t=${nowSeconds}&s=${s}`;
}

/** A fresh per-process signing key for the in-process handler (never leaves the process). */
export function randomSigningKey(): string {
  return `signkey-embedded-${randomBytes(32).toString("hex")}`;
}
