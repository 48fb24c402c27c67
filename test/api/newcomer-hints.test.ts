/**
 * What a newcomer stumbles on after the first event (issue 15, part 5; decision 0051):
 * `meta.as_of` on rollup-backed reads, the UTM breakdown dimensions, the
 * `no_conversion_definition` warning on ingest, the access log line and the operator-access 401.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Logger, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AnalyticsRollupSettings, defaultRollupSettings } from "../../src/analytics/rollups/repo.ts"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { jsonLogger } from "../../src/platform/logging.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { credit, drain, get, insertConversion, insertTouch, seedAnalyticsProfile } from "../support/analytics.ts"
import { defineConversion, ingest } from "../support/events.ts"

/** The rollups move only when a test drains them, and nothing credits behind the fixtures' back. */
const stepped = Layer.mergeAll(
  Layer.succeed(AnalyticsRollupSettings)({ ...defaultRollupSettings, enabled: false }),
  Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })
)

/** Every JSON log line the app writes, parsed. */
const lines: Array<Record<string, unknown>> = []
const capture = Logger.layer([Logger.map(jsonLogger, (line) => {
  lines.push(JSON.parse(line))
})])

const scopes = ["analytics:read", "campaigns:read", "events:write"]

const metaOf = (response: { readonly json: unknown }): Record<string, unknown> => {
  const json = response.json
  if (typeof json !== "object" || json === null || !("meta" in json) || typeof json.meta !== "object" || json.meta === null) {
    throw new Error(`no meta in ${JSON.stringify(json)}`)
  }
  return { ...json.meta }
}

const asOfOf = (response: { readonly json: unknown }) => {
  const asOf = metaOf(response)["as_of"]
  if (typeof asOf !== "string") throw new Error(`no meta.as_of in ${JSON.stringify(response.json)}`)
  assert.match(asOf, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
  return Date.parse(asOf)
}

layer(serveApp(testSettings({ logLevel: "Info" })).pipe(Layer.provide(stepped), Layer.provide(capture)), { timeout: "120 seconds", excludeTestServices: true })(
  "newcomer hints",
  (it) => {
    describe("meta.as_of", () => {
      it.effect("is before an event's recording time until the rollups take it, then after it", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const profile = yield* seedAnalyticsProfile(scopes)
          yield* defineConversion(profile.profileId, "purchase", ["purchase"])
          yield* drain
          const sent = yield* ingest(profile.key, { event_name: "purchase", idempotency_key: crypto.randomUUID() })
          assert.strictEqual(sent.status, 200)
          const [row] = yield* sql<{ created_at: Date }>`
            SELECT created_at FROM conversions WHERE outcome_event_id = ${sent.json.data.outcome_event_id}`
          const recordedAt = row!.created_at.getTime()

          const stale = yield* get(profile.key, "/api/v1/overview", { days: "1" })
          assert.strictEqual(stale.status, 200)
          assert.strictEqual(stale.json.data.current.outcomes, 0)
          assert.isAtMost(asOfOf(stale), recordedAt, "the event is not in the rollups: as_of must not pass it")
          // Every rollup-backed read says the same.
          for (const path of ["/api/v1/timeseries", "/api/v1/breakdowns/channel", "/api/v1/attribution/models", "/api/v1/dimensions/channel", "/api/v1/quality", "/api/v1/campaigns", "/api/v1/campaigns/unattributed", "/api/v1/ads/trend"]) {
            const read = yield* get(profile.key, path, { days: "1" })
            assert.strictEqual(read.status, 200, path)
            assert.isAtMost(asOfOf(read), recordedAt, path)
          }

          yield* drain
          const fresh = yield* get(profile.key, "/api/v1/overview", { days: "1" })
          assert.strictEqual(fresh.json.data.current.outcomes, 1)
          assert.isAtLeast(asOfOf(fresh), recordedAt)
          assert.isAtMost(asOfOf(fresh), Date.now())
        }))

      it.effect("is published in the operations' schemas", () =>
        Effect.gen(function*() {
          const spec = (yield* call("/api/v1/openapi.json")).json
          const successOf = (path: string) => spec.paths[path].get.responses["200"].content["application/json"].schema
          const resolve = (schema: { $ref?: string; properties?: Record<string, unknown> }): { properties: Record<string, any> } =>
            schema.$ref === undefined ? schema as { properties: Record<string, any> } : resolve(spec.components.schemas[schema.$ref.split("/").pop()!])
          for (const path of ["/api/v1/overview", "/api/v1/timeseries", "/api/v1/breakdowns/{dimension}", "/api/v1/campaigns", "/api/v1/attribution/models"]) {
            const meta = resolve(resolve(successOf(path)).properties["meta"])
            assert.property(meta.properties, "as_of", path)
            assert.include(spec.paths[path].get.description, "meta.as_of", path)
          }
        }))
    })

    describe("UTM dimensions", () => {
      it.effect("utm_campaign, utm_source and utm_medium are breakdowns kept by the rollups", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const profile = yield* seedAnalyticsProfile(scopes)
          const p = profile.profileId
          const at = new Date(Date.now() - 3_600_000).toISOString()
          const newsletter = yield* insertTouch(p, {
            at, channel: "email", utm: { utm_campaign: "spring_news", utm_source: "newsletter", utm_medium: "email" }
          })
          yield* insertTouch(p, { at, channel: "referral", utm: { utm_source: "partner_site", utm_medium: "referral" } })
          yield* insertTouch(p, { at, channel: "direct" })
          const { id: sale } = yield* insertConversion(p, { at, key: "sale", value: "40", cash: true, first: true })
          yield* credit(sale, "last_touch", newsletter, "1")
          yield* drain

          const campaigns = yield* get(profile.key, "/api/v1/breakdowns/utm_campaign", { days: "2" })
          assert.strictEqual(campaigns.status, 200)
          assert.deepStrictEqual(
            campaigns.json.data.map((row: { value: string | null; touches: number; conversions: number; credited_revenue: string }) => [
              row.value, row.touches, row.conversions, row.credited_revenue
            ]),
            [["spring_news", 1, 1, "40"], [null, 2, 0, "0"]]
          )
          assert.strictEqual(metaOf(campaigns)["dimension"], "utm_campaign")
          const sources = yield* get(profile.key, "/api/v1/breakdowns/utm_source", { days: "2" })
          assert.deepStrictEqual(
            sources.json.data.map((row: { value: string | null; touches: number; conversions: number }) => [row.value, row.touches, row.conversions]),
            [["newsletter", 1, 1], [null, 1, 0], ["partner_site", 1, 0]]
          )
          // Within a filter on another dimension the same rows come from the raw facts (decision 0045).
          const filtered = yield* get(profile.key, "/api/v1/breakdowns/utm_medium", { days: "2", channel: "email" })
          assert.deepStrictEqual(
            filtered.json.data.map((row: { value: string | null; touches: number; conversions: number }) => [row.value, row.touches, row.conversions]),
            [["email", 1, 1]]
          )
          const values = yield* get(profile.key, "/api/v1/dimensions/utm_medium", { days: "2" })
          assert.deepStrictEqual(
            values.json.data.map((row: { value: string | null; touches: number }) => [row.value, row.touches]),
            [[null, 1], ["email", 1], ["referral", 1]]
          )

          // Retagging a touch marks its days like any other dimension change.
          yield* sql`
            UPDATE touches SET payload = jsonb_set(payload, '{utm,utm_campaign}', '"spring_news_v2"') WHERE id = ${newsletter}`
          const [pending] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM analytics_dirty WHERE profile_id = ${p}`
          assert.isAbove(pending!.n, 0)
          yield* drain
          const renamed = yield* get(profile.key, "/api/v1/breakdowns/utm_campaign", { days: "2" })
          assert.deepStrictEqual(renamed.json.data[0].value, "spring_news_v2")
          assert.strictEqual(renamed.json.data[0].conversions, 1)
        }))

      it.effect("an unknown dimension still answers 400 naming the allowed values", () =>
        Effect.gen(function*() {
          const profile = yield* seedAnalyticsProfile(scopes)
          const response = yield* get(profile.key, "/api/v1/breakdowns/utm_content")
          assert.strictEqual(response.status, 400)
          assert.include(response.text, "utm_campaign")
        }))
    })

    describe("ingest warnings", () => {
      it.effect("an event no definition lists answers no_conversion_definition; a defined one answers no meta", () =>
        Effect.gen(function*() {
          const profile = yield* seedAnalyticsProfile(scopes)
          yield* defineConversion(profile.profileId, "purchase", ["purchase"])
          const unknown = yield* ingest(profile.key, { event_name: "purchace", idempotency_key: crypto.randomUUID() })
          assert.strictEqual(unknown.status, 200)
          assert.strictEqual(unknown.json.data.conversion_id, null)
          assert.deepStrictEqual(unknown.json.meta.warnings.map((warning: { code: string }) => warning.code), ["no_conversion_definition"])
          assert.include(unknown.json.meta.warnings[0].message, "\"purchace\"")
          const known = yield* ingest(profile.key, { event_name: "purchase", idempotency_key: crypto.randomUUID() })
          assert.isString(known.json.data.conversion_id)
          assert.notProperty(known.json, "meta")
          // A replay of the same key answers the same, warning included.
          const key = crypto.randomUUID()
          const first = yield* ingest(profile.key, { event_name: "signup", idempotency_key: key })
          const again = yield* ingest(profile.key, { event_name: "signup", idempotency_key: key })
          assert.deepStrictEqual(again.json, first.json)
        }))
    })

    describe("access log", () => {
      it.effect("one JSON line per request with method, route template, status, duration, ids, principal and profile", () =>
        Effect.gen(function*() {
          const profile = yield* seedAnalyticsProfile(scopes)
          const read = yield* get(profile.key, "/api/v1/breakdowns/country", { days: "3" })
          assert.strictEqual(read.status, 200)
          const requestId = read.headers.get("x-request-id")
          const mine = lines.filter((line) => line["request_id"] === requestId && line["route"] !== undefined)
          assert.strictEqual(mine.length, 1)
          const line = mine[0]!
          assert.strictEqual(line["message"], "GET /api/v1/breakdowns/:dimension 200")
          assert.strictEqual(line["level"], "INFO")
          assert.strictEqual(line["method"], "GET")
          assert.strictEqual(line["route"], "/api/v1/breakdowns/:dimension")
          assert.strictEqual(line["status"], 200)
          assert.isNumber(line["duration_ms"])
          assert.isAtLeast(line["duration_ms"] as number, 0)
          // The JSON logger names the trace when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT; telemetry.test.ts); here it is off.
          if (line["trace_id"] !== undefined) assert.match(String(line["trace_id"]), /^[0-9a-f]{32}$/)
          assert.strictEqual(line["principal_kind"], "api_key")
          assert.strictEqual(line["profile_id"], profile.profileId)

          const missing = yield* call("/no/such/route?email=someone@example.com")
          assert.strictEqual(missing.status, 404)
          const notFound = lines.find((line) => line["request_id"] === missing.headers.get("x-request-id") && line["route"] !== undefined)
          assert.strictEqual(notFound?.["status"], 404)
          assert.strictEqual(notFound?.["principal_kind"], null)
          assert.notInclude(JSON.stringify(notFound), "example.com")

          const refused = yield* call("/api/v1/overview")
          assert.strictEqual(refused.status, 401)
          const unauthenticated = lines.find((line) => line["request_id"] === refused.headers.get("x-request-id") && line["route"] !== undefined)
          assert.deepInclude(unauthenticated, { route: "/api/v1/overview", status: 401, principal_kind: null, profile_id: null })
        }))

      it.effect("every message is a string", () =>
        Effect.gen(function*() {
          const before = lines.length
          yield* Effect.logWarning("two parts", { detail: 1 }).pipe(Effect.provide(capture))
          yield* Effect.logWarning({ only: "an object" }).pipe(Effect.provide(capture))
          const [both, alone] = lines.slice(before)
          assert.deepInclude(both, { message: "two parts", details: { detail: 1 } })
          assert.deepInclude(alone, { message: "{\"only\":\"an object\"}", details: { only: "an object" } })
          for (const line of lines) assert.isString(line["message"])
        }))
    })
  }
)

layer(serveApp(testSettings({ adminToken: Option.none() })).pipe(Layer.provide(stepped)), { timeout: "120 seconds", excludeTestServices: true })(
  "operator access off",
  (it) => {
    it.effect("an operator route says that operator access is off and how to turn it on", () =>
      Effect.gen(function*() {
        for (const headers of [{}, { authorization: "Bearer some-guess-0123456789" }]) {
          const response = yield* call("/api/v1/admin/oauth-apps", { headers })
          assert.strictEqual(response.status, 401)
          assert.strictEqual(response.json.error.code, "unauthorized")
          assert.strictEqual(response.json.error.reason, "operator_access_off")
          assert.include(response.json.error.message, "Operator access over HTTP is off")
          assert.include(response.json.error.message, "SVC_ADMIN_TOKEN")
        }
        // Other routes keep the usual answer.
        const other = yield* call("/api/v1/overview")
        assert.strictEqual(other.json.error.message, "Authentication required.")
      }))
  }
)
