import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  adjustRequestTime,
  call,
  type CapturedLog,
  captureLogs,
  serveAppWithRequestClock,
  setRequestTime,
  testSettings,
  withoutRequestId
} from "../support/app.ts"
import { ProbeApp } from "../support/probe-api.ts"
import { SqlClient } from "effect/sql/SqlClient"

const json = (body: unknown, headers: Record<string, string> = {}) => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})
const key = (token: string) => ({ authorization: `Bearer ${token}` })

// Requests read a hand-set clock, so the deprecation table and rate windows follow the test.
const logs: Array<CapturedLog> = []

layer(
  serveAppWithRequestClock(testSettings(), ProbeApp).pipe(Layer.provide(captureLogs(logs))),
  { timeout: "60 seconds", excludeTestServices: true }
)("HTTP mechanisms", (it) => {
  describe("request validation: 400 validation_error naming the field", () => {
    it.effect("malformed JSON", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/items", json("{\"name\": ", key("svc_live_events")))
        assert.strictEqual(response.status, 400)
        assert.strictEqual(response.json.error.code, "validation_error")
        assert.strictEqual(response.json.error.message, "body: Expected a valid JSON body")
        assert.strictEqual(response.json.error.request_id, response.headers.get("x-request-id"))
      }))

    it.effect("wrong content type", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/items", {
          method: "POST",
          headers: { "content-type": "text/plain", ...key("svc_live_events") },
          body: "name=x"
        })
        assert.strictEqual(response.status, 400)
        assert.strictEqual(response.json.error.code, "validation_error")
        assert.include(response.json.error.message, "application/json")
      }))

    it.effect("a schema violation names the offending path", () =>
      Effect.gen(function*() {
        const missing = yield* call("/api/v1/probe/items", json({ items: [] }, key("svc_live_events")))
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.json.error.message, "body.name: Missing key")
        const nested = yield* call("/api/v1/probe/items", json({ name: "a", items: [{ qty: 1 }, { qty: "2" }] }, key("svc_live_events")))
        assert.strictEqual(nested.status, 400)
        assert.match(nested.json.error.message, /^body\.items\.1\.qty: /)
        const query = yield* call("/api/v1/probe/query?limit=ten")
        assert.strictEqual(query.status, 400)
        assert.match(query.json.error.message, /^query\.limit: /)
      }))

    it.effect("a valid request goes through", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/items", json({ name: "a", items: [{ qty: 1 }] }, key("svc_live_events")))
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(response.json, { data: { count: 1 } })
      }))
  })

  describe("body size cap", () => {
    it.effect("a chunked body (no Content-Length) over the cap is cut off: 413 payload_too_large", () =>
      Effect.gen(function*() {
        const chunk = new TextEncoder().encode(`{"name":"a","items":[],"pad":"${"x".repeat(16 * 1024)}`)
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            for (let i = 0; i < 6; i++) controller.enqueue(chunk)
            controller.enqueue(new TextEncoder().encode("\"}"))
            controller.close()
          }
        })
        const response = yield* call("/api/v1/probe/items", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer svc_live_payments" },
          body,
          duplex: "half"
        })
        assert.strictEqual(response.status, 413)
        assert.strictEqual(response.json.error.code, "payload_too_large")
        assert.strictEqual(response.json.error.request_id, response.headers.get("x-request-id"))
      }))
  })

  describe("defects", () => {
    it.effect("a defect is 500 internal_error with the request id and no stack trace", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/defect")
        assert.strictEqual(response.status, 500)
        assert.strictEqual(response.json.error.code, "internal_error")
        assert.strictEqual(response.json.error.request_id, response.headers.get("x-request-id"))
        assert.notInclude(response.text, "boom")
        assert.notInclude(response.text, "at ")
        const logged = logs.find((log) => log.requestId === response.json.error.request_id)
        assert.isDefined(logged, "the defect is logged with the request id")
        assert.strictEqual(logged?.level, "Error")
      }))
  })

  describe("credentials and scopes", () => {
    it.effect("authentication runs before body validation", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/items", json("not json"))
        assert.strictEqual(response.status, 401)
        assert.strictEqual(response.json.error.code, "unauthorized")
      }))

    it.effect("a key without the scope is 403 insufficient_scope naming it", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/items", json({ name: "a", items: [] }, key("svc_live_readonly")))
        assert.strictEqual(response.status, 403)
        assert.strictEqual(response.json.error.code, "insufficient_scope")
        assert.include(response.json.error.message, "events:write")
      }))

    it.effect("scope mode any: one of the scopes suffices", () =>
      Effect.gen(function*() {
        const ok = yield* call("/api/v1/probe/any-scope", { headers: key("svc_live_events") })
        assert.strictEqual(ok.status, 200)
        const refused = yield* call("/api/v1/probe/any-scope", { headers: key("svc_live_readonly") })
        assert.strictEqual(refused.status, 403)
        assert.include(refused.json.error.message, "conversions:read or customers:read")
      }))

    it.effect("a user token needs ?profile_id= on a profile route (400 invalid_request)", () =>
      Effect.gen(function*() {
        const missing = yield* call("/api/v1/probe/any-scope", { headers: key("svc_user_person") })
        assert.strictEqual(missing.status, 400)
        assert.strictEqual(missing.json.error.code, "invalid_request")
        const named = yield* call("/api/v1/probe/any-scope?profile_id=00000000-0000-4000-8000-000000000001", {
          headers: key("svc_user_person")
        })
        assert.strictEqual(named.status, 200)
      }))

    it.effect("a user token holds its MCP grant intersected with the person's membership on the named profile", () =>
      Effect.gen(function*() {
        // user-2 holds mcp:read + mcp:write; on profile 1 a guest viewer (dashboard, attribution, campaigns).
        const viewer = yield* call("/api/v1/probe/profile-read?profile_id=00000000-0000-4000-8000-000000000001", {
          headers: key("svc_user_writer")
        })
        assert.strictEqual(viewer.status, 200)
        assert.strictEqual(viewer.json.profile_id, "00000000-0000-4000-8000-000000000001")
        assert.deepStrictEqual([...viewer.json.scopes].sort(), ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"])
        // On profile 2 an admin: everything the grant gives.
        const admin = yield* call("/api/v1/probe/profile-read?profile_id=00000000-0000-4000-8000-000000000002", {
          headers: key("svc_user_writer")
        })
        assert.includeMembers(admin.json.scopes, ["goals:write", "profiles:write", "workspaces:write", "analytics:read"])
        assert.notInclude(admin.json.scopes, "events:write", "no MCP grant gives events:write")
      }))

    it.effect("the 403 names both halves: the grant lacks it, or the membership does", () =>
      Effect.gen(function*() {
        // The grant has no events:write whatever the membership.
        const grant = yield* call("/api/v1/probe/gated-write?profile_id=00000000-0000-4000-8000-000000000002", {
          method: "POST",
          headers: key("svc_user_writer")
        })
        assert.strictEqual(grant.status, 403)
        assert.strictEqual(grant.json.error.code, "insufficient_scope")
        assert.include(grant.json.error.message, "the token's MCP grant does not include events:write")
        assert.include(grant.json.error.message, "the person's membership allows it")
        // user-1's grant gives customers:read only; its guest membership (view:customers only) lacks analytics:read too.
        const both = yield* call("/api/v1/probe/profile-read?profile_id=00000000-0000-4000-8000-000000000001", {
          headers: key("svc_user_person")
        })
        assert.strictEqual(both.status, 403)
        assert.include(both.json.error.message, "the token's MCP grant does not include analytics:read")
        assert.include(both.json.error.message, "the person's membership (guest) does not allow analytics:read")
      }))

    it.effect("a user token's writes are refused while the workspace keeps MCP writeback off; its reads are not", () =>
      Effect.gen(function*() {
        const write = yield* call("/api/v1/probe/gated-write?profile_id=00000000-0000-4000-8000-000000000005", {
          method: "POST",
          headers: key("svc_user_writer")
        })
        assert.strictEqual(write.status, 403)
        assert.strictEqual(write.json.error.code, "insufficient_scope")
        assert.strictEqual(write.json.error.reason, "mcp_writeback_disabled")
        const read = yield* call("/api/v1/probe/profile-read?profile_id=00000000-0000-4000-8000-000000000005", {
          headers: key("svc_user_writer")
        })
        assert.strictEqual(read.status, 200)
      }))

    it.effect("a profile the person cannot reach is the same 404 as one that does not exist", () =>
      Effect.gen(function*() {
        const unreachable = yield* call("/api/v1/probe/profile-read?profile_id=00000000-0000-4000-8000-000000000004", {
          headers: key("svc_user_writer")
        })
        const unknown = yield* call(`/api/v1/probe/profile-read?profile_id=${crypto.randomUUID()}`, { headers: key("svc_user_writer") })
        const malformed = yield* call("/api/v1/probe/profile-read?profile_id=nope", { headers: key("svc_user_writer") })
        assert.strictEqual(unreachable.status, 404)
        assert.strictEqual(unreachable.json.error.code, "not_found")
        assert.strictEqual(withoutRequestId(unreachable.text), withoutRequestId(unknown.text))
        assert.strictEqual(withoutRequestId(unreachable.text), withoutRequestId(malformed.text))
      }))

    it.effect("attribution writes on the connect-broker tier: 409 entitlement_required for any principal, before the scope check", () =>
      Effect.gen(function*() {
        const brokerKey = yield* call("/api/v1/probe/gated-write", { method: "POST", headers: key("svc_live_broker") })
        assert.strictEqual(brokerKey.status, 409)
        assert.strictEqual(brokerKey.json.error.code, "entitlement_required")
        assert.include(brokerKey.json.error.message, "svc_attribution")
        const brokerToken = yield* call("/api/v1/probe/gated-write?profile_id=00000000-0000-4000-8000-000000000003", {
          method: "POST",
          headers: key("svc_user_writer")
        })
        assert.strictEqual(brokerToken.status, 409)
        assert.strictEqual(brokerToken.json.error.code, "entitlement_required")
        // Add-on on, key minted before it: the missing scope, fixed by a fresh key.
        const stale = yield* call("/api/v1/probe/gated-write", { method: "POST", headers: key("svc_live_stale") })
        assert.strictEqual(stale.status, 403)
        assert.strictEqual(stale.json.error.code, "insufficient_scope")
        assert.include(stale.json.error.message, "events:write")
        const entitled = yield* call("/api/v1/probe/gated-write", { method: "POST", headers: key("svc_live_events") })
        assert.strictEqual(entitled.status, 200)
      }))

    it.effect("a credential kind the operation does not accept is 403 insufficient_scope", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/probe/heavy", { headers: key("svc_user_person") })
        assert.strictEqual(response.status, 403)
        assert.strictEqual(response.json.error.code, "insufficient_scope")
      }))
  })

  describe("the PII access log", () => {
    it.effect("a person-data read is logged with the route template and its result, allowed or denied", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const allowed = yield* call("/api/v1/probe/customers?email=someone%40example.com", { headers: key("svc_user_person"), method: "GET" })
        assert.strictEqual(allowed.status, 400, "a user token must name the profile first: nothing to log yet")
        const ok = yield* call("/api/v1/probe/customers?profile_id=00000000-0000-4000-8000-000000000001", { headers: key("svc_user_person") })
        assert.strictEqual(ok.status, 200)
        const refused = yield* call("/api/v1/probe/customers", { headers: key("svc_live_events") })
        assert.strictEqual(refused.status, 403)
        const rows = yield* sql<{ actor_kind: string; actor_id: string; route: string; result: string; request_id: string; profile_id: string }>`
          SELECT actor_kind, actor_id, route, result, request_id, profile_id::text AS profile_id FROM pii_access_log
          WHERE request_id IN (${ok.headers.get("x-request-id")}, ${refused.headers.get("x-request-id")}) ORDER BY occurred_at`
        assert.deepStrictEqual(rows, [
          {
            actor_kind: "user_token",
            actor_id: "user-1",
            route: "GET /api/v1/probe/customers",
            result: "allowed",
            request_id: ok.headers.get("x-request-id") ?? "",
            profile_id: "00000000-0000-4000-8000-000000000001"
          },
          {
            actor_kind: "api_key",
            actor_id: "key-events",
            route: "GET /api/v1/probe/customers",
            result: "denied",
            request_id: refused.headers.get("x-request-id") ?? "",
            profile_id: "00000000-0000-4000-8000-000000000001"
          }
        ])
      }))
  })

  describe("rate limits", () => {
    it.effect("rate headers on every metered response; heavy calls cost 3; 429 carries Retry-After", () =>
      Effect.gen(function*() {
        yield* setRequestTime("2026-11-21T12:00:00Z")
        const first = yield* call("/api/v1/probe/heavy", { headers: key("svc_live_events") })
        assert.strictEqual(first.status, 200)
        assert.strictEqual(first.headers.get("x-ratelimit-limit"), "10")
        assert.strictEqual(first.headers.get("x-ratelimit-remaining"), "7")
        assert.isNotNull(first.headers.get("x-ratelimit-reset"))
        yield* call("/api/v1/probe/heavy", { headers: key("svc_live_events") })
        yield* call("/api/v1/probe/heavy", { headers: key("svc_live_events") })
        const limited = yield* call("/api/v1/probe/heavy", { headers: key("svc_live_events") })
        assert.strictEqual(limited.status, 429)
        assert.strictEqual(limited.json.error.code, "rate_limit_exceeded")
        const retryAfter = Number(limited.headers.get("retry-after"))
        assert.isAbove(retryAfter, 0)
        assert.strictEqual(limited.json.error.retry_after_seconds, retryAfter)
        yield* adjustRequestTime("61 seconds")
        const again = yield* call("/api/v1/probe/heavy", { headers: key("svc_live_events") })
        assert.strictEqual(again.status, 200)
      }))
  })

  describe("deprecation table, decided by the clock", () => {
    it.effect("a deprecated operation works and carries Deprecation, Sunset and Link", () =>
      Effect.gen(function*() {
        yield* setRequestTime("2026-11-21T12:00:00Z")
        const response = yield* call("/api/v1/goals", { method: "POST" })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("deprecation"), `@${Date.parse("2026-09-05T00:00:00Z") / 1000}`)
        assert.strictEqual(response.headers.get("sunset"), "Fri, 04 Dec 2026 00:00:00 GMT")
        assert.strictEqual(response.headers.get("link"), "</api/v1/goals/definitions>; rel=\"successor-version\"")
      }))

    it.effect("after its sunset the operation answers 404 not_found", () =>
      Effect.gen(function*() {
        yield* setRequestTime("2026-12-04T00:00:00Z")
        const response = yield* call("/api/v1/goals", { method: "POST" })
        assert.strictEqual(response.status, 404)
        assert.strictEqual(response.json.error.code, "not_found")
      }))
  })
})
