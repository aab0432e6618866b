// The Idempotency-Key a call executes under, visible to the billing of that call without threading it
// through every use case: the API's idempotent() wrapper runs the operation inside `withIdempotencyRef`,
// and withCharge tags its hold with the reference so that a retry with the same key can find it.
import { AsyncLocalStorage } from "node:async_hooks";

const store = new AsyncLocalStorage<string>();

/** `<scope>|<key>`, the same pair that identifies the idempotency record. */
export const idempotencyRefOf = (scope: string, key: string): string => `${scope}|${key}`;

export function withIdempotencyRef<T>(ref: string, fn: () => Promise<T>): Promise<T> {
  return store.run(ref, fn);
}

export function currentIdempotencyRef(): string | undefined {
  return store.getStore();
}
