/**
 * Commerce orders (issue 18 item 2, decision 0064) over real HTTP against the commerce sandbox
 * served by the app itself: connected through the real hand-off with `shop`; orders arriving and
 * moving at the store push `/hooks/commerce`, each milestone written once as
 * `order.status.changed`; a paid order a payment outcome, a refund its refund; the sync brings
 * what was never pushed, once; the copy's reads; uninstall; a bad signature.
 */
import { createHmac } from "node:crypto"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { defaultSyncWorkerSettings, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { call } from "../support/app.ts"
import { defineConversion } from "../support/events.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, sandboxSecretOf, serveAppOnOwnPort } from "../support/providers.ts"
import { worldHandle } from "../support/sandbox-world.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "commerce:read"]

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

const newProfile = Effect.fn("test.newProfile")(function*(scopes: ReadonlyArray<string> = SCOPES) {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 1000 })
  // A cash definition listing `payment`: a paid order becomes a payment conversion.
  yield* defineConversion(profile.profileId, "purchase", ["payment"], { countsAsCash: true, isDefault: true })
  return { profile, key }
})

const connectShop = Effect.fn("test.connectShop")(function*(key: string, shop: string) {
  yield* connectProvider(key, "commerce", { shop })
  const list = yield* call("/api/v1/connections", bearer(key))
  const connection = list.json.data.find((c: { provider: string }) => c.provider === "commerce")
  assert.isDefined(connection, list.text)
  assert.strictEqual(connection.status, "active", list.text)
  return connection as { id: string; provider_account_id: string }
})

interface MilestoneRow {
  readonly order_id: string
  readonly status: string
  readonly data: Record<string, any>
}

const milestones = (profileId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<MilestoneRow>`
      SELECT payload->'data'->>'order_id' AS order_id, payload->'data'->>'status' AS status, payload->'data' AS data
      FROM outbox WHERE profile_id = ${profileId} AND topic = 'order.status.changed' ORDER BY created_at, id`)

const ofOrder = (rows: ReadonlyArray<MilestoneRow>, orderId: string) => rows.filter((r) => r.order_id === orderId).map((r) => r.status)

const waitMilestones = (profileId: string, orderId: string, expected: ReadonlyArray<string>) =>
  eventually(milestones(profileId), (rows) => expected.every((s) => ofOrder(rows, orderId).includes(s)), {
    what: `milestones ${expected.join(", ")} of ${orderId}`,
    within: "20 seconds"
  })

const payments = (profileId: string, orderGroup: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ id: string; value: string | null; refund: string | null; source: string }>`
      SELECT c.id, c.value_amount::text AS value, c.refund_amount::text AS refund, e.source
      FROM conversions c JOIN outcome_events e ON e.id = c.outcome_event_id
      WHERE c.profile_id = ${profileId} AND e.idempotency_key = ${orderGroup}`)

const signed = (body: string) => createHmac("sha256", sandboxSecretOf("commerce")).update(body, "utf8").digest("base64")

/** A store callback's headers: signed over `signedBody`, naming `profileId`'s sandbox world as the sandbox does (decision 0109). */
const hookHeaders = (profileId: string, signedBody: string) => ({
  "content-type": "application/json",
  "x-shop-hmac-sha256": signed(signedBody),
  "x-sandbox-world": worldHandle(profileId)
})

const background = Layer.succeed(SyncWorkerSettings)({
  ...defaultSyncWorkerSettings,
  pollInterval: Duration.millis(100),
  retryBase: Duration.millis(300),
  lease: Duration.seconds(3)
})

layer(serveAppOnOwnPort().pipe(Layer.provide(background)), { timeout: "240 seconds", excludeTestServices: true })("commerce orders", (it) => {
  describe("pushed orders", () => {
    it.effect("an order arriving and moving writes one order.status.changed per (order, status); paid is one payment, refunded its refund; a replay writes nothing twice", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const shop = "orders-push"
        yield* connectShop(key, shop)
        const arrived = yield* sandbox(key, "PATCH", "_state", {
          arrive: { kind: "order", shop, email: "Buyer@Example.com", phone: "+34600111222", status: "created", attributes: { utm_source: "ads" } }
        })
        assert.strictEqual(arrived.status, 201, arrived.text)
        const order = arrived.json.order
        yield* waitMilestones(profile.profileId, order.id, ["created"])

        for (const status of ["paid", "fulfilled", "delivered"]) {
          const moved = yield* sandbox(key, "PATCH", "_state", { objects: [{ id: order.id, status }] })
          assert.isBelow(moved.status, 300, moved.text)
        }
        const rows = yield* waitMilestones(profile.profileId, order.id, ["created", "paid", "fulfilled", "delivered"])
        assert.deepStrictEqual([...ofOrder(rows, order.id)].sort(), ["created", "delivered", "fulfilled", "paid"])
        const paidRow = rows.find((r) => r.order_id === order.id && r.status === "paid")
        assert.isDefined(paidRow)
        const data = paidRow!.data
        for (const field of ["attributes", "lines", "financial_status", "fulfillment_status", "name", "total_price", "currency", "customer_id", "cart_token", "checkout_token", "created_at", "updated_at", "email", "phone"]) {
          assert.property(data, field)
        }
        assert.strictEqual(data.provider, "commerce")
        // The buyer's contact as the store holds it (withheld would be null).
        assert.strictEqual(data.email?.toLowerCase(), "buyer@example.com")
        assert.strictEqual(data.phone, "+34600111222")
        assert.deepStrictEqual(data.attributes, { utm_source: "ads" })
        assert.deepStrictEqual(Object.keys(data.lines[0]).sort(), ["price", "quantity", "sku", "variant_id"])

        // One payment outcome for the order, as a conversion of the cash definition.
        const key1 = `commerce:${shop}:${order.id}`
        const paid = yield* eventually(payments(profile.profileId, key1), (p) => p.length === 1, { what: "the payment", within: "10 seconds" })
        assert.strictEqual(paid[0]?.source, "commerce")
        assert.isNull(paid[0]?.refund ?? null)
        const recorded = yield* eventually(
          Effect.flatMap(SqlClient, (sql) =>
            sql<{ provider: string }>`SELECT payload->'data'->>'provider' AS provider FROM outbox
                                       WHERE profile_id = ${profile.profileId} AND topic = 'outcome.recorded'`),
          (r) => r.length > 0,
          { what: "outcome.recorded", within: "10 seconds" }
        )
        assert.deepStrictEqual(recorded.map((r) => r.provider), ["commerce"])

        // A replay of a delivered callback (same id): 200 and nothing written twice.
        const body = JSON.stringify({ id: `replay-${order.id}`, type: "orders/updated", account_id: shop, shop_domain: `${shop}.store.commerce.test`, created_at: new Date().toISOString(), data: { object: order } })
        const first = yield* call("/hooks/commerce", { method: "POST", headers: hookHeaders(profile.profileId, body), body })
        assert.isBelow(first.status, 300, first.text)
        const again = yield* call("/hooks/commerce", { method: "POST", headers: hookHeaders(profile.profileId, body), body })
        assert.isBelow(again.status, 300, again.text)
        const after = yield* milestones(profile.profileId)
        assert.strictEqual(ofOrder(after, order.id).length, 4)

        // Refunded: the payment's refund, still one payment.
        const refund = yield* sandbox(key, "PATCH", "_state", { objects: [{ id: order.id, status: "refunded" }] })
        assert.isBelow(refund.status, 300, refund.text)
        yield* waitMilestones(profile.profileId, order.id, ["refunded"])
        const refunded = yield* eventually(payments(profile.profileId, key1), (p) => p[0]?.refund != null, { what: "the refund", within: "10 seconds" })
        assert.strictEqual(refunded.length, 1)
        assert.strictEqual(Number(refunded[0]?.refund), Number(refunded[0]?.value))
        assert.strictEqual(ofOrder(yield* milestones(profile.profileId), order.id).length, 5)
      }))

    it.effect("a callback with a bad signature is 401 and writes nothing", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const shop = "orders-badsig"
        yield* connectShop(key, shop)
        const body = JSON.stringify({ id: "forged-1", type: "orders/create", account_id: shop, data: { object: { id: "x" } } })
        const forged = yield* call("/hooks/commerce", { method: "POST", headers: hookHeaders(profile.profileId, body + " "), body })
        assert.strictEqual(forged.status, 401, forged.text)
        const sql = yield* SqlClient
        const [seen] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM provider_events WHERE provider = 'commerce' AND event_id = 'forged-1'`
        assert.strictEqual(seen?.n, 0)
        assert.strictEqual((yield* milestones(profile.profileId)).length, 0)
      }))
  })

  describe("sync and the copy", () => {
    it.effect("the sync brings the orders never pushed, each milestone once across two syncs; the reads look up by number, email, phone without identity", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const shop = "orders-sync"
        yield* connectShop(key, shop)
        const runSync = Effect.gen(function*() {
          const queued = yield* call("/api/v1/connections/sync", bearer(key, "POST", {}))
          assert.strictEqual(queued.status, 202, queued.text)
          const jobId: string = queued.json.data[0].job_id
          return yield* eventually(
            Effect.map(call(`/api/v1/connections/sync/${jobId}`, bearer(key)), (r) => r.json.data),
            (job) => ["done", "failed", "cancelled"].includes(job.status),
            { what: "the commerce sync", within: "60 seconds" }
          )
        })
        const job = yield* runSync
        assert.strictEqual(job.status, "done", JSON.stringify(job))
        const state = yield* sandbox(key, "GET", "_state")
        const seeded = (state.json.orders as ReadonlyArray<any>).filter((o) => o.shop_id === shop || o.shop === shop)
        assert.isAbove(seeded.length, 0)
        const rows = yield* milestones(profile.profileId)
        const expected = seeded.reduce((n, o) => n + o.milestones.length, 0)
        assert.strictEqual(rows.length, expected)
        const again = yield* runSync
        assert.strictEqual(again.status, "done")
        assert.strictEqual((yield* milestones(profile.profileId)).length, expected)

        const products = yield* call("/api/v1/commerce/products?limit=2", bearer(key))
        assert.strictEqual(products.status, 200, products.text)
        assert.isAbove(products.json.data.length, 0)
        assert.notProperty(products.json.data[0].variants[0], "stock")

        const withEmail = seeded.find((o) => o.email !== null && o.phone !== null) ?? seeded[0]
        const byNumber = yield* call(`/api/v1/commerce/orders?number=${encodeURIComponent(withEmail.name)}`, bearer(key))
        assert.strictEqual(byNumber.status, 200, byNumber.text)
        assert.deepStrictEqual(byNumber.json.data.map((o: any) => o.id), [withEmail.id])
        for (const o of byNumber.json.data) {
          for (const field of ["email", "phone", "customer_id", "cart_token", "checkout_token", "attributes"]) assert.notProperty(o, field)
        }
        if (withEmail.email !== null) {
          const byEmail = yield* call(`/api/v1/commerce/orders?email=${encodeURIComponent(withEmail.email.toUpperCase())}`, bearer(key))
          assert.strictEqual(byEmail.status, 200, byEmail.text)
          assert.include(byEmail.json.data.map((o: any) => o.id), withEmail.id)
        }
        if (withEmail.phone !== null) {
          const byPhone = yield* call(`/api/v1/commerce/orders?phone=${encodeURIComponent(withEmail.phone)}`, bearer(key))
          assert.strictEqual(byPhone.status, 200, byPhone.text)
          assert.include(byPhone.json.data.map((o: any) => o.id), withEmail.id)
        }
        const both = yield* call("/api/v1/commerce/orders?number=1&email=a@b.c", bearer(key))
        assert.strictEqual(both.status, 400, both.text)
        assert.strictEqual(both.json.error.code, "invalid_parameter")

        const { key: noScope } = yield* newProfile(["connections:read"])
        const refused = yield* call("/api/v1/commerce/orders", bearer(noScope))
        assert.strictEqual(refused.status, 403, refused.text)
      }))
  })

  describe("uninstall", () => {
    it.effect("the app uninstalled at the store revokes the connection with connection.revoked", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const shop = "orders-uninstall"
        const connection = yield* connectShop(key, shop)
        const gone = yield* sandbox(key, "PATCH", "_state", { arrive: { kind: "app_uninstalled", shop } })
        assert.strictEqual(gone.status, 201, gone.text)
        const sql = yield* SqlClient
        const revoked = yield* eventually(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox WHERE profile_id = ${profile.profileId} AND topic = 'connection.revoked'`,
          (r) => r[0]?.n === 1,
          { what: "connection.revoked", within: "20 seconds" }
        )
        assert.strictEqual(revoked[0]?.n, 1)
        const [row] = yield* sql<{ disconnected: boolean }>`SELECT disconnected_at IS NOT NULL AS disconnected FROM connections WHERE id = ${connection.id}`
        assert.isTrue(row?.disconnected)
      }))
  })
})
