// Device tokens of external machines: `dtk_<64 hex>`, stored as SHA-256 only, looked up by hash and
// compared in constant time. A token is valid for its one machine's driver routes and never as an
// owner API key (API keys have their own prefix and table).
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { CoreError } from "@cua/base/errors";

const TOKEN_RE = /^dtk_[0-9a-f]{64}$/;

export function newDeviceToken(): string {
  return `dtk_${randomBytes(32).toString("hex")}`;
}

export function isDeviceTokenForm(raw: string): boolean {
  return TOKEN_RE.test(raw);
}

export function hashDeviceToken(raw: string): string {
  return createHash("sha256").update(raw).digest("hex");
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Reads `Authorization: Bearer dtk_...`; anything else is 401 INVALID_DEVICE_TOKEN. */
export function readDeviceToken(authorization: string | undefined): string {
  const m = authorization ? /^Bearer[ ]+(\S+)\s*$/i.exec(authorization) : null;
  if (!m || !isDeviceTokenForm(m[1]!)) {
    throw new CoreError(
      "INVALID_DEVICE_TOKEN",
      "Driver routes take `Authorization: Bearer dtk_<64 hex>` (the machine's device token).",
    );
  }
  return m[1]!;
}
