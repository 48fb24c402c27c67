/**
 * The owner of the commerce copy (`commerce_products`, `commerce_orders`) and of the milestone
 * ledger (`commerce_order_milestones`) that keeps each (order, status) to one
 * `order.status.changed` row. Buyer email and phone are never stored: only their hashes, for lookup.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../../platform/database.ts"
import type { Order, Product } from "../../../connections/providers/commerce/port.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const CopiedProduct = Schema.Struct({
  product_id: Schema.String,
  title: Schema.String,
  handle: Schema.String,
  status: Schema.String,
  variants: Schema.Unknown,
  updated_at: Schema.String
})
export type CopiedProduct = typeof CopiedProduct.Type

export const CopiedOrder = Schema.Struct({
  order_id: Schema.String,
  number: Schema.String,
  name: Schema.String,
  status: Schema.String,
  milestones: Schema.Unknown,
  financial_status: Schema.String,
  fulfillment_status: Schema.NullOr(Schema.String),
  currency: Schema.String,
  total_price: Schema.String,
  lines: Schema.Unknown,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type CopiedOrder = typeof CopiedOrder.Type

export interface OrderHashes {
  readonly emailHash: string | null
  readonly phoneHash: string | null
}

export type OrderLookup =
  | { readonly by: "number"; readonly number: number }
  | { readonly by: "email"; readonly hash: string }
  | { readonly by: "phone"; readonly hash: string }
  | { readonly by: "all" }

export class CommerceCopyRepo extends Context.Service<CommerceCopyRepo, {
  readonly upsertProducts: (profileId: string, shop: string, products: ReadonlyArray<Product>) => Repo<number>
  readonly upsertOrders: (
    profileId: string,
    shop: string,
    orders: ReadonlyArray<{ readonly order: Order; readonly hashes: OrderHashes }>
  ) => Repo<number>
  /** Claims (order, status) pairs; answers the pairs this call claimed (the others were written before). */
  readonly claimMilestones: (
    profileId: string,
    shop: string,
    rows: ReadonlyArray<{ readonly orderId: string; readonly status: string; readonly outboxId: string }>
  ) => Repo<ReadonlyArray<{ readonly order_id: string; readonly status: string }>>
  readonly products: (profileId: string, limit: number, after: string | null) => Repo<ReadonlyArray<CopiedProduct>>
  readonly orders: (profileId: string, lookup: OrderLookup, limit: number, after: string | null) => Repo<ReadonlyArray<CopiedOrder>>
  /** When the connection's last sync finished (a read of `connections`, owned by src/connections/repo.ts). */
  readonly lastSyncedAt: (connectionId: string) => Repo<Date | null>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/CommerceCopyRepo") {
  static readonly layer = Layer.effect(CommerceCopyRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const upsertProducts = (profileId: string, shop: string, products: ReadonlyArray<Product>) =>
        products.length === 0 ? Effect.succeed(0) : Effect.map(
          sql`
          INSERT INTO commerce_products (profile_id, shop, product_id, title, handle, status, variants, updated_at)
          SELECT ${profileId}::uuid, ${shop}, * FROM unnest(
            ${products.map((p) => p.id)}::text[], ${products.map((p) => p.title)}::text[], ${products.map((p) => p.handle)}::text[],
            ${products.map((p) => p.status)}::text[],
            ${products.map((p) => JSON.stringify(p.variants.map((v) => ({ id: v.id, sku: v.sku, title: v.title, price: v.price }))))}::jsonb[],
            ${products.map((p) => p.updated_at)}::timestamptz[])
          ON CONFLICT (profile_id, shop, product_id) DO UPDATE SET
            title = excluded.title, handle = excluded.handle, status = excluded.status, variants = excluded.variants,
            updated_at = excluded.updated_at, synced_at = now()
          RETURNING product_id`,
          (rows) => rows.length
        )

      const upsertOrders = (
        profileId: string,
        shop: string,
        orders: ReadonlyArray<{ readonly order: Order; readonly hashes: OrderHashes }>
      ) => {
        // One row per order id per statement (ON CONFLICT cannot touch a row twice): the latest change wins.
        const latest = new Map<string, { readonly order: Order; readonly hashes: OrderHashes }>()
        for (const item of orders) latest.set(item.order.id, item)
        const list = [...latest.values()]
        return list.length === 0 ? Effect.succeed(0) : Effect.map(
          sql`
          INSERT INTO commerce_orders (profile_id, shop, order_id, number, name, status, milestones, financial_status,
                                       fulfillment_status, currency, total_price, lines, email_hash, phone_hash, created_at, updated_at)
          -- Nulls travel as '' (the driver cannot type an array holding only nulls).
          SELECT ${profileId}::uuid, ${shop}, t.id, t.number, t.name, t.status, t.milestones, t.financial_status,
                 NULLIF(t.fulfillment_status, ''), t.currency, t.total_price, t.lines, NULLIF(t.email_hash, ''),
                 NULLIF(t.phone_hash, ''), t.created_at, t.updated_at
          FROM unnest(
            ${list.map((i) => i.order.id)}::text[], ${list.map((i) => i.order.number)}::bigint[], ${list.map((i) => i.order.name)}::text[],
            ${list.map((i) => i.order.status)}::text[], ${list.map((i) => JSON.stringify(i.order.milestones))}::jsonb[],
            ${list.map((i) => i.order.financial_status)}::text[], ${list.map((i) => i.order.fulfillment_status ?? "")}::text[],
            ${list.map((i) => i.order.currency)}::text[], ${list.map((i) => i.order.total_price)}::text[],
            ${
            list.map((i) =>
              JSON.stringify(i.order.lines.map((l) => ({
                product_id: l.product_id,
                variant_id: l.variant_id,
                sku: l.sku,
                title: l.title,
                quantity: l.quantity,
                price: l.price
              })))
            )
          }::jsonb[],
            ${list.map((i) => i.hashes.emailHash ?? "")}::text[], ${list.map((i) => i.hashes.phoneHash ?? "")}::text[],
            ${list.map((i) => i.order.created_at)}::timestamptz[], ${list.map((i) => i.order.updated_at)}::timestamptz[])
            AS t(id, number, name, status, milestones, financial_status, fulfillment_status, currency, total_price, lines,
                 email_hash, phone_hash, created_at, updated_at)
          ON CONFLICT (profile_id, shop, order_id) DO UPDATE SET
            status = excluded.status, milestones = excluded.milestones, financial_status = excluded.financial_status,
            fulfillment_status = excluded.fulfillment_status, total_price = excluded.total_price, lines = excluded.lines,
            email_hash = excluded.email_hash, phone_hash = excluded.phone_hash, updated_at = excluded.updated_at, synced_at = now()
            -- An older change arriving late (a slow redelivery) does not overwrite a newer one.
            WHERE commerce_orders.updated_at <= excluded.updated_at
          RETURNING order_id`,
          (rows) => rows.length
        )
      }

      const claimedRows = decodeRows(Schema.Struct({ order_id: Schema.String, status: Schema.String }))
      const claimMilestones = (
        profileId: string,
        shop: string,
        rows: ReadonlyArray<{ readonly orderId: string; readonly status: string; readonly outboxId: string }>
      ) =>
        rows.length === 0 ? Effect.succeed([]) : claimedRows(sql`
          INSERT INTO commerce_order_milestones (profile_id, shop, order_id, status, outbox_id)
          SELECT ${profileId}::uuid, ${shop}, * FROM unnest(
            ${rows.map((r) => r.orderId)}::text[], ${rows.map((r) => r.status)}::text[], ${rows.map((r) => r.outboxId)}::uuid[])
          ON CONFLICT DO NOTHING
          RETURNING order_id, status`)

      const productRows = decodeRows(CopiedProduct)
      const products = (profileId: string, limit: number, after: string | null) =>
        productRows(sql`
          SELECT product_id, title, handle, status, variants, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
          FROM commerce_products
          WHERE profile_id = ${profileId} AND (${after}::text IS NULL OR product_id > ${after})
          ORDER BY product_id LIMIT ${limit}`)

      const orderRows = decodeRows(CopiedOrder)
      const orders = (profileId: string, lookup: OrderLookup, limit: number, after: string | null) => {
        const where = lookup.by === "number"
          ? sql`AND number = ${lookup.number}`
          : lookup.by === "email"
          ? sql`AND email_hash = ${lookup.hash}`
          : lookup.by === "phone"
          ? sql`AND phone_hash = ${lookup.hash}`
          : sql``
        return orderRows(sql`
          SELECT order_id, number::text AS number, name, status, milestones, financial_status, fulfillment_status, currency,
                 total_price, lines,
                 to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
                 to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
          FROM commerce_orders
          WHERE profile_id = ${profileId} ${where} AND (${after}::text IS NULL OR order_id > ${after})
          ORDER BY order_id LIMIT ${limit}`)
      }

      const lastSyncedAt = (connectionId: string) =>
        Effect.map(
          sql<{ readonly at: string | null }>`SELECT to_char(last_synced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
                                              FROM connections WHERE id = ${connectionId}`,
          (rows) => (rows[0]?.at == null ? null : new Date(rows[0].at))
        )

      return {
        ...atDatabaseBoundary({ upsertProducts, upsertOrders, claimMilestones, products, orders, lastSyncedAt }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
