// SPEC.md "Authentication" 3 lists the scopes; DECISIONS.md "Accounts, keys, wallet" the defaults.
export const ALL_SCOPES = [
  "predict",
  "ground",
  "parse",
  "session",
  "keys",
  "usage",
  "machines:read",
  "machines:write",
  "actions:exec",
  "terminal:exec",
  "files:read",
  "files:write",
  "browser:execute",
  "snapshots:write",
  "connection:read",
  "schedules:read",
  "schedules:write",
  "triggers:write",
  "runs:read",
  "runs:write",
  "workflows:read",
  "workflows:write",
  "llm_keys",
] as const;

export type Scope = (typeof ALL_SCOPES)[number];
export type KeyMode = "live" | "test";

export function isScope(s: string): s is Scope {
  return (ALL_SCOPES as readonly string[]).includes(s);
}

const DEFAULTS: Scope[] = [
  "predict",
  "session",
  "ground",
  "parse",
  "usage",
  "machines:read",
  "actions:exec",
  "files:read",
  "runs:read",
  "runs:write",
  "workflows:read",
  "workflows:write",
  "schedules:read",
];

/** Scopes of a new key when the request names none: never `keys`; llm_keys on live keys only. */
export function defaultScopes(mode: KeyMode): Scope[] {
  return mode === "live" ? [...DEFAULTS, "llm_keys"] : [...DEFAULTS];
}
