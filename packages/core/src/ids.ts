import { randomBytes, randomUUID } from "node:crypto";

export const hex = (bytes: number): string => randomBytes(bytes).toString("hex");
export const newUuid = (): string => randomUUID();
export const newRequestId = (): string => `req_${hex(12)}`;
