import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, serveAppWithRequestClock, setRequestTime, testSettings } from "../support/app.ts"

const retired = [
  "/api/v1/dashboard/chat",
  "/api/v1/workspaces/00000000-0000-4000-8000-0000000000aa/top-performers/chat"
]

// Requests of the real app read a hand-set clock: the deprecation table follows the test.
layer(serveAppWithRequestClock(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("versioning and the published description", (it) => {
  describe("retired operations", () => {
    it.effect("answer 410 feature_retired with Deprecation and Sunset until the sunset date", () =>
      Effect.gen(function*() {
        yield* setRequestTime("2027-01-07T23:59:59Z")
        for (const path of retired) {
          const response = yield* call(path, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
          assert.strictEqual(response.status, 410, path)
          assert.strictEqual(response.json.error.code, "feature_retired")
          assert.strictEqual(response.json.error.request_id, response.headers.get("x-request-id"))
          assert.strictEqual(response.headers.get("deprecation"), `@${Date.parse("2026-10-10T00:00:00Z") / 1000}`)
          assert.strictEqual(response.headers.get("sunset"), "Fri, 08 Jan 2027 00:00:00 GMT")
          assert.isNull(response.headers.get("link"))
        }
      }))

    it.effect("answer 404 not_found from the sunset date on", () =>
      Effect.gen(function*() {
        yield* setRequestTime("2027-01-08T00:00:00Z")
        for (const path of retired) {
          const response = yield* call(path, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
          assert.strictEqual(response.status, 404, path)
          assert.strictEqual(response.json.error.code, "not_found")
          assert.isNull(response.headers.get("deprecation"))
        }
      }))
  })

  describe("GET /api/v1/openapi.json", () => {
    it.effect("serves OpenAPI 3.1 without a credential; every operation carries the x- extensions", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/openapi.json")
        assert.strictEqual(response.status, 200)
        const spec = response.json
        assert.match(spec.openapi, /^3\.1/)
        const operations: Array<[string, string, any]> = []
        for (const [path, item] of Object.entries<Record<string, any>>(spec.paths)) {
          for (const [method, op] of Object.entries(item)) operations.push([method.toUpperCase(), path, op])
        }
        const listed = operations.map(([method, path]) => `${method} ${path}`)
        for (
          const expected of [
            "GET /healthz",
            "GET /readyz",
            "GET /api/v1/openapi.json",
            "GET /api/v1/admin/status",
            "POST /api/v1/dashboard/chat",
            "POST /api/v1/workspaces/{workspaceId}/top-performers/chat"
          ]
        ) assert.include(listed, expected)
        for (const [method, path, op] of operations) {
          const where = `${method} ${path}`
          assert.isArray(op["x-scopes"], where)
          assert.isArray(op["x-auth"], where)
          assert.include(["required", "optional", "none"], op["x-idempotency"], where)
          assert.include(["profile", "workspace", "app", "none"], op["x-scope-grain"], where)
        }
        const status = spec.paths["/api/v1/admin/status"].get
        assert.deepStrictEqual(status["x-auth"], ["operator"])
        assert.deepStrictEqual(status.security, [{ operatorToken: [] }])
        assert.property(spec.components.securitySchemes, "apiKey")
        assert.property(status.responses, "401")
        assert.strictEqual(spec.paths["/api/v1/dashboard/chat"].post.deprecated, true)
      }))
  })
})
