// Schemas shared by many operations.
import { z } from "zod";

export const Timestamp = z.string().describe("ISO 8601 timestamp");
export const NullableTimestamp = Timestamp.nullable();
export const Mode = z.enum(["live", "test"]).describe("live or test mode");
