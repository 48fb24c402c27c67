/**
 * Browsable reference at /docs (generated from the OpenAPI document, no external assets)
 * and the error reference at /docs/errors (generated from the catalogue).
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { catalogue } from "../../schema/errors.ts"
import { escapeHtml } from "./html.ts"
import { openApiDocument } from "./openapi.ts"

const escape = (value: unknown) => escapeHtml(String(value))

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d232b}
code{font:13px ui-monospace,monospace;background:#f1f3f5;padding:.1rem .3rem;border-radius:3px}
table{border-collapse:collapse;width:100%;margin:1rem 0}td,th{border-bottom:1px solid #dde1e6;padding:.4rem;text-align:left;vertical-align:top}
.m{font-weight:700;font-family:ui-monospace,monospace}h2{margin-top:2.5rem}a{color:#0b63c5}
</style></head><body>${body}</body></html>`

type Operation = {
  readonly summary?: string
  readonly operationId?: string
  readonly deprecated?: boolean
  readonly responses?: Record<string, unknown>
  readonly [key: string]: unknown
}

const referencePage = (): string => {
  const spec = openApiDocument()
  const byTag = new Map<string, Array<string>>()
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, raw] of Object.entries(item as Record<string, Operation>)) {
      const op = raw
      const tag = Array.isArray(op["tags"]) ? String(op["tags"][0]) : "other"
      const errors = Object.keys(op.responses ?? {}).filter((status) => Number(status) >= 400).join(", ")
      const row = `<tr><td class="m">${method.toUpperCase()}</td><td><code>${escape(path)}</code>${
        op.deprecated ? " <em>(deprecated)</em>" : ""
      }<br>${escape(op.summary ?? "")}</td><td>${escape((op["x-scopes"] as Array<string> | undefined)?.join(" ") ?? "")}</td><td>${
        escape((op["x-auth"] as Array<string> | undefined)?.join(", ") || "public")
      }</td><td>${escape(op["x-idempotency"] ?? "")}</td><td>${escape(errors)}</td></tr>`
      byTag.set(tag, [...(byTag.get(tag) ?? []), row])
    }
  }
  const sections = [...byTag.entries()].map(([tag, rows]) =>
    `<h2>${escape(tag)}</h2><table><tr><th></th><th>Path</th><th>Scopes</th><th>Credentials</th><th>Idempotency</th><th>Error statuses</th></tr>${
      rows.join("")
    }</table>`
  )
  return page(
    `${spec.info.title} reference`,
    `<h1>${escape(spec.info.title)} <small>${escape(spec.info.version)}</small></h1>
<p>${escape(spec.info.description ?? "")}</p>
<p>Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> · Errors: <a href="/docs/errors">/docs/errors</a></p>
${sections.join("\n")}`
  )
}

const errorsPage = (): string => {
  const rows = catalogue.map((entry) =>
    `<tr id="${escape(entry.code)}"><td><a href="#${escape(entry.code)}"><code>${escape(entry.code)}</code></a></td><td>${
      entry.kind === "http" ? entry.status : entry.kind === "oauth" ? `OAuth error (${entry.status})` : "outcome"
    }</td><td>${escape(entry.description).replace(/`([^`]+)`/g, "<code>$1</code>")}</td></tr>`
  )
  return page(
    "Errors reference",
    `<h1>Errors</h1>
<p>Every error answers <code>{"error":{"code","message","status","request_id"}}</code>, with optional
<code>docs_url</code>, <code>reason</code>, <code>retry_after_seconds</code> (present whenever <code>Retry-After</code> is),
<code>consent</code> and <code>conflicting_destination_id</code>. Every response carries <code>X-Request-Id</code>.
Branch on <code>code</code>, not on the status alone: <code>not_found</code> also means a route this deployment does not serve.</p>
<table><tr><th>Code</th><th>Status</th><th>When</th></tr>${rows.join("")}</table>`
  )
}

const html = (body: () => string) => {
  let rendered: string | undefined
  return Effect.sync(() => HttpServerResponse.html((rendered ??= body())))
}

export const DocsRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/docs", html(referencePage)),
  HttpRouter.add("GET", "/docs/errors", html(errorsPage))
)
