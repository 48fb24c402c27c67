/**
 * The simulated commerce platform: shops (named by handle; one is seeded, any other handle a
 * consent names is opened on the spot with its own seeded catalogue), products with variants
 * and live stock, and orders moving through milestones. `PATCH _state` moves an order as the
 * merchant's admin would and pushes `orders/updated`; arrivals create orders (`orders/create`)
 * or uninstall the app (`app/uninstalled`).
 */
import { randomUUID } from "node:crypto"
import { Result, Schema } from "effect"
import { ORDER_MILESTONES, type OrderMilestone } from "../../src/connections/providers/commerce/port.ts"
import { shopDomain } from "../../src/connections/providers/commerce/shop.ts"
import {
  type Arrived,
  isoAt,
  DEFAULT_PAGE,
  keysetPage,
  ownedOne,
  MAX_PAGE,
  type Page,
  SEED_EPOCH_MS,
  seededPerson,
  seededRandom,
  seedOf,
  sinceFilter,
  type WorldPush,
  worldPush,
  WorldRefusal
} from "../world-kit.ts"

export interface Shop {
  readonly id: string
  readonly name: string
  readonly domain: string
  readonly currency: string
  readonly timezone: string
  /** False once the merchant uninstalled the app (its grants are dead). */
  readonly installed: boolean
}

export interface ProductVariant {
  readonly id: string
  readonly sku: string
  readonly title: string
  /** Decimal string in the shop's currency, as the platform answers prices. */
  readonly price: string
  /** Units in stock now (live). */
  readonly stock: number
}

export interface Product {
  readonly id: string
  readonly shop_id: string
  readonly title: string
  readonly handle: string
  readonly status: "active" | "draft"
  readonly variants: ReadonlyArray<ProductVariant>
  readonly updated_at: string
}

export interface OrderLine {
  readonly product_id: string
  readonly variant_id: string
  readonly sku: string
  readonly title: string
  readonly quantity: number
  readonly price: string
}

export interface Order {
  readonly id: string
  readonly shop_id: string
  /** `#1001`: what the merchant and buyer call it. */
  readonly name: string
  readonly number: number
  /** The latest milestone. */
  readonly status: OrderMilestone
  readonly milestones: ReadonlyArray<{ readonly status: OrderMilestone; readonly at: string }>
  readonly financial_status: "pending" | "paid" | "partially_refunded" | "refunded" | "voided"
  readonly fulfillment_status: "fulfilled" | "delivered" | null
  readonly currency: string
  readonly total_price: string
  readonly lines: ReadonlyArray<OrderLine>
  /** Buyer contact; null when the buyer withheld it. */
  readonly email: string | null
  readonly phone: string | null
  readonly customer_id: string | null
  readonly cart_token: string | null
  readonly checkout_token: string | null
  /** The refunds made, oldest first: parts of the order, then (on `refunded`) the rest. */
  readonly refunds: ReadonlyArray<OrderRefund>
  /** The checkout's note attributes (a storefront pixel may leave an anonymous id or UTM values). */
  readonly attributes: Readonly<Record<string, string>>
  readonly created_at: string
  readonly updated_at: string
}

export interface OrderRefund {
  readonly id: string
  readonly amount: string
  readonly at: string
}

export const SEEDED_SHOP = "sandbox-shop"
export const COMMERCE_SEEDED_PRODUCTS_PER_SHOP = 24
export const COMMERCE_SEEDED_ORDERS_PER_SHOP = 30
/** The most orders one `generated_orders` arrival makes (they are computed on read, not held). */
export const MAX_GENERATED_ORDERS = 1_000_000
/** A generated order's milestones, after its creation: paid in 10 minutes, fulfilled in a day, delivered in three. */
const GENERATED_STEPS: ReadonlyArray<readonly [OrderMilestone, number]> = [
  ["created", 0],
  ["paid", 600_000],
  ["fulfilled", 86_400_000],
  ["delivered", 3 * 86_400_000]
]

/** A shop's block of generated orders: order `i` is computed from the block and `i` alone. */
interface GeneratedBlock {
  readonly seed: number
  readonly count: number
  /** Order 0's creation; order `i` is created `i` seconds later, so `updated_at` grows with `i`. */
  readonly startMs: number
  readonly firstNumber: number
  readonly variants: ReadonlyArray<{ readonly product: Product; readonly variant: ProductVariant }>
}

/** Which milestones may follow which: forward along the happy path, refunds once paid, cancels before shipping. */
const NEXT: Readonly<Record<OrderMilestone, ReadonlyArray<OrderMilestone>>> = {
  created: ["paid", "fulfilled", "delivered", "cancelled"],
  paid: ["fulfilled", "delivered", "refunded", "cancelled"],
  fulfilled: ["delivered", "refunded"],
  delivered: ["refunded"],
  refunded: [],
  cancelled: []
}

const PRODUCT_WORDS = ["Linen", "Cotton", "Wool", "Leather", "Ceramic", "Oak", "Steel", "Silk"]
const PRODUCT_KINDS = ["shirt", "bag", "mug", "lamp", "scarf", "wallet", "vase", "notebook"]
const SIZES = ["S", "M", "L"]

const money = (minor: number) => `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, "0")}`
const minorOf = (price: string) => Math.round(Number(price) * 100)

const OrderMove = Schema.Struct({ id: Schema.String, status: Schema.Literals(ORDER_MILESTONES) })
const RefundSet = Schema.Struct({ id: Schema.String, refund: Schema.String.check(Schema.isPattern(/^\d{1,9}(\.\d{1,2})?$/)) })
const StockSet = Schema.Struct({ id: Schema.String, stock: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)) })
const OrderArrival = Schema.Struct({
  kind: Schema.Literal("order"),
  shop: Schema.optionalKey(Schema.String),
  email: Schema.optionalKey(Schema.NullOr(Schema.String)),
  phone: Schema.optionalKey(Schema.NullOr(Schema.String)),
  customer_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  status: Schema.optionalKey(Schema.Literals(["created", "paid"])),
  attributes: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  lines: Schema.optionalKey(Schema.Array(Schema.Struct({
    variant_id: Schema.String,
    quantity: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
  })))
})
const UninstallArrival = Schema.Struct({ kind: Schema.Literal("app_uninstalled"), shop: Schema.optionalKey(Schema.String) })
const GeneratedOrdersArrival = Schema.Struct({
  kind: Schema.Literal("generated_orders"),
  shop: Schema.optionalKey(Schema.String),
  orders: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(MAX_GENERATED_ORDERS)),
  seed: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
})

export class CommerceWorld {
  private readonly shops = new Map<string, Shop>()
  private readonly products = new Map<string, Product>()
  private readonly orders = new Map<string, Order>()
  private readonly nextNumber = new Map<string, number>()
  /** Per shop, its `generated_orders` block (volume: computed on read, see `generatedOrder`). */
  private readonly generated = new Map<string, GeneratedBlock>()
  private readonly now: () => number

  constructor(now: () => number = Date.now) {
    this.now = now
    this.openShop(SEEDED_SHOP)
  }

  /** The shop a consent names, opened (and seeded from its handle) when new; reinstalls it. */
  openShop(handle: string): Shop {
    const existing = this.shops.get(handle)
    if (existing) {
      const reinstalled = { ...existing, installed: true }
      this.shops.set(handle, reinstalled)
      return reinstalled
    }
    const random = seededRandom(seedOf(`commerce:${handle}`))
    const currency = handle === SEEDED_SHOP ? "EUR" : random.pick(["EUR", "USD", "GBP", "MXN"])
    const shop: Shop = {
      id: handle,
      name: handle.split("-").map((word) => word.charAt(0).toUpperCase() + word.slice(1)).join(" "),
      domain: shopDomain(handle),
      currency,
      timezone: currency === "USD" ? "America/New_York" : currency === "MXN" ? "America/Mexico_City" : "Europe/Madrid",
      installed: true
    }
    this.shops.set(handle, shop)
    const variants: Array<{ readonly product: Product; readonly variant: ProductVariant }> = []
    for (let n = 1; n <= COMMERCE_SEEDED_PRODUCTS_PER_SHOP; n++) {
      const title = `${random.pick(PRODUCT_WORDS)} ${random.pick(PRODUCT_KINDS)}`
      const productId = `prod_${handle}_${String(n).padStart(3, "0")}`
      const priceMinor = random.int(5, 150) * 100 + random.pick([0, 50, 95])
      const sized = random.next() < 0.4
      const product: Product = {
        id: productId,
        shop_id: handle,
        title,
        handle: `${title.toLowerCase().replace(/ /g, "-")}-${n}`,
        status: random.next() < 0.9 ? "active" : "draft",
        variants: (sized ? SIZES : ["Default"]).map((size, index) => ({
          id: `var_${handle}_${String(n).padStart(3, "0")}_${index + 1}`,
          sku: `SKU-${String(n).padStart(3, "0")}-${size.toUpperCase()}`,
          title: size,
          price: money(priceMinor),
          stock: random.int(0, 60)
        })),
        updated_at: isoAt(SEED_EPOCH_MS - random.int(30, 200) * 86_400_000)
      }
      this.products.set(productId, product)
      for (const variant of product.variants) variants.push({ product, variant })
    }
    this.nextNumber.set(handle, 1001)
    for (let n = 1; n <= COMMERCE_SEEDED_ORDERS_PER_SHOP; n++) {
      const person = seededPerson(random, n, "buyer.example")
      const createdMs = SEED_EPOCH_MS - random.int(1, 60) * 86_400_000 - random.int(0, 86_399) * 1000
      const path: Array<OrderMilestone> = ["created"]
      const roll = random.next()
      if (roll < 0.1) path.push("cancelled")
      else if (roll > 0.2) {
        path.push("paid")
        if (roll > 0.45) path.push("fulfilled")
        if (roll > 0.65) path.push("delivered")
        if (roll > 0.93) path.push("refunded")
      }
      const lineCount = random.int(1, 3)
      const lines: Array<OrderLine> = []
      for (let l = 0; l < lineCount; l++) {
        const { product, variant } = random.pick(variants)
        lines.push({
          product_id: product.id,
          variant_id: variant.id,
          sku: variant.sku,
          title: product.title,
          quantity: random.int(1, 3),
          price: variant.price
        })
      }
      const withheld = random.next() < 0.1
      this.addOrder(shop, {
        lines,
        email: withheld ? null : person.email,
        phone: withheld || random.next() < 0.3 ? null : person.phone,
        customer_id: withheld ? null : `cust_${handle}_${String(n).padStart(4, "0")}`,
        token: `${handle}${String(n).padStart(6, "0")}`,
        arrived: false,
        attributes: random.next() < 0.5 ? { utm_source: "adplatform", utm_medium: "paid_social" } : {},
        milestones: path.map((status, step) => ({ status, at: isoAt(createdMs + step * random.int(1, 48) * 3_600_000) }))
      })
    }
    return shop
  }

  shop(handle: string): Shop | undefined {
    return this.shops.get(handle)
  }

  allShops(): ReadonlyArray<Shop> {
    return [...this.shops.values()]
  }

  state() {
    const byId = <A extends { readonly id: string }>(items: Iterable<A>) => [...items].sort((a, b) => (a.id < b.id ? -1 : 1))
    return {
      shops: byId(this.shops.values()),
      products: byId(this.products.values()),
      orders: byId(this.orders.values())
    }
  }

  // --- the provider's API -----------------------------------------------------------------

  listProducts(shopId: string, query: { readonly limit?: number; readonly after?: string }): Page<Product> | WorldRefusal {
    return keysetPage([...this.products.values()].filter((product) => product.shop_id === shopId), (p) => p.id, query)
  }

  /** Live stock of one product, per variant. */
  productStock(shopId: string, productId: string) {
    const product = ownedOne(this.products.get(productId), (p) => p.shop_id === shopId, "product", productId)
    if (product instanceof WorldRefusal) return product
    return {
      product_id: product.id,
      variants: product.variants.map((variant) => ({ id: variant.id, sku: variant.sku, stock: variant.stock }))
    }
  }

  /** Orders of the shop updated at or after `updated_since`, oldest change first. */
  listOrders(
    shopId: string,
    query: { readonly limit?: number; readonly after?: string; readonly updated_since?: string }
  ): Page<Order> | WorldRefusal {
    const since = sinceFilter("updated_since", query.updated_since)
    if (since instanceof WorldRefusal) return since
    const orders = [...this.orders.values()].filter((order) =>
      order.shop_id === shopId && (since === null || Date.parse(order.updated_at) >= since)
    )
    orders.push(...this.generatedCandidates(shopId, query, since))
    return keysetPage(orders, (order) => `${order.updated_at}|${order.id}`, query)
  }

  getOrder(shopId: string, id: string): Order | WorldRefusal {
    return ownedOne(this.orders.get(id) ?? this.generatedById(shopId, id), (order) => order.shop_id === shopId, "order", id)
  }

  // --- test controls ----------------------------------------------------------------------

  /**
   * `{objects: [{id: <order id>, status}]}` moves orders (pushes `orders/updated`);
   * `{objects: [{id: <order id>, refund: "12.50"}]}` refunds part of a paid order (pushes
   * `orders/updated`; the part that leaves nothing makes it `refunded`);
   * `{objects: [{id: <variant id>, stock}]}` sets a variant's stock (no push).
   */
  patchObjects(objects: ReadonlyArray<unknown>): Array<WorldPush> | WorldRefusal {
    const changes: Array<() => Array<WorldPush>> = []
    for (const object of objects) {
      const move = Schema.decodeUnknownResult(OrderMove)(object)
      if (Result.isSuccess(move)) {
        const order = this.orders.get(move.success.id)
        if (!order) return new WorldRefusal(404, "not_found", `no order ${move.success.id}`)
        const status = move.success.status
        if (status !== order.status && !NEXT[order.status].includes(status)) {
          return new WorldRefusal(409, "conflict", `order ${order.id} cannot move from ${order.status} to ${status}`)
        }
        changes.push(() => this.moveOrder(order.id, status))
        continue
      }
      const refund = Schema.decodeUnknownResult(RefundSet)(object)
      if (Result.isSuccess(refund)) {
        const order = this.orders.get(refund.success.id)
        if (!order) return new WorldRefusal(404, "not_found", `no order ${refund.success.id}`)
        const minor = minorOf(refund.success.refund)
        const left = refundableMinor(order)
        if (!order.milestones.some((m) => m.status === "paid") || order.status === "refunded" || order.status === "cancelled") {
          return new WorldRefusal(409, "conflict", `order ${order.id} is not paid and unrefunded (${order.status})`)
        }
        if (minor <= 0 || minor > left) {
          return new WorldRefusal(400, "invalid_parameter", `refund must be more than 0 and at most ${money(left)}`)
        }
        // The last part refunds the order: the `refunded` milestone, as a whole refund is.
        changes.push(() => minor === left ? this.moveOrder(order.id, "refunded") : this.refundPart(order.id, minor))
        continue
      }
      const stock = Schema.decodeUnknownResult(StockSet)(object)
      if (Result.isSuccess(stock)) {
        const product = [...this.products.values()].find((candidate) =>
          candidate.variants.some((variant) => variant.id === stock.success.id)
        )
        if (!product) return new WorldRefusal(404, "not_found", `no variant ${stock.success.id}`)
        changes.push(() => {
          this.setStock(stock.success.id, () => stock.success.stock)
          return []
        })
        continue
      }
      return new WorldRefusal(
        400,
        "invalid_parameter",
        "objects[] must be {id: <order id>, status}, {id: <order id>, refund: \"<amount>\"} or {id: <variant id>, stock}"
      )
    }
    // Checked first, applied after: a bad object changes nothing.
    return changes.flatMap((change) => change())
  }

  /** `{arrive: {kind: "order", ...}}` (pushes `orders/create`) or `{arrive: {kind: "app_uninstalled"}}`. */
  arrive(arrival: unknown): Arrived | WorldRefusal {
    const volume = Schema.decodeUnknownResult(GeneratedOrdersArrival)(arrival)
    if (Result.isSuccess(volume)) return this.generateOrders(volume.success)
    const uninstall = Schema.decodeUnknownResult(UninstallArrival)(arrival)
    if (Result.isSuccess(uninstall)) {
      const shop = this.shops.get(uninstall.success.shop ?? SEEDED_SHOP)
      if (!shop) return new WorldRefusal(404, "not_found", `no shop ${uninstall.success.shop}`)
      const uninstalled = { ...shop, installed: false }
      this.shops.set(shop.id, uninstalled)
      return { reply: { shop: uninstalled }, pushes: [this.push(uninstalled, "app/uninstalled", uninstalled)] }
    }
    const decoded = Schema.decodeUnknownResult(OrderArrival)(arrival)
    if (Result.isFailure(decoded)) {
      return new WorldRefusal(
        400,
        "invalid_parameter",
        "arrive must be {kind: \"order\", shop?, email?, phone?, customer_id?, status?, attributes?, lines?: [{variant_id, quantity}]} or {kind: \"app_uninstalled\", shop?} or {kind: \"generated_orders\", shop?, orders: 1..1000000, seed?}"
      )
    }
    const input = decoded.success
    const shop = this.shops.get(input.shop ?? SEEDED_SHOP)
    if (!shop) return new WorldRefusal(404, "not_found", `no shop ${input.shop}`)
    const shopVariants = [...this.products.values()]
      .filter((product) => product.shop_id === shop.id)
      .flatMap((product) => product.variants.map((variant) => ({ product, variant })))
    const wanted = input.lines ?? [{ variant_id: shopVariants[0]!.variant.id, quantity: 1 }]
    const lines: Array<OrderLine> = []
    for (const line of wanted) {
      const found = shopVariants.find((candidate) => candidate.variant.id === line.variant_id)
      if (!found) return new WorldRefusal(404, "not_found", `no variant ${line.variant_id} in shop ${shop.id}`)
      lines.push({
        product_id: found.product.id,
        variant_id: found.variant.id,
        sku: found.variant.sku,
        title: found.product.title,
        quantity: line.quantity,
        price: found.variant.price
      })
    }
    const at = isoAt(this.now())
    const token = randomUUID().replaceAll("-", "")
    const order = this.addOrder(shop, {
      lines,
      email: input.email ?? null,
      phone: input.phone ?? null,
      customer_id: input.customer_id ?? null,
      token,
      arrived: true,
      attributes: input.attributes ?? {},
      milestones: input.status === "paid" ? [{ status: "created", at }, { status: "paid", at }] : [{ status: "created", at }]
    })
    for (const line of lines) this.setStock(line.variant_id, (stock) => Math.max(0, stock - line.quantity))
    return { reply: { order }, pushes: [this.push(shop, "orders/create", order)] }
  }

  /**
   * `{kind: "generated_orders", shop?, orders, seed?}`: the shop holds `orders` more orders, each
   * `created` → `paid` → `fulfilled` → `delivered` (four milestones), deterministic from the seed
   * and computed from their index on read (a 100,000-order shop costs no memory). No callbacks:
   * they are for a sync to read. One block per shop; a second arrival replaces it.
   */
  private generateOrders(input: typeof GeneratedOrdersArrival.Type): Arrived | WorldRefusal {
    const shop = this.shops.get(input.shop ?? SEEDED_SHOP)
    if (!shop) return new WorldRefusal(404, "not_found", `no shop ${input.shop}`)
    const variants = [...this.products.values()]
      .filter((product) => product.shop_id === shop.id && product.status === "active")
      .flatMap((product) => product.variants.map((variant) => ({ product, variant })))
    const firstNumber = this.nextNumber.get(shop.id) ?? 1001
    this.nextNumber.set(shop.id, firstNumber + input.orders)
    // Every order delivered an hour before now at the latest: all of them are in any `updated_since` read from then on.
    const lastDeliveredMs = this.now() - 3_600_000
    const block: GeneratedBlock = {
      seed: input.seed ?? 1,
      count: input.orders,
      startMs: Math.floor((lastDeliveredMs - 3 * 86_400_000 - (input.orders - 1) * 1000) / 1000) * 1000,
      firstNumber,
      variants
    }
    this.generated.set(shop.id, block)
    const first = this.generatedOrder(shop, block, 0)
    const last = this.generatedOrder(shop, block, block.count - 1)
    return {
      reply: {
        shop: shop.id,
        orders: block.count,
        milestones: block.count * GENERATED_STEPS.length,
        first_order_id: first.id,
        last_order_id: last.id,
        first_updated_at: first.updated_at,
        last_updated_at: last.updated_at
      },
      pushes: []
    }
  }

  /** Order `i` of a generated block: the same for the same seed and index, whenever it is read. */
  private generatedOrder(shop: Shop, block: GeneratedBlock, i: number): Order {
    const random = seededRandom(seedOf(`commerce:${shop.id}:${block.seed}:${i}`))
    const number = block.firstNumber + i
    const createdMs = block.startMs + i * 1000
    const milestones = GENERATED_STEPS.map(([status, after]) => ({ status, at: isoAt(createdMs + after) }))
    const lines: Array<OrderLine> = []
    const lineCount = block.variants.length === 0 ? 0 : random.int(1, 3)
    for (let l = 0; l < lineCount; l++) {
      const { product, variant } = random.pick(block.variants)
      lines.push({
        product_id: product.id,
        variant_id: variant.id,
        sku: variant.sku,
        title: product.title,
        quantity: random.int(1, 3),
        price: variant.price
      })
    }
    const token = `${shop.id}g${block.seed}_${i}`
    const withheld = random.next() < 0.1
    return {
      ...statusFields(milestones, []),
      refunds: [],
      id: generatedOrderId(shop.id, block.seed, i),
      shop_id: shop.id,
      name: `#${number}`,
      number,
      milestones,
      currency: shop.currency,
      total_price: money(lines.reduce((sum, line) => sum + minorOf(line.price) * line.quantity, 0)),
      lines,
      email: withheld ? null : `buyer.${block.seed}.${i}@generated.example`,
      phone: withheld || random.next() < 0.3 ? null : `+1555${String(i % 10_000_000).padStart(7, "0")}`,
      customer_id: withheld ? null : `cust_${shop.id}_g${block.seed}_${i}`,
      cart_token: `cart_${token}`,
      checkout_token: `chk_${token}`,
      attributes: random.next() < 0.5 ? { utm_source: "adplatform", utm_medium: "paid_social" } : {},
      created_at: milestones[0]!.at,
      updated_at: milestones[milestones.length - 1]!.at
    }
  }

  /**
   * The generated orders a page may need: the first `limit + 1` after the cursor and at or after
   * `since`. Keys grow with the index, so the start is a binary search; the rest of the block
   * cannot be on this page (keysetPage merges these with the stored orders and cuts the page).
   */
  private generatedCandidates(
    shopId: string,
    query: { readonly limit?: number; readonly after?: string },
    since: number | null
  ): Array<Order> {
    const block = this.generated.get(shopId)
    const shop = this.shops.get(shopId)
    if (block === undefined || shop === undefined) return []
    const updatedMs = (i: number) => block.startMs + i * 1000 + GENERATED_STEPS[GENERATED_STEPS.length - 1]![1]
    const keyOf = (i: number) => `${isoAt(updatedMs(i))}|${generatedOrderId(shopId, block.seed, i)}`
    const afterKey = cursorKey(query.after)
    // The first index whose key is past the cursor and whose change is at or after `since`.
    let lo = 0
    let hi = block.count
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const before = (afterKey !== null && keyOf(mid) <= afterKey) || (since !== null && updatedMs(mid) < since)
      if (before) lo = mid + 1
      else hi = mid
    }
    const wanted = Math.min(typeof query.limit === "number" && query.limit > 0 ? query.limit : DEFAULT_PAGE, MAX_PAGE) + 1
    const orders: Array<Order> = []
    for (let i = lo; i < Math.min(block.count, lo + wanted); i++) orders.push(this.generatedOrder(shop, block, i))
    return orders
  }

  private generatedById(shopId: string, id: string): Order | undefined {
    const block = this.generated.get(shopId)
    const shop = this.shops.get(shopId)
    if (block === undefined || shop === undefined) return undefined
    const prefix = generatedOrderId(shopId, block.seed, 0).slice(0, -1)
    const index = id.startsWith(prefix) ? Number(id.slice(prefix.length)) : NaN
    return Number.isInteger(index) && index >= 0 && index < block.count && generatedOrderId(shopId, block.seed, index) === id
      ? this.generatedOrder(shop, block, index)
      : undefined
  }

  private addOrder(
    shop: Shop,
    input: {
      readonly lines: ReadonlyArray<OrderLine>
      readonly email: string | null
      readonly phone: string | null
      readonly customer_id: string | null
      readonly token: string
      readonly arrived: boolean
      readonly attributes: Readonly<Record<string, string>>
      readonly milestones: ReadonlyArray<{ readonly status: OrderMilestone; readonly at: string }>
    }
  ): Order {
    const number = this.nextNumber.get(shop.id) ?? 1001
    this.nextNumber.set(shop.id, number + 1)
    const totalMinor = input.lines.reduce((sum, line) => sum + minorOf(line.price) * line.quantity, 0)
    const first = input.milestones[0]!
    const id = `order_${shop.id}_${number}${input.arrived ? `_${input.token.slice(0, 6)}` : ""}`
    const refunded = input.milestones.find((m) => m.status === "refunded")
    const refunds = refunded === undefined ? [] : [{ id: `refund_${id}_1`, amount: money(totalMinor), at: refunded.at }]
    const order: Order = {
      ...statusFields(input.milestones, refunds),
      // Arrivals carry a random suffix: a restarted sandbox never reuses an order id the service has seen.
      id,
      refunds,
      shop_id: shop.id,
      name: `#${number}`,
      number,
      milestones: input.milestones,
      currency: shop.currency,
      total_price: money(totalMinor),
      lines: input.lines,
      email: input.email,
      phone: input.phone,
      customer_id: input.customer_id,
      cart_token: `cart_${input.token}`,
      checkout_token: `chk_${input.token}`,
      attributes: input.attributes,
      created_at: first.at,
      updated_at: input.milestones[input.milestones.length - 1]!.at
    }
    this.orders.set(order.id, order)
    return order
  }

  private moveOrder(id: string, status: OrderMilestone): Array<WorldPush> {
    const order = this.orders.get(id)!
    if (order.status === status) return []
    const at = isoAt(Math.max(this.now(), Date.parse(order.updated_at) + 1))
    // Skipped steps are filled in (an order fulfilled straight from `created` was paid on the way).
    const happy: ReadonlyArray<OrderMilestone> = ["created", "paid", "fulfilled", "delivered"]
    const steps: Array<OrderMilestone> = happy.includes(status) && happy.includes(order.status)
      ? happy.slice(happy.indexOf(order.status) + 1, happy.indexOf(status) + 1)
      : [status]
    const milestones = [...order.milestones, ...steps.map((step) => ({ status: step, at }))]
    // Refunding the order refunds what is left of it.
    const refunds = status === "refunded" ? withRefund(order, refundableMinor(order), at) : order.refunds
    const moved: Order = { ...order, ...statusFields(milestones, refunds), milestones, refunds, updated_at: at }
    this.orders.set(id, moved)
    const shop = this.shops.get(order.shop_id)!
    return [this.push(shop, "orders/updated", moved)]
  }

  private refundPart(id: string, minor: number): Array<WorldPush> {
    const order = this.orders.get(id)!
    const at = isoAt(Math.max(this.now(), Date.parse(order.updated_at) + 1))
    const refunds = withRefund(order, minor, at)
    const refunded: Order = { ...order, ...statusFields(order.milestones, refunds), refunds, updated_at: at }
    this.orders.set(id, refunded)
    return [this.push(this.shops.get(order.shop_id)!, "orders/updated", refunded)]
  }

  private setStock(variantId: string, change: (stock: number) => number) {
    for (const product of this.products.values()) {
      if (!product.variants.some((variant) => variant.id === variantId)) continue
      this.products.set(product.id, {
        ...product,
        variants: product.variants.map((variant) =>
          variant.id === variantId ? { ...variant, stock: change(variant.stock) } : variant
        ),
        updated_at: isoAt(this.now())
      })
    }
  }

  private push(shop: Shop, topic: string, object: unknown): WorldPush {
    return worldPush(shop.id, topic, this.now(), { object }, { shop_domain: shop.domain })
  }

}

const generatedOrderId = (shopId: string, seed: number, i: number) => `order_${shopId}_g${seed}_${i}`

/** The key a keyset cursor carries (world-kit's encoding), or null when there is none or it is not one. */
const cursorKey = (after: string | undefined): string | null => {
  if (after === undefined || after === "") return null
  const text = Buffer.from(after, "base64url").toString("utf8")
  return text.startsWith("k:") ? text.slice(2) : null
}

/** What of the order is not refunded yet, in minor units. */
const refundableMinor = (order: Order) =>
  minorOf(order.total_price) - order.refunds.reduce((sum, refund) => sum + minorOf(refund.amount), 0)

const withRefund = (order: Order, minor: number, at: string): ReadonlyArray<OrderRefund> =>
  minor <= 0 ? order.refunds : [...order.refunds, { id: `refund_${order.id}_${order.refunds.length + 1}`, amount: money(minor), at }]

/** The order's status fields as its milestones and refunds make them. */
const statusFields = (milestones: ReadonlyArray<{ readonly status: OrderMilestone }>, refunds: ReadonlyArray<OrderRefund>) => {
  const reached = new Set(milestones.map((milestone) => milestone.status))
  const status = milestones[milestones.length - 1]!.status
  return {
    status,
    financial_status: reached.has("refunded")
      ? ("refunded" as const)
      : refunds.length > 0
      ? ("partially_refunded" as const)
      : reached.has("paid")
      ? ("paid" as const)
      : reached.has("cancelled")
      ? ("voided" as const)
      : ("pending" as const),
    fulfillment_status: reached.has("delivered")
      ? ("delivered" as const)
      : reached.has("fulfilled")
      ? ("fulfilled" as const)
      : null
  }
}
