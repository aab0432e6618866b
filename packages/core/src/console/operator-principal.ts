// The console acts for its account with every scope, in the mode the operator picks. This builds the
// principal that the API-key use cases (keys, provider keys, usage) take, so the console reuses them.
import type { Principal } from "../keys/authenticate-key.ts";
import { ALL_SCOPES, type KeyMode } from "../keys/scopes.ts";
import type { Operator } from "./session.ts";

export function operatorPrincipal(op: Operator, mode: KeyMode): Principal {
  return {
    keyId: `console:${op.userId}`,
    accountId: op.accountId,
    mode,
    scopes: [...ALL_SCOPES],
    tier: op.tier,
    keyKind: "console",
  };
}
