/**
 * A connected store's paid orders as payments out of the box, and its partial refunds (decision
 * 0067), over real HTTP against the commerce sandbox served by the app: a profile with no
 * definition listing `payment` gets the built-in `commerce_payment` one at the first paid order;
 * refunds of parts of an order raise the payment's refund to their running total, and only the
 * refund that leaves nothing writes the `refunded` milestone, once.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { call } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { connectProvider, serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["connections:read", "connections:write", "commerce:read"]

/** A `_state` change in the key's profile's sandbox store world (decision 0109). */
const sandbox = (key: string, body: unknown) =>
  call("/sandbox/commerce/_state", {
    method: "PATCH",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body)
  })

const payment = (profileId: string, key: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ value: string; refund: string | null; conversion_key: string }>`
      SELECT c.value_amount::text AS value, c.refund_amount::text AS refund, d.conversion_key
      FROM conversions c JOIN outcome_events e ON e.id = c.outcome_event_id
      JOIN conversion_definitions d ON d.id = c.definition_id
      WHERE c.profile_id = ${profileId} AND e.idempotency_key = ${key}`)

const milestonesOf = (profileId: string, orderId: string) =>
  Effect.flatMap(SqlClient, (sql) =>
    sql<{ status: string }>`
      SELECT payload->'data'->>'status' AS status FROM outbox
      WHERE profile_id = ${profileId} AND topic = 'order.status.changed' AND payload->'data'->>'order_id' = ${orderId}
      ORDER BY created_at, id`)

const cents = (price: string) => Math.round(Number(price) * 100)
const money = (minor: number) => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, "0")}`

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("commerce payments", (it) => {
  describe("built-in definition and partial refunds", () => {
    it.effect("a paid order is a payment of the built-in commerce_payment definition; partial refunds add up, refunded is written once", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: SCOPES, rateLimitPerMinute: 1000 })
        const shop = `pay-${crypto.randomUUID().slice(0, 8)}`
        yield* connectProvider(key, "commerce", { shop })

        const arrived = yield* sandbox(key, { arrive: { kind: "order", shop, email: "buyer@example.com", status: "paid" } })
        assert.strictEqual(arrived.status, 201, arrived.text)
        const order = arrived.json.order
        const idempotencyKey = `commerce:${shop}:${order.id}`
        const [paid] = yield* eventually(payment(profile.profileId, idempotencyKey), (rows) => rows.length === 1, {
          what: "the payment conversion",
          within: "20 seconds"
        })
        assert.strictEqual(paid?.conversion_key, "commerce_payment")
        assert.isNull(paid?.refund ?? null)
        const definitions = yield* sql<{ conversion_key: string; counts_as_cash: boolean; event_names: ReadonlyArray<string> }>`
          SELECT conversion_key, counts_as_cash, event_names FROM conversion_definitions WHERE profile_id = ${profile.profileId}`
        assert.deepStrictEqual(definitions.map((d) => [d.conversion_key, d.counts_as_cash, [...d.event_names]]), [["commerce_payment", true, ["payment"]]])

        // Two parts, then the rest: the refund follows the running total.
        const total = cents(order.total_price)
        const part = Math.floor(total / 4)
        assert.isAbove(part, 0)
        const first = yield* sandbox(key, { objects: [{ id: order.id, refund: money(part) }] })
        assert.strictEqual(first.status, 200, first.text)
        yield* eventually(payment(profile.profileId, idempotencyKey), (rows) => rows[0]?.refund != null && cents(rows[0].refund) === part, {
          what: "the first partial refund",
          within: "20 seconds"
        })
        const second = yield* sandbox(key, { objects: [{ id: order.id, refund: money(part) }] })
        assert.strictEqual(second.status, 200, second.text)
        yield* eventually(payment(profile.profileId, idempotencyKey), (rows) => cents(rows[0]?.refund ?? "0") === 2 * part, {
          what: "the running total of two refunds",
          within: "20 seconds"
        })
        // A partial refund is not the order's `refunded` milestone.
        assert.notInclude((yield* milestonesOf(profile.profileId, order.id)).map((m) => m.status), "refunded")

        // More than what is left is refused and changes nothing.
        const tooMuch = yield* sandbox(key, { objects: [{ id: order.id, refund: money(total) }] })
        assert.strictEqual(tooMuch.status, 400, tooMuch.text)

        const rest = yield* sandbox(key, { objects: [{ id: order.id, refund: money(total - 2 * part) }] })
        assert.strictEqual(rest.status, 200, rest.text)
        const whole = yield* eventually(payment(profile.profileId, idempotencyKey), (rows) => cents(rows[0]?.refund ?? "0") === total, {
          what: "the order refunded whole",
          within: "20 seconds"
        })
        assert.strictEqual(whole.length, 1)
        const statuses = yield* eventually(milestonesOf(profile.profileId, order.id), (rows) => rows.some((m) => m.status === "refunded"), {
          what: "the refunded milestone",
          within: "20 seconds"
        })
        // Rows of one transaction share a timestamp: compared as a set, each once.
        assert.deepStrictEqual(statuses.map((m) => m.status).sort(), ["created", "paid", "refunded"])

        // A refund on a refunded order is refused.
        const after = yield* sandbox(key, { objects: [{ id: order.id, refund: "0.01" }] })
        assert.strictEqual(after.status, 409, after.text)
      }))
  })
})
