import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { latestMigrationId } from "../../migrations/index.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"

const requestIdPattern = /^req_[0-9a-f]{32}$/

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("HTTP envelope on the real app", (it) => {
  describe("unknown routes and unserved methods", () => {
    it.effect("an unknown route answers 404 not_found in the envelope, with X-Request-Id", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/does-not-exist")
        assert.strictEqual(response.status, 404)
        assert.strictEqual(response.headers.get("content-type"), "application/json")
        const requestId = response.headers.get("x-request-id")
        assert.match(requestId ?? "", requestIdPattern)
        assert.deepStrictEqual(response.json, {
          error: {
            code: "not_found",
            message: "No such resource or route.",
            status: 404,
            request_id: requestId,
            docs_url: "http://svc.test/docs/errors#not_found"
          }
        })
      }))

    it.effect("a method the route does not serve answers 404 not_found", () =>
      Effect.gen(function*() {
        const response = yield* call("/healthz", { method: "DELETE" })
        assert.strictEqual(response.status, 404)
        assert.strictEqual(response.json.error.code, "not_found")
        assert.strictEqual(response.json.error.request_id, response.headers.get("x-request-id"))
      }))
  })

  describe("request ids", () => {
    it.effect("every response carries X-Request-Id, success included", () =>
      Effect.gen(function*() {
        const response = yield* call("/healthz")
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(response.json, { status: "ok" })
        assert.match(response.headers.get("x-request-id") ?? "", requestIdPattern)
      }))

    it.effect("a well-formed incoming X-Request-Id is kept; a malformed one is replaced", () =>
      Effect.gen(function*() {
        const kept = yield* call("/api/v1/nope", { headers: { "x-request-id": "client-trace-0001" } })
        assert.strictEqual(kept.headers.get("x-request-id"), "client-trace-0001")
        assert.strictEqual(kept.json.error.request_id, "client-trace-0001")
        const replaced = yield* call("/api/v1/nope", { headers: { "x-request-id": "bad id<script>" } })
        assert.match(replaced.headers.get("x-request-id") ?? "", requestIdPattern)
      }))
  })

  describe("authentication", () => {
    it.effect("no credential on an operator route: 401 unauthorized", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/admin/status")
        assert.strictEqual(response.status, 401)
        assert.strictEqual(response.json.error.code, "unauthorized")
        assert.strictEqual(response.json.error.status, 401)
      }))

    it.effect("a wrong token and an unknown API key are 401 with the same envelope", () =>
      Effect.gen(function*() {
        for (const token of ["wrong-token", "svc_live_unknownkey0000000000000000"]) {
          const response = yield* call("/api/v1/admin/status", { headers: { authorization: `Bearer ${token}` } })
          assert.strictEqual(response.status, 401)
          assert.strictEqual(response.json.error.code, "unauthorized")
          assert.strictEqual(response.json.error.message, "Missing, invalid, expired or revoked credential.")
        }
      }))

    it.effect("the operator token reaches the operator status route", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/admin/status", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.json.data.version, "0.1.0")
        assert.strictEqual(response.json.data.database.reachable, true)
        assert.deepStrictEqual(response.json.data.database.migrations, { applied: latestMigrationId, latest: latestMigrationId })
      }))
  })

  describe("body size cap", () => {
    it.effect("a body over SVC_MAX_BODY_BYTES answers 413 payload_too_large before anything else runs", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/dashboard/chat", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text: "x".repeat(70 * 1024) })
        })
        assert.strictEqual(response.status, 413)
        assert.strictEqual(response.json.error.code, "payload_too_large")
        assert.strictEqual(response.json.error.message, "The request body is larger than the limit of 65536 bytes.")
      }))
  })

  describe("health and readiness", () => {
    it.effect("/healthz 200 and /readyz 200 with migrations applied", () =>
      Effect.gen(function*() {
        const health = yield* call("/healthz")
        assert.strictEqual(health.status, 200)
        const ready = yield* call("/readyz")
        assert.strictEqual(ready.status, 200)
        assert.strictEqual(ready.json.status, "ready")
        assert.strictEqual(ready.json.database.reachable, true)
        assert.deepStrictEqual(ready.json.migrations, { applied: latestMigrationId, latest: latestMigrationId })
        assert.strictEqual(ready.json.database.mode, process.env["DATABASE_URL"] ? "postgres" : "embedded")
      }))
  })

  describe("documentation", () => {
    it.effect("/docs/errors lists every code with an anchor and /docs renders the reference", () =>
      Effect.gen(function*() {
        const errors = yield* call("/docs/errors")
        assert.strictEqual(errors.status, 200)
        assert.include(errors.headers.get("content-type") ?? "", "text/html")
        for (const code of ["not_found", "validation_error", "server_error", "not_reversible", "database_unavailable"]) {
          assert.include(errors.text, `id="${code}"`)
        }
        const reference = yield* call("/docs")
        assert.strictEqual(reference.status, 200)
        assert.include(reference.text, "/api/v1/openapi.json")
        assert.include(reference.text, "/api/v1/admin/status")
        // The page renders one tag at a time: its picker lists them, each tag's document is served apart.
        assert.include(reference.text, '<option value="events">')
        const events = yield* call("/docs/openapi/events.json")
        assert.strictEqual(events.status, 200, events.text)
        assert.include(events.headers.get("content-type") ?? "", "application/json")
        const document = events.json as { readonly paths: Record<string, unknown>; readonly info: { readonly description: string } }
        assert.property(document.paths, "/api/v1/events")
        assert.notProperty(document.paths, "/api/v1/overview")
        assert.include(document.info.description, "## Quickstart")
        assert.isBelow(events.text.length, 150_000)
        const unknown = yield* call("/docs/openapi/no-such-tag.json")
        assert.strictEqual(unknown.status, 404)
        assert.strictEqual((unknown.json as { readonly error: { readonly code: string } }).error.code, "not_found")
        assert.isNotNull(unknown.headers.get("x-request-id"))
      }))
  })
})
