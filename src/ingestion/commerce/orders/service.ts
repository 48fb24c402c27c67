/**
 * Commerce orders (issue 18 item 2, decision 0064): what the commerce sync and `/hooks/commerce`
 * do with a store's orders and catalogue.
 *
 * - The copy: products without stock, orders without buyer identity (email and phone kept only as
 *   SHA-256 of their normalised form, for the read routes' lookup).
 * - Every milestone an order carries becomes one `order.status.changed` outbox row per (order,
 *   status): the milestone is claimed in `commerce_order_milestones` in the transaction that
 *   writes the row, so a redelivery, a sync overlapping a push or a restart mid-sync writes none twice.
 * - A paid order is a payment outcome through the events domain (`source`/`data.provider`
 *   `commerce`, idempotency key `commerce:<shop>:<order id>`, `order_group` the order: first-payment
 *   rules and same-purchase grouping as for any payment); a refunded order records the refund of
 *   that payment through the payments service. Both are recorded before the milestones are
 *   claimed and are idempotent, so a crash between the two redoes nothing twice.
 */
import { BigDecimal, Context, Effect, Layer, Option, Result, Stream } from "effect"
import type { CommerceOrdersQuery, CommerceProductsQuery } from "../../../../schema/commerce.ts"
import { type DatabaseUnavailable, InvalidParameter } from "../../../../schema/errors.ts"
import type { ProfileContext } from "../../../kernel/principal.ts"
import { ConnectionRecords } from "../../../connections/records.ts"
import type { ConnectionRecord } from "../../../connections/sessions.ts"
import type { NewOutboxRow } from "../../../kernel/outbox/repo.ts"
import { OutboxRepo } from "../../../kernel/outbox/repo.ts"
import type { CheckedEvent, OutcomeOrigin } from "../../events/outcomes/recorder.ts"
import { EventsService } from "../../events/outcomes/service.ts"
import { COMMERCE_DEFINITION } from "../../events/payments/repo.ts"
import { PaymentsService } from "../../events/payments/service.ts"
import { normalizeEmail, normalizePhone } from "../../../identity/normalize.ts"
import { canonicalJson, sha256 } from "../../../platform/json.ts"
import { DEFAULT_PAGE_SIZE, pageOf, parseCursor } from "../../../platform/pagination.ts"
import type { ProviderError } from "../../../connections/providers/errors.ts"
import { Commerce, type Order } from "../../../connections/providers/commerce/port.ts"
import type { ProviderSession } from "../../../connections/providers/oauth/port.ts"
import { type CopiedOrder, type CopiedProduct, CommerceCopyRepo, type OrderHashes, type OrderLookup } from "./repo.ts"

export const ORDER_STATUS_CHANGED = "order.status.changed"
export const COMMERCE_ORIGIN: OutcomeOrigin = { source: "commerce", provider: "commerce" }
const PROVIDER = "commerce"
const SYNC_OVERLAP_MS = 60 * 60 * 1000
/** Payments of one batch recorded at once: up to one recorder batch (MAX_BATCH), which commits them together. */
const PAYMENT_CONCURRENCY = 256

/** The hash the copy keeps of a buyer's email or phone (normalised first), for lookup only. */
export const emailHash = (email: string) => sha256(`email:${normalizeEmail(email)}`)
export const phoneHash = (phone: string): string | null => {
  const normalized = normalizePhone(phone)
  return Result.isSuccess(normalized) ? sha256(`phone:${normalized.success}`) : null
}

const hashesOf = (order: Order): OrderHashes => ({
  emailHash: order.email === null ? null : emailHash(order.email),
  phoneHash: order.phone === null ? null : phoneHash(order.phone)
})

/** The spec's `order.status.changed` (api-endpoints.md, Events), as an outbox row. */
const milestoneEvent = (
  id: string,
  record: ConnectionRecord,
  shop: string,
  order: Order,
  milestone: { readonly status: string; readonly at: string }
): NewOutboxRow => ({
  id,
  profileId: record.profile_id,
  topic: ORDER_STATUS_CHANGED,
  payload: {
    id,
    type: ORDER_STATUS_CHANGED,
    created_at: new Date().toISOString(),
    data: {
      provider: PROVIDER,
      profile_id: record.profile_id,
      connection_id: record.id,
      shop,
      order_id: order.id,
      status: milestone.status,
      status_at: milestone.at,
      name: order.name,
      number: order.number,
      attributes: order.attributes,
      lines: order.lines.map((l) => ({ variant_id: l.variant_id, quantity: l.quantity, sku: l.sku, price: l.price })),
      financial_status: order.financial_status,
      fulfillment_status: order.fulfillment_status,
      total_price: order.total_price,
      currency: order.currency,
      customer_id: order.customer_id,
      cart_token: order.cart_token,
      checkout_token: order.checkout_token,
      created_at: order.created_at,
      updated_at: order.updated_at,
      email: order.email,
      phone: order.phone
    },
    delivery: { profile_id: record.profile_id, provisioned_by_app_id: record.provisioned_by_app_id }
  }
})

export interface SyncCounts {
  readonly products: number
  readonly orders: number
  readonly milestones: number
}

type Json = ReadonlyArray<Readonly<Record<string, unknown>>>
const asArray = (value: unknown): Json =>
  Array.isArray(value) ? value.filter((v): v is Readonly<Record<string, unknown>> => typeof v === "object" && v !== null) : []
const str = (value: unknown) => (typeof value === "string" ? value : String(value ?? ""))

const renderProduct = (row: CopiedProduct) => ({
  id: row.product_id,
  title: row.title,
  handle: row.handle,
  status: row.status,
  variants: asArray(row.variants).map((v) => ({ id: str(v["id"]), sku: str(v["sku"]), title: str(v["title"]), price: str(v["price"]) })),
  updated_at: row.updated_at
})

// Only what the copy keeps: no buyer email, phone, customer id, cart or checkout token.
const renderOrder = (row: CopiedOrder) => ({
  id: row.order_id,
  name: row.name,
  number: Number(row.number),
  status: row.status,
  milestones: asArray(row.milestones).map((m) => ({ status: str(m["status"]), at: str(m["at"]) })),
  financial_status: row.financial_status,
  fulfillment_status: row.fulfillment_status,
  currency: row.currency,
  total_price: row.total_price,
  lines: asArray(row.lines).map((l) => ({
    product_id: str(l["product_id"]),
    variant_id: str(l["variant_id"]),
    sku: str(l["sku"]),
    title: str(l["title"]),
    quantity: Number(l["quantity"] ?? 0),
    price: str(l["price"])
  })),
  created_at: row.created_at,
  updated_at: row.updated_at
})

export type CommerceProductItem = ReturnType<typeof renderProduct>
export type CommerceOrderItem = ReturnType<typeof renderOrder>

export interface CopyPage<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

const lookupOf = (query: CommerceOrdersQuery): Effect.Effect<OrderLookup, InvalidParameter> => {
  const given = [query.number, query.email, query.phone].filter((v) => v !== undefined)
  if (given.length > 1) {
    return Effect.fail(new InvalidParameter({ message: "Look an order up by one of number, email or phone, not several.", reason: "lookup" }))
  }
  if (query.number !== undefined) {
    const digits = query.number.trim().replace(/^#/, "")
    if (!/^[0-9]{1,15}$/.test(digits)) {
      return Effect.fail(new InvalidParameter({ message: "number: expected an order number such as 1001 or #1001.", reason: "number" }))
    }
    return Effect.succeed({ by: "number", number: Number(digits) })
  }
  if (query.email !== undefined) {
    if (!query.email.includes("@")) return Effect.fail(new InvalidParameter({ message: "email: expected an email address.", reason: "email" }))
    return Effect.succeed({ by: "email", hash: emailHash(query.email) })
  }
  if (query.phone !== undefined) {
    const hash = phoneHash(query.phone)
    if (hash === null) return Effect.fail(new InvalidParameter({ message: "phone: expected a phone number such as +15550001001.", reason: "phone" }))
    return Effect.succeed({ by: "phone", hash })
  }
  return Effect.succeed({ by: "all" })
}

export class CommerceOrders extends Context.Service<CommerceOrders, {
  /** Writes the orders into the copy, their payments and refunds, and each new milestone once. Answers the milestones written. */
  readonly ingest: (record: ConnectionRecord, orders: ReadonlyArray<Order>) => Effect.Effect<number, DatabaseUnavailable>
  /**
   * The catalogue and the orders changed since the connection's last finished sync (less an
   * hour's overlap; every order on the first), or since `resumeFrom` (an earlier attempt's
   * checkpoint), `batchSize` at a time. `onBatch` after each, with the counts and the checkpoint:
   * the `updated_at` of the batch's last order, every order up to it being wholly written.
   */
  readonly sync: <E>(
    record: ConnectionRecord,
    session: ProviderSession,
    options: {
      readonly batchSize: number
      readonly resumeFrom?: string | null
      readonly onBatch: (counts: SyncCounts, checkpoint?: string) => Effect.Effect<void, E>
    }
  ) => Effect.Effect<SyncCounts, DatabaseUnavailable | ProviderError | E>
  /** The catalogue of the copy, by product id. */
  readonly products: (profile: ProfileContext, query: CommerceProductsQuery) => Effect.Effect<CopyPage<CommerceProductItem>, DatabaseUnavailable | InvalidParameter>
  /** The orders of the copy, by order id, looked up by number, email or phone. */
  readonly orders: (
    profile: ProfileContext,
    query: CommerceOrdersQuery
  ) => Effect.Effect<CopyPage<CommerceOrderItem>, DatabaseUnavailable | InvalidParameter>
  /** The app was uninstalled from the shop: its live connections disconnected, each with its `connection.revoked` row. */
  readonly uninstalled: (accountId: string) => Effect.Effect<number, DatabaseUnavailable>
}>()("svc/CommerceOrders") {
  static readonly layer = Layer.effect(CommerceOrders)(
    Effect.gen(function*() {
      const copy = yield* CommerceCopyRepo
      const outbox = yield* OutboxRepo
      const connections = yield* ConnectionRecords
      const events = yield* EventsService
      const payments = yield* PaymentsService
      const commerce = yield* Commerce

      const profileOf = (record: ConnectionRecord): ProfileContext => ({
        profileId: record.profile_id,
        workspaceId: record.workspace_id,
        // Outcomes are always recorded; crediting follows the profile's add-on in the attribution worker.
        attributionEnabled: true
      })

      /** The payment outcome of a paid order (idempotent per order); None when it could not be recorded. */
      const recordPayment = (record: ConnectionRecord, shop: string, order: Order, paidAt: string) => {
        const phone = order.phone === null ? null : normalizePhone(order.phone)
        const checked: CheckedEvent = {
          eventName: "payment",
          idempotencyKey: `commerce:${shop}:${order.id}`,
          occurredAt: paidAt,
          valueAmount: order.total_price,
          currency: order.currency,
          subjectRef: null,
          orderGroup: `commerce:${shop}:${order.id}`,
          externalId: order.customer_id,
          email: order.email === null ? null : normalizeEmail(order.email),
          phone: phone !== null && Result.isSuccess(phone) ? phone.success : null,
          crmContactId: null,
          nationalIdHash: null,
          anonymousId: null,
          actionSource: null,
          clickIds: {}
        }
        const hash = sha256(canonicalJson({
          source: COMMERCE_ORIGIN.source,
          shop,
          order_id: order.id,
          amount: checked.valueAmount,
          currency: checked.currency,
          occurred_at: paidAt
        }))
        return events.record(profileOf(record), checked, hash, COMMERCE_ORIGIN).pipe(
          Effect.map(Option.some),
          Effect.catchTags({
            // The first recording stands (the store does not change a paid order's amount).
            IdempotencyKeyConflict: (error) =>
              Effect.as(Effect.logWarning("commerce payment already recorded differently", { order_id: order.id, error }), Option.none()),
            InvalidState: (error) =>
              Effect.as(Effect.logWarning("commerce payment not recorded", { order_id: order.id, error }), Option.none())
          })
        )
      }

      const applyMoney = (record: ConnectionRecord, shop: string, order: Order) =>
        Effect.gen(function*() {
          const paid = order.milestones.find((m) => m.status === "paid")
          if (paid === undefined) return
          const recorded = yield* recordPayment(record, shop, order, paid.at)
          const refunds = order.refunds ?? []
          const whole = order.milestones.some((m) => m.status === "refunded")
          if (!whole && refunds.length === 0) return
          if (Option.isNone(recorded) || recorded.value.conversion_id === null) return
          // The store's refunds so far, as the payment's refund (decision 0067): whole once the order
          // is refunded, else their sum; a repeat or a late delivery answers the same and writes nothing.
          const amount = whole
            ? Option.none<string>()
            : Option.some(BigDecimal.format(BigDecimal.sumAll(refunds.map((refund) => BigDecimal.fromStringUnsafe(refund.amount)))))
          yield* payments.applyProviderRefund(
            { kind: "operator" },
            profileOf(record),
            recorded.value.conversion_id,
            { amount, reason: "refunded in the store" }
          ).pipe(
            Effect.catch((error) =>
              error._tag === "DatabaseUnavailable"
                ? Effect.fail(error)
                : Effect.logWarning("commerce refund not recorded", { order_id: order.id, error })
            )
          )
        })

      const ingest = Effect.fn("CommerceOrders.ingest")(function*(record: ConnectionRecord, orders: ReadonlyArray<Order>) {
        const shop = record.external_account_id ?? ""
        if (orders.length === 0) return 0
        yield* copy.upsertOrders(record.profile_id, shop, orders.map((order) => ({ order, hashes: hashesOf(order) })))
        // A connected store's paid orders are payments out of the box, as the card gateway's are
        // (decision 0067): the built-in definition is created unless one lists `payment` already.
        if (orders.some((order) => order.milestones.some((m) => m.status === "paid"))) {
          yield* payments.ensureBuiltinPayment({ kind: "operator" }, profileOf(record), COMMERCE_DEFINITION, "commerce_first_use").pipe(
            Effect.catchTag("InvalidState", (error) =>
              Effect.logWarning("commerce payment definition not created; payments are recorded without a conversion", { error }))
          )
        }
        // Side by side: the recorder commits concurrent outcomes together (group commit, decision 0036);
        // one after another, a 100,000-order sync waited on a commit per order. One call per order id
        // (its latest change): a key is claimed once, and a refund is never recorded twice at once.
        const latest = new Map<string, Order>()
        for (const order of orders) latest.set(order.id, order)
        yield* Effect.forEach(latest.values(), (order) => applyMoney(record, shop, order), {
          concurrency: PAYMENT_CONCURRENCY,
          discard: true
        })
        const wanted = orders.flatMap((order) =>
          order.milestones.map((milestone) => ({ order, milestone, outboxId: crypto.randomUUID() }))
        )
        return yield* copy.transaction(Effect.gen(function*() {
          const claimed = yield* copy.claimMilestones(
            record.profile_id,
            shop,
            wanted.map((w) => ({ orderId: w.order.id, status: w.milestone.status, outboxId: w.outboxId }))
          )
          const fresh = new Set(claimed.map((c) => `${c.order_id}\u0000${c.status}`))
          const rows = wanted.filter((w) => {
            const key = `${w.order.id}\u0000${w.milestone.status}`
            // A batch may hold one order twice: the first claim writes it.
            if (!fresh.has(key)) return false
            fresh.delete(key)
            return true
          }).map((w) => milestoneEvent(w.outboxId, record, shop, w.order, w.milestone))
          yield* outbox.insert(rows)
          return rows.length
        }))
      })

      const sync = <E>(
        record: ConnectionRecord,
        session: ProviderSession,
        options: {
          readonly batchSize: number
          readonly resumeFrom?: string | null
          readonly onBatch: (counts: SyncCounts, checkpoint?: string) => Effect.Effect<void, E>
        }
      ) => Effect.gen(function*() {
        const shop = record.external_account_id ?? ""
        const last = yield* copy.lastSyncedAt(record.id)
        const resumed = options.resumeFrom == null ? Number.NaN : Date.parse(options.resumeFrom)
        // The overlap re-reads a little: ingest is idempotent, and an order changed while the last sync ran is not missed.
        // A resumed attempt starts at its checkpoint (`updated_since` is inclusive: the orders at that instant are read again).
        const since = !Number.isNaN(resumed)
          ? new Date(resumed)
          : last === null
          ? undefined
          : new Date(last.getTime() - SYNC_OVERLAP_MS)
        let counts: SyncCounts = { products: 0, orders: 0, milestones: 0 }
        const size = Math.max(1, options.batchSize)
        yield* commerce.products(session).pipe(
          Stream.grouped(size),
          Stream.runForEach((batch) =>
            Effect.gen(function*() {
              const n = yield* copy.upsertProducts(record.profile_id, shop, batch)
              counts = { ...counts, products: counts.products + n }
              yield* options.onBatch(counts)
            })
          )
        )
        yield* commerce.orders(session, { updatedSince: since }).pipe(
          Stream.grouped(size),
          Stream.buffer({ capacity: 2 }),
          Stream.runForEach((batch) =>
            Effect.gen(function*() {
              const written = yield* ingest(record, batch)
              counts = { ...counts, orders: counts.orders + batch.length, milestones: counts.milestones + written }
              // Pages come oldest change first: the batch's latest change is how far the copy is complete.
              const reached = batch.reduce((max, order) => Math.max(max, Date.parse(order.updated_at) || 0), 0)
              yield* options.onBatch(counts, reached > 0 ? new Date(reached).toISOString() : undefined)
            })
          )
        )
        return counts
      }).pipe(Effect.withSpan("CommerceOrders.sync"))

      const uninstalled = Effect.fn("CommerceOrders.uninstalled")(function*(accountId: string) {
        return yield* connections.revokeAccount(PROVIDER, accountId, "app_uninstalled")
      })

      const products = Effect.fn("CommerceOrders.products")(function*(profile: ProfileContext, query: CommerceProductsQuery) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const after = Option.getOrNull(Option.map(yield* parseCursor(query.cursor, (k) => k.createdAt === "" && k.id !== ""), (k) => k.id))
        const rows = yield* copy.products(profile.profileId, limit + 1, after)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: "", id: row.product_id }))
        return { data: page.map(renderProduct), pagination }
      })

      const orders = Effect.fn("CommerceOrders.orders")(function*(profile: ProfileContext, query: CommerceOrdersQuery) {
        const lookup = yield* lookupOf(query)
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const after = Option.getOrNull(Option.map(yield* parseCursor(query.cursor, (k) => k.createdAt === "" && k.id !== ""), (k) => k.id))
        const rows = yield* copy.orders(profile.profileId, lookup, limit + 1, after)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: "", id: row.order_id }))
        return { data: page.map(renderOrder), pagination }
      })

      return { ingest, sync, uninstalled, products, orders }
    })
  ).pipe(Layer.provide([CommerceCopyRepo.layer, OutboxRepo.layer, ConnectionRecords.layer, EventsService.layer, PaymentsService.layer]))
}
