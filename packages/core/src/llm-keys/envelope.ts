// AES-256-GCM envelope encryption: a fresh data key per row encrypts the secret; the data key is
// wrapped with the key-encryption key (KEK) from the environment. Only ciphertext reaches the database.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

export interface Sealed {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
  wrappedDek: Buffer; // iv(12) | tag(16) | encrypted dek(32)
}

function gcmEncrypt(key: Buffer, plain: Buffer, aad: Buffer) {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, iv);
  c.setAAD(aad);
  const ciphertext = Buffer.concat([c.update(plain), c.final()]);
  return { iv, tag: c.getAuthTag(), ciphertext };
}

function gcmDecrypt(key: Buffer, iv: Buffer, tag: Buffer, ciphertext: Buffer, aad: Buffer): Buffer {
  const d = createDecipheriv("aes-256-gcm", key, iv);
  d.setAAD(aad);
  d.setAuthTag(tag);
  return Buffer.concat([d.update(ciphertext), d.final()]);
}

/** `context` (e.g. account id + provider) is bound as associated data: a row moved elsewhere won't decrypt. */
export function seal(kek: Buffer, secret: string, context: string): Sealed {
  if (kek.length !== 32) throw new Error("KEK must be 32 bytes");
  const aad = Buffer.from(context);
  const dek = randomBytes(32);
  const body = gcmEncrypt(dek, Buffer.from(secret, "utf8"), aad);
  const w = gcmEncrypt(kek, dek, aad);
  dek.fill(0);
  return {
    ciphertext: body.ciphertext,
    iv: body.iv,
    tag: body.tag,
    wrappedDek: Buffer.concat([w.iv, w.tag, w.ciphertext]),
  };
}

export function open(kek: Buffer, s: Sealed, context: string): string {
  const aad = Buffer.from(context);
  const dek = gcmDecrypt(
    kek,
    s.wrappedDek.subarray(0, 12),
    s.wrappedDek.subarray(12, 28),
    s.wrappedDek.subarray(28),
    aad,
  );
  try {
    return gcmDecrypt(dek, s.iv, s.tag, s.ciphertext, aad).toString("utf8");
  } finally {
    dek.fill(0);
  }
}
