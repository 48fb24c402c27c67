/**
 * The commerce sandbox's volume arrival (decision 0065), on the world itself: generated orders
 * are paged with the shop's other orders in `updated_at` order, each exactly once, with and
 * without `updated_since`; they read back alike by id; bad arrivals are refused.
 */
import { assert, describe, it } from "@effect/vitest"
import { CommerceWorld, type Order, SEEDED_SHOP } from "../../sandbox/commerce/world.ts"
import { WorldRefusal } from "../../sandbox/world-kit.ts"

const readAll = (world: CommerceWorld, query: { readonly updated_since?: string; readonly limit?: number }) => {
  const seen: Array<Order> = []
  let after: string | undefined
  for (let pages = 0; pages < 1_000; pages++) {
    const page = world.listOrders(SEEDED_SHOP, { ...query, ...(after === undefined ? {} : { after }) })
    if (page instanceof WorldRefusal) throw new Error(page.message)
    seen.push(...page.data)
    if (page.paging.next === null) return seen
    after = page.paging.next
  }
  throw new Error("paging did not end")
}

describe("commerce sandbox: generated_orders", () => {
  it("pages every order once in change order, mixed with the seeded ones; updated_since cuts exactly; ids read back", () => {
    const world = new CommerceWorld(() => Date.UTC(2026, 10, 26, 12))
    const arrived = world.arrive({ kind: "generated_orders", orders: 1_234, seed: 3 })
    assert.notInstanceOf(arrived, WorldRefusal)
    const all = readAll(world, { limit: 97 })
    assert.strictEqual(all.length, 1_234 + 30)
    assert.strictEqual(new Set(all.map((o) => o.id)).size, all.length)
    const keys = all.map((o) => `${o.updated_at}|${o.id}`)
    assert.deepStrictEqual(keys, [...keys].sort())
    const generated = all.filter((o) => o.id.startsWith(`order_${SEEDED_SHOP}_g3_`))
    assert.strictEqual(generated.length, 1_234)
    for (const order of generated) assert.deepStrictEqual(order.milestones.map((m) => m.status), ["created", "paid", "fulfilled", "delivered"])

    // From the 500th generated order's change on: exactly the orders changed then or later.
    const cut = generated[500]!.updated_at
    const since = readAll(world, { updated_since: cut, limit: 500 })
    assert.deepStrictEqual(since.map((o) => o.id), all.filter((o) => o.updated_at >= cut).map((o) => o.id))

    // The same order, however it is read, and again on a second read (deterministic).
    const one = world.getOrder(SEEDED_SHOP, generated[777]!.id)
    assert.deepStrictEqual(one, generated[777])
    assert.deepStrictEqual(world.getOrder(SEEDED_SHOP, generated[777]!.id), one)
    assert.instanceOf(world.getOrder(SEEDED_SHOP, `order_${SEEDED_SHOP}_g3_1234`), WorldRefusal)
    assert.instanceOf(world.getOrder(SEEDED_SHOP, `order_${SEEDED_SHOP}_g3_0777`), WorldRefusal)
  })

  it("refuses a count out of range or an unknown shop, and changes nothing", () => {
    const world = new CommerceWorld()
    for (const arrival of [{ kind: "generated_orders", orders: 0 }, { kind: "generated_orders", orders: 1_000_001 }, { kind: "generated_orders", orders: 1.5 }]) {
      const refused = world.arrive(arrival)
      assert.instanceOf(refused, WorldRefusal)
      assert.strictEqual(refused instanceof WorldRefusal ? refused.status : 0, 400)
    }
    const unknown = world.arrive({ kind: "generated_orders", shop: "nowhere", orders: 10 })
    assert.strictEqual(unknown instanceof WorldRefusal ? unknown.status : 0, 404)
    assert.strictEqual(readAll(world, {}).length, 30)
  })
})
