// Machine ids (SPEC.md "Resources": a UUID in live mode, mch_test_<hex> in test mode). A well-formed id
// of the other mode is simply unknown (404), never a match: test ids never name live machines.
import { randomBytes, randomUUID } from "node:crypto";
import { CoreError } from "@cua/base/errors";
import type { KeyMode } from "../keys/scopes.ts";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TEST_ID_RE = /^mch_test_[0-9a-f]{1,64}$/;

export function newMachineId(mode: KeyMode): string {
  return mode === "test" ? `mch_test_${randomBytes(12).toString("hex")}` : randomUUID();
}

export function machineIdMode(id: string): KeyMode | null {
  if (UUID_RE.test(id)) return "live";
  if (TEST_ID_RE.test(id)) return "test";
  return null;
}

/** 400 INVALID_MACHINE_ID for a malformed id; returns the canonical (lowercase UUID) form. */
export function parseMachineId(id: unknown): { id: string; mode: KeyMode } {
  if (typeof id !== "string") throw new CoreError("INVALID_MACHINE_ID");
  const mode = machineIdMode(id);
  if (!mode) {
    throw new CoreError("INVALID_MACHINE_ID", `"${id.slice(0, 80)}" is not a UUID or mch_test_<hex>.`);
  }
  return { id: mode === "live" ? id.toLowerCase() : id, mode };
}

export const newCommandId = (): string => `cmd_${randomBytes(12).toString("hex")}`;
export const newFrameId = (): string => `frm_${randomBytes(12).toString("hex")}`;
