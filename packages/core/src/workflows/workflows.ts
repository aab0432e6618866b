// Workflows: create (version 1), list, get, update (version N+1; old versions kept), delete (SPEC.md
// "Workflows"; DECISIONS.md "Workflows" and its Compatibility amendment). Every query is scoped to the
// caller's account and mode; an unknown or malformed id is 404 WORKFLOW_NOT_FOUND.

import { CoreError } from "@cua/base/errors";
import { hex } from "@cua/base/ids";
import { detailsError } from "@cua/base/validation";
import type { Workflow } from "@cua/db/generated";
import type { CoreDeps } from "../deps.ts";
import type { Principal } from "../keys/authenticate-key.ts";
import { invalidStatusFilter, type ListBody, listBody, parseListLimit } from "../operations/list.ts";
import { type Definition, DSL_VERSION } from "./definition.ts";
import { SLUG, WORKFLOW_STATUSES } from "./schemas.ts";

type Deps = Pick<CoreDeps, "db" | "clock">;

export interface WorkflowRecord {
  object: "workflow";
  id: string;
  name: string;
  slug: string;
  version: number;
  dsl_version: typeof DSL_VERSION;
  definition: unknown;
  inputs_schema: unknown;
  description: string | null;
  status: "active" | "archived";
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
}

export const newWorkflowId = (mode: "live" | "test") => (mode === "test" ? `wf_test_${hex(12)}` : `wf_${hex(12)}`);

/** A slug from a name: lower case, runs of other characters as "-", at most 63 characters. */
export function slugify(name: string): string {
  const s = name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+/, "")
    .slice(0, 63)
    .replace(/-+$/, "");
  return SLUG.test(s) ? s : "workflow";
}

async function toRecord(deps: Deps, w: Workflow): Promise<WorkflowRecord> {
  const v = await deps.db.workflowVersion.findUniqueOrThrow({
    where: { workflowId_version: { workflowId: w.id, version: w.version } },
  });
  return record(w, v.definition, v.inputsSchema);
}

function record(w: Workflow, definition: unknown, inputsSchema: unknown): WorkflowRecord {
  return {
    object: "workflow",
    id: w.id,
    name: w.name,
    slug: w.slug,
    version: w.version,
    dsl_version: DSL_VERSION,
    definition,
    inputs_schema: inputsSchema ?? null,
    description: w.description,
    status: w.status as "active" | "archived",
    metadata: (w.metadata ?? {}) as Record<string, string>,
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

/** Ids are [A-Za-z0-9_-]; anything else is unknown (404, never a query: PostgreSQL refuses NUL bytes). */
export const WELL_FORMED_ID = /^[A-Za-z0-9_-]{1,128}$/;

export async function loadWorkflow(deps: Pick<CoreDeps, "db">, p: Principal, id: string): Promise<Workflow> {
  if (!WELL_FORMED_ID.test(id)) throw new CoreError("WORKFLOW_NOT_FOUND", "The workflow does not exist.");
  const w = await deps.db.workflow.findFirst({ where: { id, accountId: p.accountId, mode: p.mode } });
  if (!w) throw new CoreError("WORKFLOW_NOT_FOUND", "The workflow does not exist.");
  return w;
}

const slugTaken = (slug: string) =>
  detailsError([{ path: "body.slug", message: `"${slug}" is already the slug of another workflow` }]);

async function freeSlug(deps: Deps, p: Principal, base: string): Promise<string> {
  const taken = new Set(
    (
      await deps.db.workflow.findMany({
        where: { accountId: p.accountId, mode: p.mode, slug: { startsWith: base.slice(0, 56) } },
        select: { slug: true },
      })
    ).map((r) => r.slug),
  );
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) {
    const s = `${base.slice(0, 62 - String(i).length)}-${i}`;
    if (!taken.has(s)) return s;
  }
}

const isUniqueViolation = (e: unknown) => (e as { code?: string })?.code === "P2002";

export interface CreateWorkflowInput {
  name: string;
  slug?: string;
  definition: unknown;
  inputs_schema?: Record<string, unknown>;
  description?: string;
  metadata?: Record<string, string>;
}

export async function createWorkflow(deps: Deps, p: Principal, input: CreateWorkflowInput): Promise<WorkflowRecord> {
  const explicit = input.slug !== undefined;
  for (let attempt = 0; ; attempt++) {
    const slug = explicit ? input.slug! : await freeSlug(deps, p, slugify(input.name));
    const id = newWorkflowId(p.mode);
    const now = deps.clock.now();
    try {
      const w = await deps.db.$transaction(async (tx) => {
        const w = await tx.workflow.create({
          data: {
            id,
            accountId: p.accountId,
            mode: p.mode,
            name: input.name,
            slug,
            description: input.description ?? null,
            metadata: input.metadata ?? {},
            version: 1,
            createdAt: now,
            updatedAt: now,
          },
        });
        await tx.workflowVersion.create({
          data: {
            workflowId: id,
            version: 1,
            name: input.name,
            definition: input.definition as object,
            inputsSchema: (input.inputs_schema as object) ?? undefined,
            createdAt: now,
          },
        });
        return w;
      });
      return record(w, input.definition, input.inputs_schema ?? null);
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      if (explicit || attempt >= 3) throw slugTaken(slug);
    }
  }
}

interface Cursor {
  c: string;
  i: string;
}
const encodeCursor = (c: Date, i: string) =>
  Buffer.from(JSON.stringify({ c: c.toISOString(), i })).toString("base64url");
export function decodeCursor(raw: string): Cursor {
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) as Partial<Cursor>;
    if (
      typeof v.c === "string" &&
      typeof v.i === "string" &&
      WELL_FORMED_ID.test(v.i) &&
      !Number.isNaN(Date.parse(v.c))
    )
      return v as Cursor;
  } catch {}
  throw new CoreError("INVALID_CURSOR");
}
export const pageAfter = (cur: Cursor | null) =>
  cur ? { OR: [{ createdAt: { lt: new Date(cur.c) } }, { createdAt: new Date(cur.c), id: { lt: cur.i } }] } : {};
export const nextCursorOf = (last: { createdAt: Date; id: string }) => encodeCursor(last.createdAt, last.id);

export async function listWorkflows(
  deps: Deps,
  p: Principal,
  q: { status?: string; limit?: string | number; cursor?: string },
): Promise<ListBody<WorkflowRecord>> {
  if (q.status !== undefined && !(WORKFLOW_STATUSES as readonly string[]).includes(q.status))
    throw invalidStatusFilter(q.status, WORKFLOW_STATUSES);
  const limit = parseListLimit(q.limit);
  const cur = q.cursor !== undefined ? decodeCursor(q.cursor) : null;
  const rows = await deps.db.workflow.findMany({
    where: { accountId: p.accountId, mode: p.mode, ...(q.status ? { status: q.status } : {}), ...pageAfter(cur) },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
  });
  const page = rows.slice(0, limit);
  const versions = page.length
    ? await deps.db.workflowVersion.findMany({
        where: { OR: page.map((w) => ({ workflowId: w.id, version: w.version })) },
      })
    : [];
  const byId = new Map(versions.map((v) => [v.workflowId, v]));
  const hasMore = rows.length > limit;
  return listBody(
    page.map((w) => record(w, byId.get(w.id)?.definition, byId.get(w.id)?.inputsSchema)),
    { has_more: hasMore, next_cursor: hasMore ? nextCursorOf(page.at(-1)!) : null },
  );
}

export async function getWorkflow(deps: Deps, p: Principal, id: string): Promise<WorkflowRecord> {
  return toRecord(deps, await loadWorkflow(deps, p, id));
}

export interface UpdateWorkflowInput {
  name?: string;
  slug?: string;
  definition?: unknown;
  inputs_schema?: Record<string, unknown> | null;
  description?: string | null;
  metadata?: Record<string, string>;
  status?: "active" | "archived";
}

/**
 * PUT /v1/workflows/{id}: a change of name, definition or inputs_schema writes version N+1 (the others
 * are kept; runs keep the version they started with); slug, description, metadata and status change the
 * record only. A body with no field is 400 EMPTY_UPDATE.
 */
export async function updateWorkflow(
  deps: Deps,
  p: Principal,
  id: string,
  input: UpdateWorkflowInput,
): Promise<WorkflowRecord> {
  if (Object.values(input).every((v) => v === undefined)) throw new CoreError("EMPTY_UPDATE");
  await loadWorkflow(deps, p, id);
  const now = deps.clock.now();
  try {
    const w = await deps.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM workflows WHERE id = ${id} FOR UPDATE`;
      const cur = await tx.workflow.findUniqueOrThrow({ where: { id } });
      const newVersion =
        input.name !== undefined || input.definition !== undefined || input.inputs_schema !== undefined;
      let version = cur.version;
      if (newVersion) {
        const prev = await tx.workflowVersion.findUniqueOrThrow({
          where: { workflowId_version: { workflowId: id, version: cur.version } },
        });
        version = cur.version + 1;
        const schema = input.inputs_schema === undefined ? prev.inputsSchema : input.inputs_schema;
        await tx.workflowVersion.create({
          data: {
            workflowId: id,
            version,
            name: input.name ?? cur.name,
            definition: (input.definition ?? prev.definition) as object,
            inputsSchema: schema === null ? undefined : (schema as object),
            createdAt: now,
          },
        });
      }
      return tx.workflow.update({
        where: { id },
        data: {
          version,
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.slug !== undefined ? { slug: input.slug } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
          ...(input.status !== undefined ? { status: input.status } : {}),
          updatedAt: now,
        },
      });
    });
    return toRecord(deps, w);
  } catch (e) {
    if (isUniqueViolation(e)) throw slugTaken(input.slug ?? "");
    throw e;
  }
}

/** DELETE: the workflow and its versions go; its runs keep their pinned definition. */
export async function deleteWorkflow(deps: Deps, p: Principal, id: string) {
  await loadWorkflow(deps, p, id);
  await deps.db.workflow.deleteMany({ where: { id, accountId: p.accountId, mode: p.mode } });
  return { id, object: "workflow" as const, deleted: true as const };
}

/** The definition and schema of a workflow's current version (run start pins them). */
export async function currentVersion(deps: Pick<CoreDeps, "db">, w: Workflow) {
  const v = await deps.db.workflowVersion.findUniqueOrThrow({
    where: { workflowId_version: { workflowId: w.id, version: w.version } },
  });
  return { version: v.version, definition: v.definition as unknown as Definition, inputsSchema: v.inputsSchema };
}

export interface WorkflowVersionRecord {
  object: "workflow.version";
  workflow_id: string;
  version: number;
  name: string;
  definition: unknown;
  inputs_schema: unknown;
  created_at: string;
}

/** GET /v1/workflows/{id}/versions: every kept version, newest first (all of them: at most one per update). */
export async function listWorkflowVersions(
  deps: Pick<CoreDeps, "db">,
  p: Principal,
  id: string,
): Promise<ListBody<WorkflowVersionRecord>> {
  await loadWorkflow(deps, p, id);
  const rows = await deps.db.workflowVersion.findMany({ where: { workflowId: id }, orderBy: { version: "desc" } });
  return listBody(
    rows.map((v) => ({
      object: "workflow.version" as const,
      workflow_id: v.workflowId,
      version: v.version,
      name: v.name,
      definition: v.definition,
      inputs_schema: v.inputsSchema ?? null,
      created_at: v.createdAt.toISOString(),
    })),
  );
}
