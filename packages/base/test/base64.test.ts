// The screenshot's base64 check (images/screenshot.ts, issue 16): decoding once and counting bytes must refuse
// exactly what decoding and encoding back refused (the reference: a strict, canonical, padded string is the
// one that encodes back from its own bytes), on valid strings and on every kind of damage.
import { describe, expect, it } from "vitest";
import { isStrictBase64 } from "../src/images/screenshot.ts";

const reference = (s: string) => Buffer.from(s, "base64").toString("base64") === s;
const check = (s: string) => isStrictBase64(s, Buffer.from(s, "base64"));

describe("isStrictBase64", () => {
  it("agrees with decoding and encoding back on valid and damaged strings", () => {
    const damage = ["-", "_", " ", "\n", "=", "==", "*", "é", "\u0000", "A", "/", "+"];
    let seed = 20261125;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      const bytes = Buffer.from(Array.from({ length: rnd(40) }, () => rnd(256)));
      let s = bytes.toString("base64");
      for (let k = rnd(3); k > 0; k--) {
        const at = rnd(s.length + 1);
        const op = rnd(3);
        const d = damage[rnd(damage.length)]!;
        if (op === 0) s = s.slice(0, at) + d + s.slice(at);
        else if (op === 1) s = s.slice(0, at) + d + s.slice(at + d.length);
        else s = s.slice(0, at) + s.slice(at + 1);
      }
      expect(check(s), JSON.stringify(s)).toBe(reference(s));
      if (!reference(s)) refused++;
    }
    expect(refused).toBeGreaterThan(5000);
    for (const s of ["QUJD", "QUI=", "QQ==", "QUJ=", "QR==", "Q===", "QUJD====", "QUJ=RA==", "QU-D", "QU_D", "QUJDQQ"])
      expect(check(s), s).toBe(reference(s));
  });
});
