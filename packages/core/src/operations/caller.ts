// The caller of an operation: ONE type with two faces. An API key (its account, mode, scopes, key id and
// the account's tier) or a console operator (the account, the mode the operator chose, every scope, and
// the operator's id and email). Use cases take it as the `Principal` they already know and never ask which
// face it is, only what it may do (`scopes`, `mode`). `operator` is set only on the console face and only
// operator-only operations (console: "operator-only") read it.
import { CoreError } from "@cua/base/errors";
import type { Principal } from "../keys/authenticate-key.ts";
import { ALL_SCOPES, type KeyMode, type Scope } from "../keys/scopes.ts";

export interface Caller extends Principal {
  /** the signed-in console operator behind the call (console face only) */
  operator?: { userId: string; email: string };
}

/** The API-key face: the authenticated key's principal. */
export function apiKeyCaller(p: Principal): Caller {
  return p;
}

/** The console face: the operator's account in the chosen mode, with every scope. */
export function operatorCaller(
  op: { userId: string; email: string; accountId: string; tier: Principal["tier"] },
  mode: KeyMode,
): Caller {
  return {
    keyId: `console:${op.userId}`,
    accountId: op.accountId,
    mode,
    scopes: [...ALL_SCOPES],
    tier: op.tier,
    keyKind: "console",
    operator: { userId: op.userId, email: op.email },
  };
}

/** 403 INSUFFICIENT_SCOPE unless the caller holds every scope (scopes that depend on the request body). */
export function requireScopes(caller: Caller, scopes: (Scope | undefined)[]): void {
  for (const scope of scopes) {
    if (scope && !caller.scopes.includes(scope)) {
      throw new CoreError("INSUFFICIENT_SCOPE", `This request requires the "${scope}" scope.`, {
        required_scope: scope,
        current_scopes: caller.scopes,
      });
    }
  }
}

/** An operator-only operation reads the operator; a caller without one is refused (never reached via /v1). */
export function requireOperator(caller: Caller): { userId: string; email: string } {
  if (!caller.operator) throw new CoreError("UNAUTHENTICATED", "This operation is for the console's operator.");
  return caller.operator;
}
