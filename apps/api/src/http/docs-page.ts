// /docs: an API reference rendered on the server from the OpenAPI document (works offline, no CDN),
// and /docs/errors: every error code with its status, type and retry rules (docs_url targets).
import { ERROR_CODES, errorType, OUTCOME_CODES } from "@cua/base/errors";
import type { FastifyInstance } from "fastify";

const esc = (s: unknown) =>
  String(s ?? "").replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1000px;margin:auto;padding:24px}h1{font-size:26px}h2{margin-top:40px;border-bottom:1px solid #ddd}
.op{border:1px solid #ddd;border-radius:8px;padding:12px 16px;margin:16px 0}.m{display:inline-block;min-width:64px;font-weight:700;font-family:monospace}
.get{color:#0969da}.post{color:#1a7f37}.delete{color:#cf222e}.put,.patch{color:#9a6700}code,pre{font-family:ui-monospace,monospace;font-size:13px}
pre{background:#f6f8fa;padding:8px;border-radius:6px;overflow:auto;max-height:360px}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}nav a{margin-right:12px}
@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}pre{background:#161b22}.op,td,th{border-color:#30363d}}`;

function page(title: string, body: string) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

function renderDoc(doc: any): string {
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<any>(item)) {
      const tag = op.tags?.[0] ?? "Other";
      const params = (op.parameters ?? [])
        .map(
          (p: any) =>
            `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${p.required ? "yes" : "no"}</td><td>${esc(p.description ?? p.schema?.description ?? "")}</td></tr>`,
        )
        .join("");
      const body = op.requestBody?.content?.["application/json"]?.schema;
      const responses = Object.entries<any>(op.responses ?? {})
        .map(([s, r]) => `<tr><td>${esc(s)}</td><td>${esc(r.description)}</td></tr>`)
        .join("");
      const okSchema = Object.entries<any>(op.responses ?? {}).find(([s]) => s.startsWith("2"))?.[1]?.content?.[
        "application/json"
      ]?.schema;
      const html = `<div class="op" id="${esc(op.operationId ?? `${method}-${path}`)}"><div><span class="m ${method}">${method.toUpperCase()}</span> <code>/v1${esc(path)}</code> ${op["x-required-scope"] ? `<small>scope <code>${esc(op["x-required-scope"])}</code></small>` : op.security?.length === 0 ? "<small>public</small>" : ""} ${op["x-idempotency"] ? "<small>· Idempotency-Key</small>" : ""}</div>
<p><b>${esc(op.summary)}</b> ${esc(op.description)}</p>
${params ? `<table><tr><th>parameter</th><th>in</th><th>required</th><th></th></tr>${params}</table>` : ""}
${body ? `<p>Request body</p><pre>${esc(JSON.stringify(body, null, 2))}</pre>` : ""}
${okSchema ? `<p>Response body</p><pre>${esc(JSON.stringify(okSchema, null, 2))}</pre>` : ""}
<table><tr><th>status</th><th>meaning</th></tr>${responses}</table></div>`;
      byTag.set(tag, [...(byTag.get(tag) ?? []), html]);
    }
  }
  const nav = [...byTag.keys()].map((t) => `<a href="#tag-${esc(t)}">${esc(t)}</a>`).join("");
  const sections = [...byTag].map(([t, ops]) => `<h2 id="tag-${esc(t)}">${esc(t)}</h2>${ops.join("")}`).join("");
  return page(
    "API reference",
    `<h1>${esc(doc.info?.title)} <small>${esc(doc.info?.version)}</small></h1><p>${esc(doc.info?.description)}</p>
<nav>${nav}<a href="/docs/errors">Errors</a><a href="/openapi.json">openapi.json</a></nav>${sections}`,
  );
}

function renderErrors(): string {
  const rows = Object.entries(ERROR_CODES)
    .map(
      ([code, i]) =>
        `<tr id="${code}"><td><code>${code}</code></td><td>${i.status}</td><td>${errorType(i.status)}</td><td>${i.retryable}</td><td>${i.sameKey}</td><td>${esc(i.message)}</td></tr>`,
    )
    .join("");
  const outcomes = Object.entries(OUTCOME_CODES)
    .map(([code, meaning]) => `<tr id="${code}"><td><code>${code}</code></td><td>${esc(meaning)}</td></tr>`)
    .join("");
  return page(
    "Errors",
    `<h1>Errors</h1><p>Every error is <code>{"error": {code, message, type, request_id, retryable, retry_with_same_idempotency_key, docs_url, ...}}</code>. Retry only when <code>retryable</code> is true; reuse the Idempotency-Key only when <code>retry_with_same_idempotency_key</code> is true; honour the larger of Retry-After and <code>retry_after</code>.</p>
<table><tr><th>code</th><th>status</th><th>type</th><th>retryable</th><th>same key</th><th>meaning</th></tr>${rows}</table>
<h2>Codes inside an answer</h2><p>A successful answer can carry a code of its own: a failed run's <code>error.code</code> (GET /v1/runs/{id}, run events, callbacks; a run that fails on an API error keeps that error's code), a machine command's <code>error.code</code> (actions, batches, browser, terminal and file operations, driver results) and a <code>fail</code> action's <code>params.code</code>.</p>
<table><tr><th>code</th><th>meaning</th></tr>${outcomes}</table><p><a href="/docs">API reference</a></p>`,
  );
}

export function registerDocs(app: FastifyInstance, getDoc: () => unknown) {
  let html: string | undefined;
  app.get("/docs", async (_req, reply) => {
    html ??= renderDoc(getDoc());
    return reply.type("text/html; charset=utf-8").send(html);
  });
  const errorsHtml = renderErrors();
  app.get("/docs/errors", async (_req, reply) => reply.type("text/html; charset=utf-8").send(errorsHtml));
}
