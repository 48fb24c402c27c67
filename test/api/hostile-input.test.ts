/**
 * Hostile input at the edge: malformed Basic credentials, NUL and lone surrogates in the URL
 * and in bodies. Each answers a documented 4xx, in the OAuth format on the OAuth routes, and
 * writes nothing.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call, serveApp, testSettings } from "../support/app.ts"
import { ingest, seedEventsProfile } from "../support/events.ts"

const basic = (pair: string) => `Basic ${Buffer.from(pair).toString("base64")}`

interface Operation {
  readonly method: string
  readonly path: string
  readonly auth: ReadonlyArray<string>
}

const operationsOf = (document: { readonly paths: Record<string, Record<string, { readonly "x-auth"?: ReadonlyArray<string> }>> }) =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]): ReadonlyArray<Operation> =>
      ["get", "post", "put", "patch", "delete"].includes(method) ? [{ method: method.toUpperCase(), path, auth: operation["x-auth"] ?? [] }] : []
    )
  )

/** A concrete path for a templated one: every parameter a well-formed id that names nothing. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000000")

const eventCount = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) => sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM outcome_events WHERE profile_id = ${profileId}`)
    .pipe(Effect.map((rows) => rows[0]?.n ?? -1))

layer(serveApp(testSettings()), { timeout: "120 seconds", excludeTestServices: true })("hostile input", (it) => {
  describe("malformed HTTP Basic credentials", () => {
    it.effect("a malformed percent-escape answers 401 unauthorized on every /api/v1 route that checks credentials, never 500", () =>
      Effect.gen(function*() {
        const document = (yield* call("/api/v1/openapi.json")).json
        const checked = operationsOf(document).filter((operation) =>
          operation.path.startsWith("/api/v1/") && operation.auth.length > 0 && !operation.auth.includes("public")
        )
        assert.isAbove(checked.length, 50)
        const unexpected: Array<string> = []
        for (const operation of checked) {
          for (const pair of ["a:%", "%E0:x", "%zz:%"]) {
            const response = yield* call(concrete(operation.path), {
              method: operation.method,
              headers: { authorization: basic(pair), "content-type": "application/json" },
              ...(operation.method === "GET" || operation.method === "DELETE" ? {} : { body: "{}" })
            })
            // Retired operations answer 410 to everyone, before credentials.
            const code = response.json?.error?.code
            if (!(response.status === 401 && code === "unauthorized") && !(response.status === 410 && code === "feature_retired")) {
              unexpected.push(`${operation.method} ${operation.path} ${pair}: ${response.status} ${response.text.slice(0, 120)}`)
            }
          }
        }
        assert.deepStrictEqual(unexpected, [])
      }))

    it.effect("/oauth/token answers 401 invalid_client in the OAuth format", () =>
      Effect.gen(function*() {
        for (const pair of ["a:%", "%E0:x", "x%00:y"]) {
          const response = yield* call("/oauth/token", {
            method: "POST",
            headers: { authorization: basic(pair), "content-type": "application/x-www-form-urlencoded" },
            body: "grant_type=client_credentials"
          })
          assert.strictEqual(response.status, 401)
          assert.strictEqual(response.json.error, "invalid_client")
        }
      }))
  })

  describe("NUL and lone surrogates", () => {
    it.effect("in a query parameter: 400 invalid_parameter naming it", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const response = yield* call("/api/v1/conversions?customer_key=a%00b", { headers: { authorization: `Bearer ${profile.key}` } })
        assert.strictEqual(response.status, 400)
        assert.strictEqual(response.json.error.code, "invalid_parameter")
        assert.match(response.json.error.message, /^query\.customer_key: /)
        assert.strictEqual(response.json.error.request_id, response.headers.get("x-request-id"))
      }))

    it.effect("in a path parameter: 400 invalid_parameter", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const response = yield* call("/api/v1/customers/a%00b/journey", { headers: { authorization: `Bearer ${profile.key}` } })
        assert.strictEqual(response.status, 400)
        assert.strictEqual(response.json.error.code, "invalid_parameter")
        assert.match(response.json.error.message, /^path: /)
      }))

    it.effect("in a JSON body (value or key, NUL or lone surrogate): 400 validation_error naming the field, nothing written", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const cases: ReadonlyArray<readonly [string, string]> = [
          [`{"event_name":"purchase\\u0000","idempotency_key":"k1"}`, "body.event_name"],
          [`{"event_name":"purchase","idempotency_key":"k2","properties":{"note":"\\ud800x"}}`, "body.properties.note"],
          [`{"event_name":"purchase","idempotency_key":"k3","properties":{"a\\u0000":"x"}}`, "body.properties.(key)"],
          [`{"event_name":"purchase","idempotency_key":"k4","properties":{"list":["ok","\\udc00"]}}`, "body.properties.list.1"]
        ]
        for (const [body, field] of cases) {
          const response = yield* ingest(profile.key, body)
          assert.strictEqual(response.status, 400, body)
          assert.strictEqual(response.json.error.code, "validation_error")
          assert.strictEqual(response.json.error.message.split(": ")[0], field)
        }
        assert.strictEqual(yield* eventCount(profile.profileId), 0)
      }))

    it.effect("a surrogate pair written as escapes is ordinary text", () =>
      Effect.gen(function*() {
        const profile = yield* seedEventsProfile()
        const response = yield* ingest(profile.key, `{"event_name":"purchase","idempotency_key":"emoji","properties":{"note":"\\ud83d\\ude00"}}`)
        assert.strictEqual(response.status, 200, response.text)
        assert.strictEqual(yield* eventCount(profile.profileId), 1)
      }))

    it.effect("the OAuth browser pages answer an HTML error page; the OAuth endpoints invalid_request", () =>
      Effect.gen(function*() {
        for (const path of ["/oauth/authorize?client_id=%00&response_type=code", "/oauth/mcp/authorize?client_id=%00&response_type=code"]) {
          const page = yield* call(path)
          assert.strictEqual(page.status, 400, path)
          assert.match(page.headers.get("content-type") ?? "", /^text\/html/)
          assert.isNotNull(page.headers.get("x-request-id"))
        }
        const token = yield* call("/oauth/token", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "grant_type=client_credentials&client_id=a%00&client_secret=b"
        })
        assert.strictEqual(token.status, 400)
        assert.strictEqual(token.json.error, "invalid_request")
        assert.match(token.json.error_description, /body\.client_id/)
      }))
  })
})
