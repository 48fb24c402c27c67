/**
 * api-concepts.md, Conventions: "Successful payloads are wrapped as `data` with an optional
 * `meta`. Pages carry `pagination: {has_next, cursor}`." This walks every operation of the
 * published description and refuses any 2xx JSON body whose schema is not that envelope, except
 * the operations listed below by name with the reason (protocol bodies another standard fixes,
 * bodies that are not JSON). A new bare answer, or a new exception nobody listed, fails here.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, serveApp, testSettings } from "../support/app.ts"

const OAUTH_TOKEN = "OAuth 2.0 token response (RFC 6749 section 5.1): clients read access_token at the top level"
const HTML = "an HTML page for a person's browser, not a JSON payload"
const SCRIPT = "JavaScript loaded by a browser <script> tag, not a JSON payload"
const REDIRECT = "answers only a 302 redirect to the client's redirect_uri (no 2xx body)"

/** Operations (METHOD path) whose 2xx body is not the `data` envelope, and why. */
const EXCEPTIONS: Readonly<Record<string, string>> = {
  "GET /healthz": "liveness probe for the orchestrator ({status}), outside the /api/v1 payload contract",
  "GET /readyz": "readiness probe for the orchestrator ({status, database, migrations}), outside the /api/v1 payload contract",
  "GET /api/v1/openapi.json": "the OpenAPI 3.1 document itself, whose top level the OpenAPI specification fixes",
  "GET /api/v1/tracking/snippet": SCRIPT,
  "GET /api/v1/tracking/installers/gtm": "a tag-manager container export (exportFormatVersion 2) imported as is: the tag manager fixes its top level",
  "GET /api/v1/tracking/installers/shopify-pixel": SCRIPT,
  "GET /api/v1/reports/{id}/runs/{runId}/csv": "a CSV file (text/csv)",
  "GET /api/v1/reports/{id}/runs/{runId}/pdf": "a PDF file (application/pdf)",
  "POST /oauth/token": OAUTH_TOKEN,
  "POST /oauth/revoke": "OAuth 2.0 token revocation (RFC 7009 section 2.2): 200 with an empty body",
  "GET /oauth/authorize": HTML,
  "POST /oauth/authorize/consent": REDIRECT,
  "GET /.well-known/oauth-authorization-server": "OAuth authorization server metadata (RFC 8414), a fixed top-level document",
  "POST /oauth/mcp/register": "OAuth dynamic client registration response (RFC 7591 section 3.2.1), fixed top level",
  "GET /oauth/mcp/authorize": HTML,
  "POST /oauth/mcp/authorize/sign-in": HTML,
  "POST /oauth/mcp/authorize/decision": REDIRECT,
  "POST /oauth/mcp/token": OAUTH_TOKEN,
  "GET /.well-known/oauth-protected-resource": "OAuth protected resource metadata (RFC 9728), a fixed top-level document",
  "GET /account/password": HTML,
  "POST /account/password": HTML,
  "GET /legal/dpa/handoff": HTML,
  "POST /legal/dpa/handoff": HTML,
  "GET /t/tracker.js": SCRIPT,
  "GET /h/{handle}": HTML,
  "GET /connect/{provider}/callback": HTML,
  "POST /hooks/{provider}": "the acknowledgment a provider's signed callback reads ({received, fresh}), not an API client's payload",
  "POST /mcp": "MCP streamable HTTP: a JSON-RPC 2.0 message ({jsonrpc, id, result}) or 202 with no body for a notification"
}

/** Top-level keys every envelope may carry beside `data` (api-concepts.md, Conventions). */
const ENVELOPE_SIBLINGS = new Set(["meta", "pagination"])

/**
 * Wrapped answers that also carry a documented key beside `data`: not bare, so not exceptions,
 * but named here so another stray sibling still fails.
 */
const EXTRA_SIBLINGS: Readonly<Record<string, ReadonlyArray<string>>> = {
  // api-endpoints.md: "on privacy change `grant.revoked_keys`".
  "PUT /api/v1/profiles/{profileId}/entitlements/{feature}": ["grant"],
  // api-endpoints.md: "`status_counts` rides beside `data` and describes the whole queue regardless of page filters".
  "GET /api/v1/identity/merge-proposals": ["status_counts"],
  // The inferred-link review list is the same kind of queue as the merge proposals.
  "GET /api/v1/identity/links": ["status_counts"],
  // The offset-paginated audit's totals over every page.
  "GET /api/v1/identity/repair-scan": ["summary"]
}

type Json = Record<string, any>

/** The schema a `$ref` names, followed until it is not a reference. */
const resolve = (spec: Json, schema: Json): Json => {
  let current = schema
  for (let hops = 0; typeof current.$ref === "string"; hops++) {
    if (hops > 20) throw new Error(`$ref loop at ${schema.$ref}`)
    const path = current.$ref.replace(/^#\//, "").split("/")
    current = path.reduce((node: Json, key: string) => node?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], spec)
    if (current === undefined) throw new Error(`unresolved $ref ${schema.$ref}`)
  }
  return current
}

/** Why `schema` is not the envelope, or null when it is (every branch of a union must be). */
const envelopeProblem = (spec: Json, raw: Json, extra: ReadonlyArray<string>): string | null => {
  const schema = resolve(spec, raw)
  const branches = schema.anyOf ?? schema.oneOf
  if (Array.isArray(branches)) {
    if (branches.length === 0) return "an empty union"
    for (const branch of branches) {
      const problem = envelopeProblem(spec, branch, extra)
      if (problem !== null) return problem
    }
    return null
  }
  if (Array.isArray(schema.allOf)) {
    return schema.allOf.length === 1 ? envelopeProblem(spec, schema.allOf[0], extra) : "an allOf of several schemas"
  }
  if (schema.type !== "object" || typeof schema.properties !== "object") return `not an object schema (${JSON.stringify(schema).slice(0, 120)})`
  const required: Array<string> = schema.required ?? []
  if (!required.includes("data")) return `\`data\` is not required (required: ${JSON.stringify(required)})`
  const strays = Object.keys(schema.properties).filter((key) => key !== "data" && !ENVELOPE_SIBLINGS.has(key) && !extra.includes(key))
  if (strays.length > 0) return `top-level keys beside data: ${strays.join(", ")}`
  if ("pagination" in schema.properties) {
    const pagination = resolve(spec, schema.properties.pagination)
    // An offset-paginated page (the repair scan) adds its offsets; has_next and cursor are always there.
    const missing = ["has_next", "cursor"].filter((key) => !(pagination.required ?? []).includes(key))
    if (missing.length > 0) return `pagination lacks ${missing.join(", ")}`
  }
  return null
}

/** The 13 answers that were bare until issue 30: each must now be published wrapped. */
const FIXED = [
  "POST /api/v1/webhooks/subscriptions",
  "PATCH /api/v1/webhooks/subscriptions/{id}",
  "DELETE /api/v1/webhooks/subscriptions/{id}",
  "POST /api/v1/webhooks/subscriptions/{id}/rotate-secret",
  "POST /api/v1/webhooks/deliveries/{id}/redeliver",
  "POST /api/v1/ads/{id}/pause",
  "POST /api/v1/ads/{id}/resume",
  "POST /api/v1/adsets/{id}/budget",
  "GET /api/v1/campaigns/{id}/status",
  "POST /api/v1/campaigns/{id}/pause",
  "POST /api/v1/campaigns/{id}/resume",
  "POST /api/v1/campaigns/{id}/budget",
  "POST /api/v1/conversion-sync/actions/{action_id}/rollback"
]

const METHODS = new Set(["get", "put", "post", "patch", "delete", "head", "options"])

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("the data envelope", (it) => {
  describe("GET /api/v1/openapi.json", () => {
    it.effect("every 2xx JSON body of every operation is {data} (with meta or pagination), exceptions listed by name", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/openapi.json")
        assert.strictEqual(response.status, 200)
        const spec: Json = response.json
        const problems: Array<string> = []
        const excepted = new Set<string>()
        const published = new Set<string>()
        const wrapped = new Set<string>()
        for (const [path, item] of Object.entries<Json>(spec.paths)) {
          for (const [method, op] of Object.entries<Json>(item)) {
            if (!METHODS.has(method)) continue
            const name = `${method.toUpperCase()} ${path}`
            published.add(name)
            const successes = Object.entries<Json>(op.responses ?? {}).filter(([code]) => /^2\d\d$/.test(code))
            const found: Array<string> = []
            if (successes.length === 0) found.push("no 2xx response published")
            for (const [code, answer] of successes) {
              const content: Json = resolve(spec, answer).content ?? {}
              // A body-less answer (204, or a 2xx without content) has no envelope to carry.
              if (Object.keys(content).length === 0) {
                if (code !== "204") found.push(`${code}: no content`)
                continue
              }
              for (const [type, media] of Object.entries<Json>(content)) {
                if (!/^application\/(.+\+)?json$/.test(type)) {
                  found.push(`${code} ${type}: not JSON`)
                  continue
                }
                const problem = media.schema === undefined ? "no schema" : envelopeProblem(spec, media.schema, EXTRA_SIBLINGS[name] ?? [])
                if (problem !== null) found.push(`${code} ${type}: ${problem}`)
              }
            }
            if (found.length === 0) {
              wrapped.add(name)
              if (name in EXCEPTIONS) problems.push(`${name}: listed as an exception but its answers are wrapped; drop it from the list`)
            } else if (name in EXCEPTIONS) excepted.add(name)
            else problems.push(`${name}: ${found.join("; ")}`)
          }
        }
        for (const name of [...Object.keys(EXCEPTIONS), ...Object.keys(EXTRA_SIBLINGS)]) {
          if (!published.has(name)) problems.push(`${name}: listed here but not published`)
        }
        const api = [...published].filter((name) => name.split(" ")[1]!.startsWith("/api/v1/"))
        console.info(
          `openapi data envelope: ${published.size} operations covered (${api.length} under /api/v1), ` +
            `${wrapped.size} wrapped (${api.filter((name) => wrapped.has(name)).length} under /api/v1), ` +
            `${excepted.size} listed exceptions:\n${[...excepted].map((name) => `  ${name}: ${EXCEPTIONS[name]}`).join("\n")}`
        )
        assert.deepStrictEqual(problems, [])
        assert.strictEqual(wrapped.size + excepted.size, published.size)
        assert.deepStrictEqual(FIXED.filter((name) => !wrapped.has(name)), [])
        // A walk that found nothing would pass vacuously: the description publishes well over 200 operations.
        assert.isAtLeast(published.size, 250)
      }))
  })
})
