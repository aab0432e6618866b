import { z } from "zod";

export const Timestamp = z.string().describe("ISO 8601 timestamp");
export const NullableTimestamp = Timestamp.nullable();
