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

/** The principal for a machine id: its form says its mode (a UUID is live, mch_test_<hex> is test). A malformed
 * id gets the live principal, and the machine use case answers 400 INVALID_MACHINE_ID. */
export function operatorPrincipalFor(op: Operator, machineId: string): Principal {
  return operatorPrincipal(op, /^mch_test_/.test(machineId) ? "test" : "live");
}

/** The principal for a run id: run_test_<hex> runs are test mode, every other id live. */
export function operatorPrincipalForRun(op: Operator, runId: string): Principal {
  return operatorPrincipal(op, /^run_test_/.test(runId) ? "test" : "live");
}
