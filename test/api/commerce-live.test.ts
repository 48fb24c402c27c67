/**
 * The live commerce reads (decision 0061) over real HTTP against the commerce sandbox served by
 * the app itself: connected through the real hand-off with `shop`, read live (a change at the
 * store shows at once: no copy), refusals, faults mapped, the PII access log.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "commerce:live"]

const bearer = (key: string, method = "GET", body?: unknown) => ({
  method,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** A test-control call on the key's profile's sandbox store world (decision 0109). */
const sandbox = (key: string, method: string, path: string, body?: unknown) =>
  call(`/sandbox/commerce/${path}`, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A profile with a key holding `scopes`. */
const newProfile = Effect.fn("test.newProfile")(function*(scopes: ReadonlyArray<string> = SCOPES) {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 1000 })
  return { profile, key }
})

/** Connects `shop` to the profile through the hand-off and the sandbox consent. */
const connectShop = Effect.fn("test.connectShop")(function*(key: string, shop: string) {
  yield* connectProvider(key, "commerce", { shop })
  const list = yield* call("/api/v1/connections", bearer(key))
  const connection = list.json.data.find((c: { provider: string }) => c.provider === "commerce")
  assert.isDefined(connection, list.text)
  assert.strictEqual(connection.status, "active", list.text)
  return connection as { id: string; provider_account_id: string }
})

const piiRows = (profile: SeededProfile) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ route: string; result: string; actor_kind: string }>`
      SELECT route, result, actor_kind FROM pii_access_log WHERE profile_id = ${profile.profileId} ORDER BY occurred_at, id`)

interface LiveVariant {
  readonly id: string
  readonly stock: number
}
interface LiveOrder {
  readonly id: string
  readonly status: string
  readonly email: string | null
  readonly phone: string | null
  readonly updated_at: string
}

layer(serveAppOnOwnPort(), { timeout: "180 seconds", excludeTestServices: true })("commerce live reads", (it) => {
  describe("products", () => {
    it.effect("answers the store's catalogue with stock, read live: a stock change at the store shows at once", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        yield* connectShop(key, "live-products")
        const first = yield* call("/api/v1/commerce/live/products?limit=2", bearer(key))
        assert.strictEqual(first.status, 200, first.text)
        assert.isAtMost(first.json.data.length, 2)
        assert.isAbove(first.json.data.length, 0)
        const product = first.json.data[0]
        assert.hasAllKeys(product, ["id", "title", "handle", "status", "variants", "updated_at"])
        const variant: LiveVariant = product.variants[0]
        assert.isNumber(variant.stock)

        // The store's own cursor pages on, and the next page holds other products.
        if (first.json.pagination.has_next) {
          const second = yield* call(
            `/api/v1/commerce/live/products?limit=2&cursor=${encodeURIComponent(first.json.pagination.cursor)}`,
            bearer(key)
          )
          assert.strictEqual(second.status, 200, second.text)
          const firstIds = first.json.data.map((p: { id: string }) => p.id)
          for (const p of second.json.data) assert.notInclude(firstIds, p.id)
        }

        const moved = yield* sandbox(key, "PATCH", "_state", { objects: [{ id: variant.id, stock: variant.stock + 37 }] })
        assert.isBelow(moved.status, 300, moved.text)
        const again = yield* call("/api/v1/commerce/live/products?limit=2", bearer(key))
        assert.strictEqual(again.status, 200, again.text)
        const seen: LiveVariant = again.json.data[0].variants.find((v: LiveVariant) => v.id === variant.id)
        assert.strictEqual(seen.stock, variant.stock + 37)
      }))

    it.effect("a cursor the store did not cut is 400 invalid_parameter, never a 5xx", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        yield* connectShop(key, "live-cursor")
        const bad = yield* call("/api/v1/commerce/live/products?cursor=not-a-store-cursor", bearer(key))
        assert.strictEqual(bad.status, 400, bad.text)
        assert.strictEqual(bad.json.error.code, "invalid_parameter")
        assert.strictEqual(bad.json.error.reason, "cursor")
      }))
  })

  describe("orders", () => {
    it.effect("orders changed since a time with buyer email and phone; an order moved at the store shows at once; logged", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        yield* connectShop(key, "live-orders")
        const since = new Date(Date.now() - 1000).toISOString()
        const arrived = yield* sandbox(key, "PATCH", "_state", {
          arrive: { kind: "order", shop: "live-orders", email: "buyer@example.com", phone: "+34600111222", status: "paid" }
        })
        assert.strictEqual(arrived.status, 201, arrived.text)
        const orderId: string = arrived.json.order.id
        const withheld = yield* sandbox(key, "PATCH", "_state", { arrive: { kind: "order", shop: "live-orders", status: "created" } })
        assert.strictEqual(withheld.status, 201, withheld.text)

        const read = yield* call(`/api/v1/commerce/live/orders?updated_since=${encodeURIComponent(since)}`, bearer(key))
        assert.strictEqual(read.status, 200, read.text)
        const orders: ReadonlyArray<LiveOrder> = read.json.data
        const mine = orders.find((o) => o.id === orderId)
        assert.isDefined(mine, read.text)
        assert.strictEqual(mine?.email, "buyer@example.com")
        assert.strictEqual(mine?.phone, "+34600111222")
        assert.strictEqual(mine?.status, "paid")
        for (const o of orders) assert.isAtLeast(Date.parse(o.updated_at), Date.parse(since) - 1)
        const other = orders.find((o) => o.id === withheld.json.order.id)
        assert.isDefined(other, read.text)
        // The buyer withheld both: null, not absent.
        assert.isNull(other?.email)
        assert.isNull(other?.phone)
        assert.notProperty(mine, "customer_id")
        assert.notProperty(mine, "cart_token")

        const shipped = yield* sandbox(key, "PATCH", "_state", { objects: [{ id: orderId, status: "fulfilled" }] })
        assert.isBelow(shipped.status, 300, shipped.text)
        const after = yield* call(`/api/v1/commerce/live/orders?updated_since=${encodeURIComponent(since)}`, bearer(key))
        assert.strictEqual(after.status, 200, after.text)
        assert.strictEqual(after.json.data.find((o: LiveOrder) => o.id === orderId)?.status, "fulfilled")

        // Every orders read is in the PII access log, by route template, never the URL.
        const rows = yield* piiRows(profile)
        const logged = rows.filter((r) => r.route === "GET /api/v1/commerce/live/orders")
        assert.strictEqual(logged.length, 2, JSON.stringify(rows))
        assert.deepStrictEqual(logged.map((r) => [r.result, r.actor_kind]), [["allowed", "api_key"], ["allowed", "api_key"]])
        assert.isFalse(rows.some((r) => r.route.includes("products")))
      }))

    it.effect("updated_since missing or not ISO 8601 is 400 invalid_parameter; a limit past 100 too", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        for (const query of ["", "?updated_since=yesterday", "?updated_since=2026-02-30", "?updated_since=2026-11-20T10:00:00Z&limit=101"]) {
          const answer = yield* call(`/api/v1/commerce/live/orders${query}`, bearer(key))
          assert.strictEqual(answer.status, 400, `${query}: ${answer.text}`)
          assert.strictEqual(answer.json.error.code, "invalid_parameter", answer.text)
        }
      }))

    it.effect("refused on a healthcare-family profile (403), logged as denied", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        yield* connectShop(key, "live-health")
        yield* Effect.flatMap(SqlClient, (sql) => sql`UPDATE profiles SET privacy_mode = 'hipaa' WHERE id = ${profile.profileId}`)
        const answer = yield* call("/api/v1/commerce/live/orders?updated_since=2026-01-01", bearer(key))
        assert.strictEqual(answer.status, 403, answer.text)
        assert.strictEqual(answer.json.error.code, "insufficient_scope")
        assert.strictEqual(answer.json.error.reason, "healthcare_family_profile")
        const rows = yield* piiRows(profile)
        assert.deepStrictEqual(rows.map((r) => r.result), ["denied"])
        // The catalogue holds no person data: still answered.
        const products = yield* call("/api/v1/commerce/live/products", bearer(key))
        assert.strictEqual(products.status, 200, products.text)
      }))
  })

  describe("refusals and provider failures", () => {
    it.effect("a key without commerce:live is 403 insufficient_scope", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile(["connections:read", "commerce:read"])
        for (const path of ["/api/v1/commerce/live/products", "/api/v1/commerce/live/orders?updated_since=2026-01-01"]) {
          const answer = yield* call(path, bearer(key))
          assert.strictEqual(answer.status, 403, answer.text)
          assert.strictEqual(answer.json.error.code, "insufficient_scope")
        }
      }))

    it.effect("no commerce connection is 409 invalid_state commerce_connection_required", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        for (const path of ["/api/v1/commerce/live/products", "/api/v1/commerce/live/orders?updated_since=2026-01-01"]) {
          const answer = yield* call(path, bearer(key))
          assert.strictEqual(answer.status, 409, answer.text)
          assert.strictEqual(answer.json.error.code, "invalid_state")
          assert.strictEqual(answer.json.error.reason, "commerce_connection_required")
        }
      }))

    it.effect("a store that keeps throttling is 429 with Retry-After; one that fails is 502; a dead grant is 409 reconnect_required", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        const connection = yield* connectShop(key, "live-faults")

        // One throttled answer is retried by the client and never seen.
        yield* sandbox(key, "POST", "_faults", { throttle: 1 })
        const retried = yield* call("/api/v1/commerce/live/products?limit=1", bearer(key))
        assert.strictEqual(retried.status, 200, retried.text)

        yield* sandbox(key, "POST", "_faults", { throttle: 100 })
        const throttled = yield* call("/api/v1/commerce/live/products?limit=1", bearer(key))
        yield* sandbox(key, "POST", "_faults", { throttle: 0 })
        assert.strictEqual(throttled.status, 429, throttled.text)
        assert.strictEqual(throttled.json.error.code, "rate_limit_exceeded")
        assert.isAtLeast(Number(throttled.headers.get("retry-after")), 1)

        yield* sandbox(key, "POST", "_faults", { fail_next: 100 })
        const failing = yield* call("/api/v1/commerce/live/products?limit=1", bearer(key))
        yield* sandbox(key, "POST", "_faults", { fail_next: 0 })
        assert.strictEqual(failing.status, 502, failing.text)
        assert.strictEqual(failing.json.error.code, "adplatform_unavailable")
        assert.strictEqual(failing.json.error.reason, "store_unavailable")

        // The commerce platform's grant death is the app's uninstall (`app/uninstalled`): a read racing the push is
        // 409 `reconnect_required` (the store's 401), and once the push lands the connection is revoked (decision 0064).
        yield* sandbox(key, "POST", "_faults", { revoke_tokens: true })
        const dead = yield* call("/api/v1/commerce/live/products?limit=1", bearer(key))
        yield* sandbox(key, "POST", "_faults", { revoke_tokens: false })
        assert.strictEqual(dead.status, 409, dead.text)
        assert.include(["reconnect_required", "commerce_connection_required"], dead.json.error.reason)
        yield* eventually(
          call("/api/v1/connections", bearer(key)),
          (list) => list.json.data.find((c: { id: string; status: string }) => c.id === connection.id && c.status !== "disconnected") === undefined,
          { what: "the uninstalled shop's connection revoked", within: "20 seconds" }
        )
        const again = yield* call("/api/v1/commerce/live/orders?updated_since=2026-01-01", bearer(key))
        assert.strictEqual(again.status, 409, again.text)
        assert.strictEqual(again.json.error.reason, "commerce_connection_required")
      }))
  })
})
