// Where the service may send a request on a caller's behalf (run callbacks today; workflow and schedule
// targets use the same check). DECISIONS.md "Cross-cutting rules": callback and webhook target URLs must be
// https and must not resolve to loopback, private, link-local or metadata addresses; the operator may allow
// http and loopback (only) for development with ALLOW_INSECURE_CALLBACKS=1.
//
// Every address is normalised before deciding: IPv4 written in decimal, octal or hex (inet_aton forms), and
// IPv6 forms that carry an IPv4 address: mapped (::ffff:0:0/96), translated (::ffff:0:0:0/96), compatible
// (::/96), 6to4 (2002::/16), Teredo (2001::/32: the client address is the last 32 bits XOR 0xffffffff, the
// server address bits 32-63), NAT64 (64:ff9b::/96; the local-use 64:ff9b:1::/48 is refused as a whole).
// Names are checked on every address they resolve to, at validation and again at delivery, where the socket
// connects only to the addresses just checked (pinnedLookup), so DNS rebinding cannot turn a request inward.
import dns from "node:dns";
import net from "node:net";
import { validationError } from "@cua/base/errors";

export type AddressKind = "public" | "loopback" | "private" | "link_local" | "metadata" | "reserved";
/** How an IPv4 address was carried inside an IPv6 one. */
export type Embedding = "mapped" | "translated" | "compatible" | "6to4" | "teredo" | "nat64";

export interface AddressVerdict {
  kind: AddressKind;
  /** the IPv4 address decided on, when the input carried one inside IPv6 */
  ipv4?: string;
  via?: Embedding;
}

// --- parsing --------------------------------------------------------------------------------------

/** One inet_aton part: decimal, 0-prefixed octal or 0x-prefixed hex. */
function atonPart(s: string): number | null {
  if (/^0x[0-9a-f]*$/i.test(s)) return s.length === 2 ? 0 : Number.parseInt(s.slice(2), 16);
  if (/^0[0-7]*$/.test(s)) return Number.parseInt(s, 8);
  if (/^[1-9][0-9]*$/.test(s)) return Number(s);
  return null;
}

/** IPv4 in any inet_aton form (a.b.c.d, a.b.c, a.b, a; each part decimal, octal or hex) -> 4 bytes. */
export function parseIpv4(text: string): Uint8Array | null {
  const s = text.endsWith(".") ? text.slice(0, -1) : text;
  const parts = s.split(".");
  if (parts.length < 1 || parts.length > 4) return null;
  const nums = parts.map(atonPart);
  if (nums.some((n) => n === null || !Number.isFinite(n))) return null;
  const n = nums as number[];
  const last = n[n.length - 1]!;
  if (n.slice(0, -1).some((x) => x > 255)) return null;
  if (last >= 256 ** (5 - n.length)) return null;
  let value = last;
  for (let i = 0; i < n.length - 1; i++) value += n[i]! * 256 ** (3 - i);
  return new Uint8Array([(value >>> 24) & 255, (value >>> 16) & 255, (value >>> 8) & 255, value & 255]);
}

/** IPv6 text (optional brackets, optional %zone, optional trailing dotted IPv4) -> 16 bytes. */
export function parseIpv6(text: string): Uint8Array | null {
  let s = text.replace(/^\[|\]$/g, "");
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (net.isIPv6(s) === false) return null;
  const lastColon = s.lastIndexOf(":");
  const dotted = s.slice(lastColon + 1);
  if (dotted.includes(".")) {
    if (!net.isIPv4(dotted)) return null;
    const q = dotted.split(".").map(Number);
    s = `${s.slice(0, lastColon + 1)}${((q[0]! << 8) | q[1]!).toString(16)}:${((q[2]! << 8) | q[3]!).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const part = (x: string | undefined) => (x ? x.split(":") : []);
  const hs = part(halves[0]);
  const rs = part(halves[1]);
  const fill = halves.length === 2 ? 8 - hs.length - rs.length : 0;
  if (fill < 0) return null;
  const all = [...hs, ...new Array<string>(fill).fill("0"), ...rs].map((h) => Number.parseInt(h, 16));
  if (all.length !== 8 || all.some((w) => !(w >= 0 && w <= 0xffff))) return null;
  const out = new Uint8Array(16);
  all.forEach((w, i) => {
    out[i * 2] = (w >> 8) & 255;
    out[i * 2 + 1] = w & 255;
  });
  return out;
}

// --- classification ---------------------------------------------------------------------------------

const v4 = (b: ArrayLike<number>) => `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
const inV4 = (b: Uint8Array, net4: [number, number, number, number], bits: number) => {
  const a = ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
  const n = ((net4[0] << 24) | (net4[1] << 16) | (net4[2] << 8) | net4[3]) >>> 0;
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (a & mask) === (n & mask);
};

function classifyV4(b: Uint8Array): AddressKind {
  if (inV4(b, [127, 0, 0, 0], 8)) return "loopback";
  if (inV4(b, [169, 254, 169, 254], 32) || inV4(b, [100, 100, 100, 200], 32)) return "metadata";
  if (inV4(b, [169, 254, 0, 0], 16)) return "link_local";
  for (const [n, bits] of [
    [[10, 0, 0, 0], 8],
    [[172, 16, 0, 0], 12],
    [[192, 168, 0, 0], 16],
    [[100, 64, 0, 0], 10], // CGNAT
  ] as const) {
    if (inV4(b, n as unknown as [number, number, number, number], bits)) return "private";
  }
  for (const [n, bits] of [
    [[0, 0, 0, 0], 8], // "this" network (0.0.0.0 reaches the host itself)
    [[192, 0, 0, 0], 24], // IETF protocol assignments
    [[192, 0, 2, 0], 24], // documentation
    [[192, 88, 99, 0], 24], // 6to4 relay anycast
    [[198, 18, 0, 0], 15], // benchmarking
    [[198, 51, 100, 0], 24],
    [[203, 0, 113, 0], 24],
    [[224, 0, 0, 0], 4], // multicast
    [[240, 0, 0, 0], 4], // reserved, broadcast
  ] as const) {
    if (inV4(b, n as unknown as [number, number, number, number], bits)) return "reserved";
  }
  return "public";
}

const worse = (a: AddressKind, b: AddressKind): AddressKind => {
  const rank: AddressKind[] = ["public", "loopback", "reserved", "private", "link_local", "metadata"];
  return rank.indexOf(a) >= rank.indexOf(b) ? a : b;
};

function classifyV6(b: Uint8Array): AddressVerdict {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const word = (i: number) => (b[i * 2]! << 8) | b[i * 2 + 1]!;
  const last4 = b.slice(12, 16);
  const embedded = (via: Embedding, addr: Uint8Array): AddressVerdict => ({
    kind: classifyV4(addr),
    ipv4: v4(addr),
    via,
  });
  if (zero(0, 16)) return { kind: "reserved" }; // ::
  if (zero(0, 15) && b[15] === 1) return { kind: "loopback" }; // ::1
  if (zero(0, 10) && word(5) === 0xffff) return embedded("mapped", last4); // ::ffff:a.b.c.d
  if (zero(0, 8) && word(4) === 0xffff && word(5) === 0) return embedded("translated", last4); // ::ffff:0:a.b.c.d
  if (zero(0, 12)) return embedded("compatible", last4); // ::a.b.c.d (deprecated)
  if (word(0) === 0x64 && word(1) === 0xff9b) {
    if (zero(4, 12)) return embedded("nat64", last4); // 64:ff9b::/96
    if (word(2) === 1) return { kind: "private", via: "nat64" }; // 64:ff9b:1::/48, local use (RFC 8215)
    return { kind: "reserved" };
  }
  if (word(0) === 0x2002) return embedded("6to4", b.slice(2, 6));
  if (word(0) === 0x2001 && word(1) === 0) {
    const client = last4.map((x) => x ^ 0xff);
    const c = embedded("teredo", client);
    return { ...c, kind: worse(c.kind, classifyV4(b.slice(4, 8))) };
  }
  if (word(0) === 0xfd00 && word(1) === 0x0ec2 && zero(4, 14) && word(7) === 0x254) return { kind: "metadata" };
  if ((b[0]! & 0xfe) === 0xfc) return { kind: "private" }; // fc00::/7 unique local
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return { kind: "link_local" }; // fe80::/10
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return { kind: "private" }; // fec0::/10 site-local
  if (b[0] === 0xff) return { kind: "reserved" }; // multicast
  if (word(0) === 0x2001 && word(1) === 0x0db8) return { kind: "reserved" }; // documentation
  if (word(0) === 0x0100 && zero(2, 8)) return { kind: "reserved" }; // discard-only 100::/64
  if (word(0) === 0x2001 && (word(1) & 0xfff0) === 0x0010) return { kind: "reserved" }; // ORCHID
  if (word(0) === 0x2001 && (word(1) & 0xfff0) === 0x0020) return { kind: "reserved" }; // ORCHIDv2
  return { kind: "public" };
}

/** What an address is, after normalising every IPv4 spelling and every IPv6 form that carries an IPv4. */
export function classifyAddress(ip: string): AddressVerdict {
  const text = ip.replace(/^\[|\]$/g, "");
  if (text.includes(":")) {
    const b = parseIpv6(text);
    return b ? classifyV6(b) : { kind: "reserved" };
  }
  const b = parseIpv4(text);
  return b ? { kind: classifyV4(b), ipv4: v4(b) } : { kind: "reserved" };
}

/** True when a literal in `host` is an IP address in any spelling (not a name to resolve). */
export function isIpLiteral(host: string): boolean {
  const text = host.replace(/^\[|\]$/g, "");
  return text.includes(":") ? parseIpv6(text) !== null : parseIpv4(text) !== null;
}

/**
 * True when the service may not connect to `ip`. With `allowLoopback` (ALLOW_INSECURE_CALLBACKS) the
 * loopback addresses 127.0.0.0/8, ::1 and their IPv4-mapped form are allowed; loopback carried by a tunnel or
 * translation form (compatible, 6to4, Teredo, NAT64), private, link-local, metadata and reserved never are.
 */
export function isForbiddenAddress(ip: string, allowLoopback = false): boolean {
  const v = classifyAddress(ip);
  if (v.kind === "public") return false;
  if (v.kind === "loopback" && allowLoopback && (v.via === undefined || v.via === "mapped")) return false;
  return true;
}

// --- URLs ------------------------------------------------------------------------------------------

export type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;

export const systemLookup: LookupAll = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

export interface OutboundPolicy {
  /** ALLOW_INSECURE_CALLBACKS: http and loopback targets (development only) */
  allowInsecure: boolean;
  /** the field named in a refusal, e.g. body.webhook_url */
  field: string;
  lookup?: LookupAll;
}

const INWARD = "must not point at a loopback, private, link-local or metadata address";

/** 422 VALIDATION_ERROR at `field` unless `raw` is an allowed target; returns the normalised URL. */
export async function checkOutboundUrl(raw: string, policy: OutboundPolicy): Promise<string> {
  const { field, allowInsecure } = policy;
  if (raw.length > 2048) throw validationError(field, "must be at most 2048 characters");
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validationError(field, "must be an absolute https URL");
  }
  if (u.protocol !== "https:" && !(allowInsecure && u.protocol === "http:")) {
    throw validationError(field, allowInsecure ? "must use https or http" : "must use https");
  }
  if (u.username || u.password) throw validationError(field, "must not carry credentials");
  const host = u.hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (!host) throw validationError(field, "must name a host");
  if (isIpLiteral(host)) {
    if (isForbiddenAddress(host, allowInsecure)) throw validationError(field, INWARD);
    return u.toString();
  }
  if (!allowInsecure && (host === "localhost" || host.endsWith(".localhost"))) throw validationError(field, INWARD);
  let addrs: { address: string }[];
  try {
    addrs = await (policy.lookup ?? systemLookup)(host);
  } catch {
    throw validationError(field, `the host ${host} does not resolve`);
  }
  if (addrs.length === 0) throw validationError(field, `the host ${host} does not resolve`);
  if (addrs.some((a) => isForbiddenAddress(a.address, allowInsecure))) {
    throw validationError(field, "must not resolve to a loopback, private, link-local or metadata address");
  }
  return u.toString();
}

/**
 * A socket `lookup` that resolves the name, refuses it when ANY of its addresses is forbidden, and hands the
 * socket exactly the addresses it checked (so a second, rebinding answer is never used).
 */
export function pinnedLookup(allowInsecure: boolean, resolve: typeof dns.lookup = dns.lookup): net.LookupFunction {
  return (hostname, options, cb) => {
    resolve(hostname, { ...options, all: true, verbatim: true }, (err, addrs) => {
      if (err) return cb(err, "", 0);
      const list = addrs as unknown as dns.LookupAddress[];
      if (list.length === 0 || list.some((a) => isForbiddenAddress(a.address, allowInsecure))) {
        const e = Object.assign(new Error(`${hostname} resolves to a forbidden address`), { code: "EFORBIDDEN" });
        return cb(e, "", 0);
      }
      if ((options as { all?: boolean }).all)
        return (cb as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      cb(null, list[0]!.address, list[0]!.family);
    });
  };
}
