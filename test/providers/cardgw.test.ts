/**
 * The sandbox card gateway, served by the service under /sandbox/cardgw/, read through the
 * `CardGateway` port over real HTTP: seeded payments, the `created_since` cursor, a payment
 * arriving and a refund, each pushed signed to a subscribed callback, and a fault retried.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { createHmac } from "node:crypto"
import { CardGatewayAdapter } from "../../src/connections/providers/cardgw/live.ts"
import { CardGateway } from "../../src/connections/providers/cardgw/port.ts"
import { CardgwWorld } from "../../sandbox/cardgw/world.ts"
import { serveApp, testSettings } from "../support/app.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS } from "../support/providers.ts"
import { appSecret, consent, json, providerHttpLayer, session, withOne500 } from "./sandbox-harness.ts"

const ACCOUNT = "acct_cardgw_1001"

/** The documented scheme: `sha256=` hex HMAC-SHA256 of `<timestamp>.<raw body>` under the app secret. */
const signedWell = (headers: Record<string, string | Array<string> | undefined>, body: string) => {
  const timestamp = String(headers["x-signature-timestamp"])
  const expected = `sha256=${createHmac("sha256", appSecret("cardgw")).update(`${timestamp}.${body}`).digest("hex")}`
  return headers["x-signature-256"] === expected && Math.abs(Date.now() / 1000 - Number(timestamp)) < 300
}

// Pushes go to a callbackCatcher on 127.0.0.1: an origin the operator opens (decision 0109).
const settings = testSettings({ providers: { ...testSettings().providers, ...LOOPBACK_CALLBACKS } })
// Fresh: the app built CardGatewayAdapter already (layers are memoised by reference) over its own client.
const app = Layer.fresh(CardGatewayAdapter).pipe(Layer.provideMerge(providerHttpLayer), Layer.provideMerge(serveApp(settings)))

layer(app, { timeout: "90 seconds", excludeTestServices: true })("sandbox cardgw through the CardGateway port", (it) => {
  it.effect("seeded payments, deterministic, listed since a time and read one by one; a 500 is retried", () =>
    Effect.gen(function*() {
      const fresh = new CardgwWorld().state()
      assert.deepStrictEqual(fresh, new CardgwWorld().state())
      const served = yield* json("GET", "/sandbox/cardgw/_state")
      assert.deepStrictEqual(served.json.payments, fresh.payments)

      const gateway = yield* CardGateway
      const token = yield* consent("cardgw")
      const grant = session("cardgw", ACCOUNT, token)
      const payments = yield* Stream.runCollect(gateway.payments(grant))
      assert.strictEqual(payments.length, 40)
      const times = payments.map((payment) => payment.created_at)
      assert.deepStrictEqual(times, [...times].sort())
      assert.isTrue(payments.some((payment) => payment.status === "refunded"))
      assert.isTrue(payments.every((payment) => Number.isInteger(payment.amount_minor) && payment.currency === "EUR"))
      const recent = yield* Stream.runCollect(gateway.payments(grant, { createdSince: new Date(payments[25]!.created_at) }))
      assert.deepStrictEqual(recent.map((payment) => payment.id), payments.slice(25).map((payment) => payment.id))
      assert.deepStrictEqual(yield* gateway.getPayment(grant, payments[7]!.id), payments[7])
      const missing = yield* Effect.flip(gateway.getPayment(grant, "pay_nope"))
      assert.strictEqual(missing._tag, "ProviderRefused")

      const retried = yield* withOne500("cardgw", gateway.getPayment(grant, payments[0]!.id))
      assert.strictEqual(retried.left, 0, "the 500 was answered")
      assert.strictEqual(retried.result.id, payments[0]!.id)
    }))

  it.effect("a payment arriving pushes payment.succeeded; a refund pushes payment.refunded, both signed", () =>
    Effect.gen(function*() {
      const gateway = yield* CardGateway
      const hooks = yield* callbackCatcher
      const token = yield* consent("cardgw")
      const grant = session("cardgw", ACCOUNT, token)
      assert.strictEqual(
        (yield* json("POST", `/sandbox/cardgw/v1/accounts/${ACCOUNT}/subscriptions`, { callback_url: hooks.url }, token)).status,
        200
      )
      const arrived = yield* json("PATCH", "/sandbox/cardgw/_state", {
        arrive: { kind: "payment", amount_minor: 4_990, customer: { email: "payer@example.com", phone: "+34600000003" } }
      })
      assert.strictEqual(arrived.status, 201)
      assert.strictEqual(hooks.received.length, 1)
      assert.isTrue(signedWell(hooks.received[0]!.headers, hooks.received[0]!.body))
      const succeeded = JSON.parse(hooks.received[0]!.body)
      assert.strictEqual(succeeded.type, "payment.succeeded")
      assert.strictEqual(succeeded.data.object.amount_minor, 4_990)
      assert.strictEqual(succeeded.data.object.customer.email, "payer@example.com")
      const id = succeeded.data.object.id as string
      assert.strictEqual(arrived.json.payment.id, id)
      assert.strictEqual((yield* gateway.getPayment(grant, id)).status, "succeeded")

      const refunded = yield* json("PATCH", "/sandbox/cardgw/_state", { objects: [{ id, status: "refunded" }] })
      assert.strictEqual(refunded.status, 200)
      assert.strictEqual(hooks.received.length, 2)
      assert.isTrue(signedWell(hooks.received[1]!.headers, hooks.received[1]!.body))
      const refund = JSON.parse(hooks.received[1]!.body)
      assert.strictEqual(refund.type, "payment.refunded")
      assert.notStrictEqual(refund.id, succeeded.id)
      const read = yield* gateway.getPayment(grant, id)
      assert.strictEqual(read.status, "refunded")
      assert.strictEqual(read.amount_refunded_minor, 4_990)

      // A second refund, and a refund of an unknown payment, are refused and push nothing.
      assert.strictEqual((yield* json("PATCH", "/sandbox/cardgw/_state", { objects: [{ id, status: "refunded" }] })).status, 409)
      assert.strictEqual((yield* json("PATCH", "/sandbox/cardgw/_state", { objects: [{ id: "pay_nope", status: "refunded" }] })).status, 404)
      assert.strictEqual((yield* json("PATCH", "/sandbox/cardgw/_state", { arrive: { kind: "payment", amount_minor: 0 } })).status, 400)
      assert.strictEqual(hooks.received.length, 2)
    }))

  // Last in this file: it kills every grant of the card-gateway sandbox.
  it.effect("a grant killed at the gateway pushes a signed deauthorization; the port then answers ProviderAuthRevoked", () =>
    Effect.gen(function*() {
      const gateway = yield* CardGateway
      const hooks = yield* callbackCatcher
      const token = yield* consent("cardgw")
      const grant = session("cardgw", ACCOUNT, token)
      yield* json("POST", `/sandbox/cardgw/v1/accounts/${ACCOUNT}/subscriptions`, { callback_url: hooks.url }, token)
      const payment = (yield* json("GET", "/sandbox/cardgw/_state")).json.payments[0]
      assert.strictEqual((yield* gateway.getPayment(grant, payment.id)).id, payment.id)

      assert.strictEqual((yield* json("POST", "/sandbox/cardgw/_faults", { revoke_tokens: true })).status, 200)
      const deaths = hooks.received.filter((push) => JSON.parse(push.body).type === "account.application.deauthorized")
      assert.isAtLeast(deaths.length, 1)
      assert.isTrue(deaths.every((push) => signedWell(push.headers, push.body)))
      assert.strictEqual(JSON.parse(deaths[0]!.body).account_id, ACCOUNT)
      const dead = yield* Effect.flip(gateway.getPayment(grant, payment.id))
      assert.strictEqual(dead._tag, "ProviderAuthRevoked")
      yield* json("POST", "/sandbox/cardgw/_faults", { revoke_tokens: false })
    }))
})
