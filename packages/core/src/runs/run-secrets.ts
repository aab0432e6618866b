// Secrets a run keeps at rest: its webhook_secret (to sign callbacks) and, with BYOK, the provider-key
// snapshot taken at create (scrubbed at the terminal transition). Both are AES-256-GCM envelope-encrypted
// with the KEK (llm-keys/envelope.ts), bound to the run id and purpose as associated data, and stored as
// one byte string: iv(12) | tag(16) | wrapped data key(60) | ciphertext.
import { randomBytes } from "node:crypto";
import { open, seal } from "../llm-keys/envelope.ts";

const WRAPPED_DEK_BYTES = 12 + 16 + 32;

export type RunSecretPurpose = "webhook" | "llm";

const context = (runId: string, purpose: RunSecretPurpose) => `run:${runId}:${purpose}`;

export function sealRunSecret(
  kek: Buffer,
  runId: string,
  purpose: RunSecretPurpose,
  secret: string,
): Uint8Array<ArrayBuffer> {
  const s = seal(kek, secret, context(runId, purpose));
  return new Uint8Array(Buffer.concat([s.iv, s.tag, s.wrappedDek, s.ciphertext]));
}

export function openRunSecret(kek: Buffer, runId: string, purpose: RunSecretPurpose, sealed: Uint8Array): string {
  const b = Buffer.from(sealed);
  return open(
    kek,
    {
      iv: b.subarray(0, 12),
      tag: b.subarray(12, 28),
      wrappedDek: b.subarray(28, 28 + WRAPPED_DEK_BYTES),
      ciphertext: b.subarray(28 + WRAPPED_DEK_BYTES),
    },
    context(runId, purpose),
  );
}

/** whsec_<64 lowercase hex> (SPEC "Run"). */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("hex")}`;
