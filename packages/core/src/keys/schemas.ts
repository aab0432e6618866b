// Request and response shapes of the /v1/keys operations (SPEC "Keys").

import { z } from "zod";
import { NullableTimestamp, Timestamp } from "../operations/common-schemas.ts";
import { ALL_SCOPES } from "./scopes.ts";

export const ScopeName = z.string().describe(`one of: ${ALL_SCOPES.join(", ")}`);

export const CreateKeyInput = z.strictObject({
  name: z.string().max(200).optional().describe("a label for the key"),
  scopes: z.array(ScopeName).max(ALL_SCOPES.length).optional().describe("scopes to grant; default set when omitted"),
  expires_at: z.string().optional().describe("ISO 8601 expiry in the future"),
});

export const KeyItem = z.object({
  id: z.string().describe("key id"),
  name: z.string().describe("label"),
  prefix: z.string().describe("first 16 characters of the raw key"),
  key_kind: z.enum(["live", "test", "legacy"]).describe("kind of key"),
  mode: z.enum(["live", "test"]).describe("mode the key acts in"),
  scopes: z.array(z.string()).describe("granted scopes"),
  tier: z.string().describe("the account's tier"),
  created_at: Timestamp,
  last_used_at: NullableTimestamp.describe("last use, minute resolution"),
  expires_at: NullableTimestamp.describe("expiry, or null"),
});

export const CreatedKey = KeyItem.extend({ key: z.string().describe("the raw key; returned only here, once") });

export const DeleteKeyInput = z.object({ key_id: z.string().describe("1 to 128 characters of [A-Za-z0-9_-]") });
export const DeletedKey = z.object({
  id: z.string().describe("key id"),
  revoked: z.literal(true).describe("always true"),
  revoked_at: Timestamp,
});
