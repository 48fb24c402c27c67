/**
 * The sandbox commerce platform, served by the service under /sandbox/commerce/, read through
 * the `Commerce` port over real HTTP: the three forms of `shop`, a seeded catalogue per shop,
 * live stock, orders since a time, milestones moved by `PATCH _state` with the signed
 * `orders/updated` push, order arrivals, the app uninstalled, and a fault retried by the port.
 */
import { assert, describe, it as plainIt, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { createHmac } from "node:crypto"
import { CommerceAdapter } from "../../src/connections/providers/commerce/live.ts"
import { Commerce } from "../../src/connections/providers/commerce/port.ts"
import { parseShop } from "../../src/connections/providers/commerce/shop.ts"
import { CommerceWorld, SEEDED_SHOP } from "../../sandbox/commerce/world.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { callbackCatcher, LOOPBACK_CALLBACKS } from "../support/providers.ts"
import { worldHandle } from "../support/sandbox-world.ts"
import { appSecret, consent, json, providerHttpLayer, session, withOne500, WORLD } from "./sandbox-harness.ts"

/** The documented scheme: base64 HMAC-SHA256 of the raw body under the app secret. */
const signedWell = (headers: Record<string, string | Array<string> | undefined>, body: string) =>
  headers["x-shop-hmac-sha256"] === createHmac("sha256", appSecret("commerce")).update(body).digest("base64")

describe("commerce shop forms", () => {
  plainIt("the handle, the store domain and an admin address name the same shop; anything else is refused", () => {
    for (
      const input of [
        "acme-goods",
        "ACME-goods.store.commerce.test",
        "https://admin.commerce.test/store/acme-goods",
        "https://acme-goods.store.commerce.test/admin/orders"
      ]
    ) assert.strictEqual(parseShop(input), "acme-goods", input)
    for (
      const input of ["", "acme goods", "-acme", "acme.other.test", "https://evil.test/store/acme", "ftp://admin.commerce.test/store/a", "https://acme.store.commerce.test/"]
    ) assert.isNull(parseShop(input), input)
  })

  plainIt("a shop's seeded data is deterministic, per handle", () => {
    const first = new CommerceWorld()
    const second = new CommerceWorld()
    first.openShop("acme-goods")
    second.openShop("acme-goods")
    assert.deepStrictEqual(first.state(), second.state())
    const state = first.state()
    assert.strictEqual(state.products.filter((product) => product.shop_id === SEEDED_SHOP).length, 24)
    assert.strictEqual(state.orders.filter((order) => order.shop_id === "acme-goods").length, 30)
    assert.notDeepEqual(
      state.products.filter((product) => product.shop_id === SEEDED_SHOP).map((product) => product.title),
      state.products.filter((product) => product.shop_id === "acme-goods").map((product) => product.title)
    )
  })
})

// Pushes go to a callbackCatcher on 127.0.0.1: an origin the operator opens (decision 0109).
const settings = testSettings({ providers: { ...testSettings().providers, ...LOOPBACK_CALLBACKS } })
// Fresh: the app built CommerceAdapter already (layers are memoised by reference) over its own client.
const app = Layer.fresh(CommerceAdapter).pipe(Layer.provideMerge(providerHttpLayer), Layer.provideMerge(serveApp(settings)))

layer(app, { timeout: "90 seconds", excludeTestServices: true })("sandbox commerce through the Commerce port", (it) => {
  it.effect("the seeded shop is what the sandbox serves; a consent names its shop in any form", () =>
    Effect.gen(function*() {
      const served = yield* json("GET", "/sandbox/commerce/_state")
      assert.strictEqual(served.status, 200)
      const fresh = new CommerceWorld().state()
      assert.deepStrictEqual(served.json.orders, fresh.orders)
      assert.deepStrictEqual(served.json.products, fresh.products)

      const token = yield* consent("commerce", { shop: "https://admin.commerce.test/store/demo-outlet" })
      const me = yield* json("GET", "/sandbox/commerce/v1/me", undefined, token)
      assert.deepStrictEqual(me.json.accounts.map((account: { id: string }) => account.id), ["demo-outlet"])
      const shop = yield* (yield* Commerce).shop(session("commerce", "demo-outlet", token))
      assert.strictEqual(shop.domain, "demo-outlet.store.commerce.test")
      assert.isTrue(shop.installed)

      const refused = yield* call(
        `/sandbox/commerce/oauth/authorize?client_id=sandbox-commerce&redirect_uri=http://127.0.0.1:9/cb&state=s&shop=not%20a%20shop&sandbox_world=${
          encodeURIComponent(worldHandle(WORLD))
        }`,
        {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "persona=one_account&decision=approve"
        }
      )
      assert.strictEqual(refused.status, 400)
      assert.include(refused.text, "shop must be")
    }))

  it.effect("products, live stock, orders since a time and one order through the port", () =>
    Effect.gen(function*() {
      const commerce = yield* Commerce
      const token = yield* consent("commerce", { shop: SEEDED_SHOP })
      const grant = session("commerce", SEEDED_SHOP, token)

      const products = yield* Stream.runCollect(commerce.products(grant))
      assert.strictEqual(products.length, 24)
      const product = products[0]!
      const stock = yield* commerce.productStock(grant, product.id)
      assert.deepStrictEqual(stock.variants.map((variant) => variant.stock), product.variants.map((variant) => variant.stock))

      const orders = yield* Stream.runCollect(commerce.orders(grant))
      assert.strictEqual(orders.length, 30)
      const times = orders.map((order) => order.updated_at)
      assert.deepStrictEqual(times, [...times].sort())
      assert.isTrue(orders.every((order) => order.name === `#${order.number}` && order.lines.length > 0))
      assert.isTrue(orders.some((order) => order.email === null), "some buyers withheld their contact")
      const since = yield* Stream.runCollect(commerce.orders(grant, { updatedSince: new Date(orders[20]!.updated_at) }))
      assert.deepStrictEqual(since.map((order) => order.id), orders.slice(20).map((order) => order.id))
      assert.deepStrictEqual(yield* commerce.getOrder(grant, orders[3]!.id), orders[3])

      const missing = yield* Effect.flip(commerce.getOrder(grant, "order_nope"))
      assert.strictEqual(missing._tag, "ProviderRefused")
      const otherShop = yield* Effect.flip(Stream.runCollect(commerce.orders(session("commerce", "demo-outlet", token))))
      assert.strictEqual(otherShop._tag, "ProviderRefused")

      // A 500 on the first attempt of a paged read is retried; the stream still yields every order once.
      const retried = yield* withOne500("commerce", Stream.runCollect(commerce.orders(grant)))
      assert.strictEqual(retried.left, 0, "the 500 was answered")
      assert.deepStrictEqual(retried.result.map((order) => order.id), orders.map((order) => order.id))
    }))

  it.effect("an order moved by hand pushes a signed orders/updated; arrivals push orders/create and app/uninstalled", () =>
    Effect.gen(function*() {
      const commerce = yield* Commerce
      const hooks = yield* callbackCatcher
      const token = yield* consent("commerce", { shop: SEEDED_SHOP })
      const grant = session("commerce", SEEDED_SHOP, token)
      const subscribed = yield* json("POST", `/sandbox/commerce/v1/accounts/${SEEDED_SHOP}/subscriptions`, { callback_url: hooks.url }, token)
      assert.strictEqual(subscribed.status, 200)

      const state = (yield* json("GET", "/sandbox/commerce/_state")).json
      const created = state.orders.find((order: { status: string; shop_id: string }) =>
        order.status === "created" && order.shop_id === SEEDED_SHOP
      )
      assert.isDefined(created)
      const moved = yield* json("PATCH", "/sandbox/commerce/_state", { objects: [{ id: created.id, status: "fulfilled" }] })
      assert.strictEqual(moved.status, 200)
      assert.strictEqual(hooks.received.length, 1)
      const push = hooks.received[0]!
      assert.isTrue(signedWell(push.headers, push.body))
      const event = JSON.parse(push.body)
      assert.strictEqual(event.type, "orders/updated")
      assert.strictEqual(event.data.object.status, "fulfilled")
      assert.deepStrictEqual(event.data.object.milestones.map((step: { status: string }) => step.status), ["created", "paid", "fulfilled"])
      const read = yield* commerce.getOrder(grant, created.id)
      assert.strictEqual(read.status, "fulfilled")
      assert.strictEqual(read.financial_status, "paid")
      assert.strictEqual(read.fulfillment_status, "fulfilled")

      // Backwards is not a move the platform makes: refused, nothing changes, nothing pushed.
      const backwards = yield* json("PATCH", "/sandbox/commerce/_state", { objects: [{ id: created.id, status: "created" }] })
      assert.strictEqual(backwards.status, 409)
      const unknown = yield* json("PATCH", "/sandbox/commerce/_state", { objects: [{ id: created.id, status: "shipped" }] })
      assert.strictEqual(unknown.status, 400)
      assert.strictEqual((yield* commerce.getOrder(grant, created.id)).status, "fulfilled")
      assert.strictEqual(hooks.received.length, 1)

      const product = state.products.find((candidate: { shop_id: string }) => candidate.shop_id === SEEDED_SHOP)
      const variant = product.variants[0]
      const arrived = yield* json("PATCH", "/sandbox/commerce/_state", {
        arrive: { kind: "order", email: "buyer@example.com", phone: "+34600000002", status: "paid", lines: [{ variant_id: variant.id, quantity: 1 }] }
      })
      assert.strictEqual(arrived.status, 201)
      assert.strictEqual(hooks.received.length, 2)
      const order = JSON.parse(hooks.received[1]!.body)
      assert.isTrue(signedWell(hooks.received[1]!.headers, hooks.received[1]!.body))
      assert.strictEqual(order.type, "orders/create")
      assert.deepStrictEqual(order.data.object, arrived.json.order)
      assert.strictEqual(order.data.object.email, "buyer@example.com")
      assert.strictEqual(order.data.object.financial_status, "paid")
      assert.strictEqual(order.data.object.total_price, variant.price)
      const stock = yield* commerce.productStock(grant, product.id)
      assert.strictEqual(stock.variants[0]!.stock, Math.max(0, variant.stock - 1))

      const uninstalled = yield* json("PATCH", "/sandbox/commerce/_state", { arrive: { kind: "app_uninstalled" } })
      assert.strictEqual(uninstalled.status, 201)
      assert.isFalse(uninstalled.json.shop.installed)
      assert.strictEqual(hooks.received.length, 3)
      assert.strictEqual(JSON.parse(hooks.received[2]!.body).type, "app/uninstalled")
      const dead = yield* Effect.flip(commerce.getOrder(grant, created.id))
      assert.strictEqual(dead._tag, "ProviderAuthRevoked")
      // Consenting again reinstalls the app.
      const again = session("commerce", SEEDED_SHOP, yield* consent("commerce", { shop: SEEDED_SHOP }))
      assert.strictEqual((yield* commerce.shop(again)).installed, true)
    }))
})
