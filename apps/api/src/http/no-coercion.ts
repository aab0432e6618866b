// No type coercion in request bodies (issue 12: `max_actions: "3"` must be 422, not 3). trpc-to-openapi 3.3
// sets `coerce` on every number/boolean/bigint/date field of an object input, for bodies as well as for query
// strings (mcampa/trpc-to-openapi, adapters/node-http/core: coerceSchema), on every request. Query values are
// strings by nature, so GET inputs keep that coercion; for the inputs of operations that take a body the flag is
// pinned to false here, once, before the first request (zod 4 reads `def.coerce` when it parses).
import type { AnyRouter } from "@trpc/server";

type ZodLike = { _zod?: { def?: Record<string, unknown> & { type?: string } } };

const COERCIBLE = new Set(["number", "boolean", "bigint", "date"]);

function unwrap(t: ZodLike): ZodLike {
  let cur = t;
  for (let i = 0; i < 32; i++) {
    const def = cur?._zod?.def;
    if (!def) return cur;
    if (def.type === "optional" || def.type === "nullable" || def.type === "default" || def.type === "prefault") {
      cur = def.innerType as ZodLike;
      continue;
    }
    if (def.type === "lazy") {
      cur = (def.getter as () => ZodLike)();
      continue;
    }
    return cur;
  }
  return cur;
}

function pin(def: Record<string, unknown>): void {
  const d = Object.getOwnPropertyDescriptor(def, "coerce");
  if (d?.get) return; // pinned already
  Object.defineProperty(def, "coerce", { get: () => false, set: () => {}, configurable: true, enumerable: true });
}

/** Pins coerce=false on the fields trpc-to-openapi would coerce (the same walk as its coerceSchema). */
export function pinNoCoercion(schema: unknown, seen = new Set<unknown>()): void {
  const s = unwrap(schema as ZodLike);
  const def = s?._zod?.def;
  if (!def || seen.has(s)) return;
  seen.add(s);
  if (def.type === "pipe") {
    pinNoCoercion(def.in, seen);
    pinNoCoercion(def.out, seen);
    return;
  }
  if (def.type !== "object") return;
  for (const field of Object.values((def.shape ?? {}) as Record<string, unknown>)) {
    const f = unwrap(field as ZodLike);
    const fd = f?._zod?.def;
    if (!fd) continue;
    if (COERCIBLE.has(fd.type ?? "")) pin(fd);
    else if (fd.type === "object" || fd.type === "pipe") pinNoCoercion(f, seen);
  }
}

/** Every /v1 procedure whose OpenAPI method takes a body: its input parsers refuse strings for numbers. */
export function pinBodyInputs(router: AnyRouter): number {
  let n = 0;
  const procs = (router as unknown as { _def: { procedures: Record<string, unknown> } })._def.procedures;
  for (const p of Object.values(procs)) {
    const def = (p as { _def?: { meta?: { openapi?: { method?: string } }; inputs?: unknown[] } })._def;
    const method = def?.meta?.openapi?.method;
    if (!method || method === "GET") continue;
    for (const input of def.inputs ?? []) {
      pinNoCoercion(input);
      n++;
    }
  }
  return n;
}
