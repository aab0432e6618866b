import { randomBytes, randomFillSync, randomUUID } from "node:crypto";

export const hex = (bytes: number): string => randomBytes(bytes).toString("hex");
export const newUuid = (): string => randomUUID();

// Request ids come from a pool of random bytes refilled 4 KiB at a time (what node's randomUUID does):
// one CSPRNG call per 341 requests instead of one per request. Ids are not secrets.
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;
export const newRequestId = (): string => {
  if (poolAt + 12 > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  poolAt += 12;
  return `req_${POOL.toString("hex", poolAt - 12, poolAt)}`;
};
