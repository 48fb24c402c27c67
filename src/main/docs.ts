/**
 * The API reference at /docs: Swagger UI (the `swagger-ui-dist` npm package, served from
 * node_modules under /docs/assets/..., nothing from a CDN) rendering one tag of the document at a
 * time (`/docs?tag=<tag>`, the document cut to that tag at /docs/openapi/<tag>.json; the whole
 * /api/v1/openapi.json kept a browser busy for seconds), and the error reference at /docs/errors
 * (generated from the catalogue, one anchor per code: `docs_url` points there).
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { catalogue, NotFound, toEnvelope } from "../../schema/errors.ts"
import { escapeHtml } from "../platform/html.ts"
import { documentTags, openApiDocument, tagDocumentJson } from "./openapi.ts"

const escape = (value: unknown) => escapeHtml(String(value))

/** Only this origin: scripts, styles and the document come from the service itself (icons in the CSS are data: URIs). */
const STRICT_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
  "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const securityHeaders = {
  "content-security-policy": STRICT_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
}

const page = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${escape(ownAssets.plain.path)}">
</head><body class="plain">${body}</body></html>`

// --- Assets ------------------------------------------------------------------------------------

const require = createRequire(import.meta.url)
const swaggerDir = require.resolve("swagger-ui-dist/package.json").replace(/package\.json$/, "")
const swaggerVersion = String((JSON.parse(readFileSync(`${swaggerDir}package.json`, "utf8")) as { version?: unknown }).version)

interface Asset {
  readonly path: `/${string}`
  readonly contentType: string
  readonly body: () => Uint8Array
}

/** Read once, on first use: the bundle is about 1.5 MB and most processes never serve it. */
const lazyFile = (file: string) => {
  let bytes: Uint8Array | undefined
  return () => (bytes ??= readFileSync(`${swaggerDir}${file}`))
}

const vendorAsset = (file: string, contentType: string): Asset => ({
  // The version is in the path, so a new release is a new URL and the old one may be cached for good.
  path: `/docs/assets/swagger-ui-${swaggerVersion}/${file}`,
  contentType,
  body: lazyFile(file)
})

const ownAsset = (name: string, contentType: string, text: string): Asset => {
  const bytes = new TextEncoder().encode(text)
  const hash = createHash("sha256").update(bytes).digest("hex").slice(0, 12)
  return { path: `/docs/assets/${hash}/${name}`, contentType, body: () => bytes }
}

/** The tag /docs opens with: the Quickstart's first call (`POST /api/v1/events`) is in it, and its view carries the guide. */
export const FIRST_TAG = "events"

/**
 * Swagger UI's start-up, a file of its own because the CSP refuses inline scripts. It renders the
 * tag named by `?tag=` (one the page's picker lists, else the first), and the picker reloads the
 * page on another tag.
 */
const initScript = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
  var picker = document.getElementById("docs-tag");
  var known = Array.prototype.map.call(picker.options, function (option) { return option.value; });
  var asked = new URLSearchParams(window.location.search).get("tag");
  var tag = known.indexOf(asked) >= 0 ? asked : ${JSON.stringify(FIRST_TAG)};
  picker.value = tag;
  picker.addEventListener("change", function () {
    window.location.assign("/docs?tag=" + encodeURIComponent(picker.value));
  });
  window.ui = SwaggerUIBundle({
    url: "/docs/openapi/" + encodeURIComponent(tag) + ".json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    // No badge from the public validator: the page makes no request off this origin.
    validatorUrl: null,
    docExpansion: "list",
    defaultModelsExpandDepth: -1,
    defaultModelExpandDepth: 2,
    displayOperationId: false,
    displayRequestDuration: true,
    filter: true,
    showExtensions: true,
    showCommonExtensions: true,
    tryItOutEnabled: false,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
`

const referenceCss = `body{margin:0;background:#fff}
.docs-bar{display:flex;gap:1.5rem;align-items:center;padding:.6rem 1.25rem;background:#1d232b;color:#fff;font:14px/1.4 system-ui,sans-serif}
.docs-bar a{color:#cfe3ff;text-decoration:none}.docs-bar select{font:inherit;padding:.15rem .3rem}.docs-bar a:hover{text-decoration:underline}.docs-bar strong{font-size:15px}
.swagger-ui .info .markdown table{border-collapse:collapse}.swagger-ui .info .markdown td,.swagger-ui .info .markdown th{border:1px solid #dde1e6;padding:.3rem .5rem;vertical-align:top}
noscript table{border-collapse:collapse;margin:1rem}noscript td{padding:.2rem .5rem;font:13px ui-monospace,monospace}
`

const plainCss = `body.plain{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1d232b}
code{font:13px ui-monospace,monospace;background:#f1f3f5;padding:.1rem .3rem;border-radius:3px}
table{border-collapse:collapse;width:100%;margin:1rem 0}td,th{border-bottom:1px solid #dde1e6;padding:.4rem;text-align:left;vertical-align:top}
tr:target{background:#fff6d6}a{color:#0b63c5}
`

const vendorAssets = {
  css: vendorAsset("swagger-ui.css", "text/css; charset=utf-8"),
  bundle: vendorAsset("swagger-ui-bundle.js", "text/javascript; charset=utf-8"),
  favicon: vendorAsset("favicon-32x32.png", "image/png")
}

const ownAssets = {
  init: ownAsset("init.js", "text/javascript; charset=utf-8", initScript),
  css: ownAsset("reference.css", "text/css; charset=utf-8", referenceCss),
  plain: ownAsset("plain.css", "text/css; charset=utf-8", plainCss)
}

const assetRoute = (asset: Asset) =>
  HttpRouter.add(
    "GET",
    asset.path,
    Effect.sync(() =>
      HttpServerResponse.uint8Array(asset.body(), {
        contentType: asset.contentType,
        headers: { "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" }
      })
    )
  )

// --- Pages -------------------------------------------------------------------------------------

type Operation = { readonly summary?: string; readonly operationId?: string; readonly tags?: ReadonlyArray<string> }

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/**
 * Without JavaScript the page still lists every operation (and links to the raw document), so
 * the reference is readable by text browsers and searchable by path.
 */
const operationIndex = (): string => {
  const rows: Array<string> = []
  for (const [path, item] of Object.entries(openApiDocument().paths)) {
    for (const [method, raw] of Object.entries(item as Record<string, Operation>)) {
      if (!METHODS.includes(method)) continue
      const tag = raw.tags?.[0] ?? "default"
      const anchor = `/docs?tag=${encodeURIComponent(tag)}#/${encodeURIComponent(tag)}/${encodeURIComponent(raw.operationId ?? "")}`
      rows.push(`<tr><td>${method.toUpperCase()}</td><td><a href="${escape(anchor)}">${escape(path)}</a></td><td>${
        escape(raw.summary ?? "")
      }</td></tr>`)
    }
  }
  return `<table>${rows.join("")}</table>`
}

const referencePage = (): string => {
  const spec = openApiDocument()
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(spec.info.title)} reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" type="image/png" href="${escape(vendorAssets.favicon.path)}">
<link rel="stylesheet" href="${escape(vendorAssets.css.path)}">
<link rel="stylesheet" href="${escape(ownAssets.css.path)}">
<script src="${escape(vendorAssets.bundle.path)}" defer></script>
<script src="${escape(ownAssets.init.path)}" defer></script>
</head><body>
<nav class="docs-bar"><strong>${escape(spec.info.title)} ${escape(spec.info.version)}</strong>
<label>Section <select id="docs-tag">${
    documentTags().map((tag) => `<option value="${escape(tag.name)}">${escape(tag.name)} (${tag.operations})</option>`).join("")
  }</select></label>
<a href="/docs?tag=${escape(FIRST_TAG)}">Quickstart</a><a href="/api/v1/openapi.json">openapi.json</a><a href="/docs/errors">Error codes</a><a href="/docs/sandbox">Demo with the sandbox providers</a></nav>
<div id="swagger-ui"></div>
<noscript><p>The interactive reference needs JavaScript. Machine-readable: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a>;
errors: <a href="/docs/errors">/docs/errors</a>.</p>${operationIndex()}</noscript>
</body></html>`
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
<p><a href="/docs">API reference</a> · <a href="/api/v1/openapi.json">openapi.json</a></p>
<p>Every error answers <code>{"error":{"code","message","status","request_id"}}</code>, with optional
<code>docs_url</code>, <code>reason</code>, <code>retry_after_seconds</code> (present whenever <code>Retry-After</code> is),
<code>consent</code> and <code>conflicting_destination_id</code>. Every response carries <code>X-Request-Id</code>.
Branch on <code>code</code>, not on the status alone: <code>not_found</code> also means a route this deployment does not serve.</p>
<table><tr><th>Code</th><th>Status</th><th>When</th></tr>${rows.join("")}</table>`
  )
}

/** How to demo the product with no real account (docs/sandbox-providers.md has the whole contract). */
const sandboxPage = (): string =>
  page(
    "Demo with the sandbox providers",
    `<h1>Demo with the sandbox providers</h1>
<p><a href="/docs">API reference</a> · <a href="/docs/errors">Error codes</a></p>
<p>With <code>SVC_PROVIDERS=sandbox</code> (the default only on the embedded database outside <code>NODE_ENV=production</code>;
with <code>DATABASE_URL</code> or in production it must be set, and a warning is logged at start) the service connects to
simulated providers served by itself under <code>/sandbox/&lt;provider&gt;/</code> (or by <code>npm run sandbox</code>
on <code>SVC_SANDBOX_PORT</code>, with <code>SVC_SANDBOX_URL</code> pointing at it): an ad platform with accounts
<code>act_1001</code> (USD) and <code>act_1002</code> (EUR), campaigns, ad sets, ads, daily insights and spend, lead forms,
and the other provider kinds. Seeded and deterministic; nothing real is touched.</p>
<ol>
<li>Start the service (<code>npm start</code>) and make an API key (<code>npm run cli -- quickstart</code>).</li>
<li>Mint a connect hand-off: <code>POST /api/v1/connections/adplatform/handoff</code>; open its <code>start_url</code> in a
browser, pick a persona (<code>one_account</code>, <code>two_accounts</code>, <code>no_manage_ads_permission</code>) and Approve.</li>
<li>See the connection (<code>GET /api/v1/connections</code>), sync it (<code>POST /api/v1/connections/sync</code>), then
spend, ROAS and CAC in <code>GET /api/v1/campaigns</code> and <code>GET /api/v1/overview</code>.</li>
<li>Act as the provider, with your API key as <code>Authorization: Bearer</code> (it opens your profile's own
sandbox world; the operator token with <code>?profile_id=</code> opens any): <code>GET /sandbox/adplatform/_state</code> shows its objects;
<code>PATCH /sandbox/adplatform/_state</code> with <code>{"objects":[{"id":"ad_1001_1_1_1","status":"paused"}]}</code>
edits one by hand, with <code>{"arrive":{"kind":"lead","ad_id":"ad_1001_3_1_1"}}</code> submits a lead form (pushed,
signed, to <code>/hooks/adplatform</code>); <code>POST /sandbox/adplatform/_faults</code> with <code>{"throttle":3}</code>,
<code>{"error_rate":0.5}</code>, <code>{"timeout_ms":2000}</code>, <code>{"missing_permission":true}</code> or
<code>{"revoke_tokens":true}</code> makes it misbehave.</li>
</ol>
<p>Callbacks are signed with HMAC-SHA256 over the raw body under the sandbox app's client secret,
<code>hex(HMAC-SHA256(SVC_SANDBOX_SECRET, "&lt;provider&gt;"))</code> (never shown by <code>_state</code>), and name
their world in <code>X-Sandbox-World</code>.</p>`
  )

/** Rendered once per process (the document does not change while it runs). */
const html = (body: () => string) => {
  let rendered: string | undefined
  return Effect.sync(() =>
    HttpServerResponse.html((rendered ??= body())).pipe(
      HttpServerResponse.setHeaders({ ...securityHeaders, "cache-control": "no-cache" })
    )
  )
}

/** One tag's document (`/docs/openapi/<tag>.json`), built on first use and kept. */
const tagDocumentRoute = HttpRouter.add(
  "GET",
  "/docs/openapi/:file",
  Effect.map(HttpRouter.params, (params) => {
    const file = params["file"] ?? ""
    const json = file.endsWith(".json") ? tagDocumentJson(file.slice(0, -".json".length), FIRST_TAG) : undefined
    // The envelope layer fills `request_id` and `docs_url`.
    if (json === undefined) {
      return HttpServerResponse.jsonUnsafe(toEnvelope(new NotFound({ message: "No tag of the API reference has this name." })), { status: 404 })
    }
    return HttpServerResponse.text(json, { contentType: "application/json", headers: { "cache-control": "no-cache" } })
  })
)

export const DocsRoutes = Layer.mergeAll(
  HttpRouter.add("GET", "/docs", html(referencePage)),
  tagDocumentRoute,
  HttpRouter.add("GET", "/docs/errors", html(errorsPage)),
  HttpRouter.add("GET", "/docs/sandbox", html(sandboxPage)),
  ...[...Object.values(vendorAssets), ...Object.values(ownAssets)].map(assetRoute)
)
