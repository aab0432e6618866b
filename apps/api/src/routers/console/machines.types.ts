// Input schemas of the console's machine procedures. The machine records and results reuse core's schemas.
import { z } from "zod";

export const ConsoleMachineId = z.object({
  id: z.string().max(128).describe("machine id (UUID live, mch_test_<hex> test)"),
});

export const ConsoleMachineList = z.strictObject({
  status: z.string().max(32).optional().describe("only machines in this status; default: all but terminated"),
});

export const ConsoleProvision = z.strictObject({
  mode: z.enum(["live", "test"]).describe("live: a real desktop billed per minute; test: a mock machine"),
  display_name: z.string().max(200).optional().describe("human name of the machine"),
  ttl_minutes: z.number().int().min(5).max(10080).optional().describe("destroy after this many minutes"),
});

export const ConsoleLifecycle = ConsoleMachineId.extend({
  op: z.enum(["start", "stop", "restart"]).describe("lifecycle operation"),
});

export const ConsoleSnapshot = ConsoleMachineId.extend({
  name: z.string().min(1).max(200).optional().describe("snapshot name"),
});

export const ConsoleAction = ConsoleMachineId.extend({
  command: z.string().max(64).describe("allowlisted command name"),
  parameters: z.record(z.string(), z.unknown()).default({}).describe("command parameters"),
});

export const ConsoleTerminal = ConsoleMachineId.extend({
  command: z.string().min(1).max(100_000).describe("bash command line"),
  session_id: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .optional()
    .describe("reuse a persistent shell"),
});
