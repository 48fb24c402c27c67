/**
 * Query and path parameters (issue 14): the published description (`/api/v1/openapi.json`) and
 * the behaviour agree. Each case sends one value: the parameter's published schema accepts it
 * exactly when the server does; a refused value answers 400 `invalid_parameter` naming the
 * parameter (`query.<name>: ...`, `reason: invalid_parameter:<name>`), or `invalid_date_range`
 * where the spec says so (analytics dates and ranges).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, serveApp, testSettings } from "../support/app.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = [
  "analytics:read",
  "campaigns:read",
  "conversions:read",
  "customers:read",
  "connections:read",
  "goals:write",
  "tracking:write",
  "visitors:read"
]

interface Case {
  /** The operation's path as published, e.g. `/api/v1/breakdowns/{dimension}`. */
  readonly template: string
  /** The path actually requested (default: the template). */
  readonly path?: string
  readonly in?: "query" | "path"
  readonly name: string
  readonly value: string
  /** Other parameters the request carries. */
  readonly with?: Record<string, string>
  /** The answer: a refusal is 400, anything else shows the value went through. */
  readonly status: number
  /** Of a 400; default `invalid_parameter`. */
  readonly code?: string
}

const refused = (template: string, name: string, value: string, extra: Partial<Case> = {}): Case =>
  ({ template, name, value, status: 400, ...extra })
const accepted = (template: string, name: string, value: string, status = 200, extra: Partial<Case> = {}): Case =>
  ({ template, name, value, status, ...extra })

const CASES: ReadonlyArray<Case> = [
  // analytics
  accepted("/api/v1/overview", "channel", ""),
  accepted("/api/v1/overview", "campaign", " "),
  refused("/api/v1/overview", "model", "u_shaped"),
  accepted("/api/v1/overview", "model", "time_decay"),
  refused("/api/v1/overview", "days", "0"),
  refused("/api/v1/overview", "days", "7.5"),
  refused("/api/v1/overview", "days", "367", { code: "invalid_date_range" }),
  accepted("/api/v1/overview", "days", "366"),
  refused("/api/v1/overview", "start", "2026-02-30", { code: "invalid_date_range" }),
  refused("/api/v1/overview", "start", "03/01/2026", { code: "invalid_date_range" }),
  accepted("/api/v1/overview", "start", "2026-02-28", 200, { with: { end: "2026-03-01" } }),
  refused("/api/v1/overview", "conversion_key", "  "),
  refused("/api/v1/breakdowns/{dimension}", "dimension", "city", { in: "path", path: "/api/v1/breakdowns/city" }),
  accepted("/api/v1/breakdowns/{dimension}", "dimension", "os", 200, { in: "path", path: "/api/v1/breakdowns/os" }),
  refused("/api/v1/breakdowns/{dimension}", "limit", "201", { path: "/api/v1/breakdowns/country" }),
  accepted("/api/v1/breakdowns/{dimension}", "limit", "200", 200, { path: "/api/v1/breakdowns/country" }),
  refused("/api/v1/dimensions/{dimension}", "dimension", "City", { in: "path", path: "/api/v1/dimensions/City" }),
  refused("/api/v1/campaigns", "level", "adset"),
  accepted("/api/v1/campaigns", "level", "ad_set"),
  refused("/api/v1/campaigns/{id}/conversions", "limit", "0", { path: "/api/v1/campaigns/c1/conversions" }),
  refused("/api/v1/ads/{id}", "level", "creative", { path: "/api/v1/ads/a1" }),
  refused("/api/v1/attribution/ad-people", "group_by", "week"),
  accepted("/api/v1/attribution/ad-people", "group_by", "day"),
  refused("/api/v1/touches", "limit", "1e2"),
  // events
  refused("/api/v1/conversions", "limit", "201"),
  accepted("/api/v1/conversions", "limit", "200"),
  refused("/api/v1/conversions", "start", "yesterday"),
  refused("/api/v1/conversions", "start", "2026-02-30"),
  accepted("/api/v1/conversions", "start", "2026-11-21T14:20Z"),
  refused("/api/v1/conversions", "customer_key", ""),
  refused("/api/v1/conversions", "model", "best"),
  refused("/api/v1/outcomes/recorded", "limit", "+5"),
  accepted("/api/v1/outcomes/recorded", "limit", "200"),
  // payments
  refused("/api/v1/payments", "status", "void"),
  accepted("/api/v1/payments", "status", "refunded"),
  refused("/api/v1/payments/linkage", "model", "u_shaped"),
  refused("/api/v1/payments/linkage", "end", "2026-13-01"),
  // customers
  refused("/api/v1/customers/journey", "customer_key", "   "),
  accepted("/api/v1/customers/journey", "customer_key", " nobody ", 404),
  refused("/api/v1/customers", "limit", "101"),
  accepted("/api/v1/customers", "limit", "100"),
  refused("/api/v1/visitors", "limit", "ten"),
  // identity
  refused("/api/v1/identity/merge-proposals", "status", "maybe"),
  accepted("/api/v1/identity/merge-proposals", "status", "open"),
  refused("/api/v1/identity/merge-preview", "a", "not-a-uuid", { with: { b: crypto.randomUUID() } }),
  refused("/api/v1/identity/merge-history", "customer_profile_id", "42"),
  accepted("/api/v1/identity/merge-history", "customer_profile_id", crypto.randomUUID().toUpperCase(), 404),
  refused("/api/v1/identity/repair-scan", "offset", "-1"),
  refused("/api/v1/identity/repair-scan", "offset", "1000001"),
  accepted("/api/v1/identity/repair-scan", "offset", "0"),
  refused("/api/v1/identity/links", "status", "open"),
  accepted("/api/v1/identity/links", "status", "accepted"),
  // tracking
  refused("/api/v1/tracking/snippet", "bundle", "other", { with: { pixel_id: "123456789" } }),
  refused("/api/v1/tracking/snippet", "pixel_id", "abc", { with: { bundle: "adplatform_pixel" } }),
  accepted("/api/v1/tracking/snippet", "pixel_id", "123456789", 404, { with: { bundle: "adplatform_pixel" } }),
  refused("/api/v1/tracking/quality", "days", "91"),
  accepted("/api/v1/tracking/quality", "days", "90"),
  refused("/api/v1/tracking/events", "limit", "1.5"),
  // lists with the common page parameters
  refused("/api/v1/connections", "limit", "1e1"),
  accepted("/api/v1/connections", "limit", "100"),
  refused("/api/v1/goals/definitions", "limit", "0")
]

const KNOWN_KEYWORDS = new Set(["type", "pattern", "enum", "minLength", "format", "description", "default"])

const isRealDate = (value: string) => {
  const at = Date.parse(`${value}T00:00:00Z`)
  return !Number.isNaN(at) && new Date(at).toISOString().slice(0, 10) === value
}

/** Whether a parameter's published JSON Schema accepts `value` (the keywords these parameters use). */
const publishedAccepts = (schema: Record<string, any>, value: string): boolean => {
  for (const keyword of Object.keys(schema)) assert.isTrue(KNOWN_KEYWORDS.has(keyword), `unchecked keyword ${keyword}`)
  if (schema.type !== "string") return false
  if (schema.enum !== undefined && !schema.enum.includes(value)) return false
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) return false
  if (schema.minLength !== undefined && [...value].length < schema.minLength) return false
  if (schema.format === "date" && !isRealDate(value)) return false
  return true
}

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("query and path parameters", (it) => {
  describe("the published description and the behaviour agree", () => {
    it.effect("each value: accepted by the published schema exactly when the server takes it; refusals name the parameter", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 100_000 })
        const document = (yield* call("/api/v1/openapi.json")).json
        for (const c of CASES) {
          const where = c.in ?? "query"
          const label = `${c.template} ${where}.${c.name}=${JSON.stringify(c.value)}`
          const operation = document.paths[c.template]?.get
          assert.isDefined(operation, label)
          const parameter = operation.parameters.find((p: any) => p.name === c.name && p.in === where)
          assert.isDefined(parameter, label)
          assert.strictEqual(publishedAccepts(parameter.schema, c.value), c.status !== 400, `published schema: ${label}`)

          const query = new URLSearchParams({ ...c.with, ...(where === "query" ? { [c.name]: c.value } : {}) }).toString()
          const response = yield* call(`${c.path ?? c.template}${query === "" ? "" : `?${query}`}`, {
            headers: { authorization: `Bearer ${key}` }
          })
          assert.strictEqual(response.status, c.status, `${label}: ${response.text}`)
          if (c.status !== 400) continue
          const code = c.code ?? "invalid_parameter"
          assert.strictEqual(response.json.error.code, code, label)
          assert.include(response.json.error.message, c.name, label)
          if (code === "invalid_parameter") {
            assert.isTrue(response.json.error.message.startsWith(`${where}.${c.name}: `), `${label}: ${response.json.error.message}`)
            assert.strictEqual(response.json.error.reason, `invalid_parameter:${c.name}`, label)
          }
        }
      }))

    it.effect("an empty touch filter is a filter: the touches with no value for it, shown back in meta.filters", () =>
      Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 1000 })
        const response = yield* call("/api/v1/overview?channel=", { headers: { authorization: `Bearer ${key}` } })
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(response.json.data.filters.channel, "")
      }))
  })

  describe("the published description states the constraints", () => {
    it.effect("every /api/v1 read's limit, offset and days carry a pattern; model, status, level and group_by an enum; dates a pattern", () =>
      Effect.gen(function*() {
        const document = (yield* call("/api/v1/openapi.json")).json
        let checked = 0
        for (const [path, item] of Object.entries<any>(document.paths)) {
          if (!path.startsWith("/api/v1/") || item.get === undefined) continue
          for (const parameter of item.get.parameters ?? []) {
            if (parameter.in !== "query") continue
            const label = `${path} ${parameter.name}`
            assert.strictEqual(parameter.schema.type, "string", label)
            if (["limit", "offset", "days", "start", "end", "pixel_id"].includes(parameter.name)) {
              assert.isString(parameter.schema.pattern, label)
              checked++
            }
            if (["model", "status", "level", "group_by", "bundle"].includes(parameter.name)) {
              assert.isArray(parameter.schema.enum, label)
              checked++
            }
          }
        }
        assert.isAbove(checked, 100)
      }))
  })
})
