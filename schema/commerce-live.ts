/**
 * The live commerce reads (routes.tsv Commerce, `commerce:live`; decision 0061): the connected
 * store's catalogue with stock and its orders changed since a time, proxied to the store on
 * every call. Orders carry the buyer's email and phone (personal data).
 */
import { Schema } from "effect"
import { Page, PageQuery } from "./common.ts"
import { DateOrDateTimeParam } from "./query.ts"

export const LiveVariant = Schema.Struct({
  id: Schema.String,
  sku: Schema.String,
  title: Schema.String,
  /** Decimal string in the store's currency, as the store answers it. */
  price: Schema.String,
  /** Units in stock at the store at the time of the call. */
  stock: Schema.Int
})

export const LiveProduct = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  handle: Schema.String,
  status: Schema.String,
  variants: Schema.Array(LiveVariant),
  updated_at: Schema.String
})

export const LiveOrderLine = Schema.Struct({
  product_id: Schema.String,
  variant_id: Schema.String,
  sku: Schema.String,
  title: Schema.String,
  quantity: Schema.Int,
  price: Schema.String
})

export const LiveOrder = Schema.Struct({
  id: Schema.String,
  /** What the merchant and the buyer call it, e.g. `#1001`. */
  name: Schema.String,
  number: Schema.Int,
  /** The latest milestone: `created`, `paid`, `fulfilled`, `delivered`, `refunded` or `cancelled`. */
  status: Schema.String,
  milestones: Schema.Array(Schema.Struct({ status: Schema.String, at: Schema.String })),
  financial_status: Schema.String,
  fulfillment_status: Schema.NullOr(Schema.String),
  currency: Schema.String,
  /** Decimal string in `currency`. */
  total_price: Schema.String,
  lines: Schema.Array(LiveOrderLine),
  /** The buyer's email; null when the buyer withheld it. */
  email: Schema.NullOr(Schema.String),
  /** The buyer's phone; null when the buyer withheld it. */
  phone: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})

export const LiveProductPage = Page(LiveProduct)
export const LiveOrderPage = Page(LiveOrder)

/** `?limit` (1 to 100, default 50) and `?cursor` (the previous page's, handed to the store as is). */
export const LiveProductsQuery = PageQuery
export type LiveProductsQuery = Schema.Struct.Type<typeof LiveProductsQuery>

export const LiveOrdersQuery = {
  updated_since: DateOrDateTimeParam(
    "Required: orders changed at or after this ISO 8601 date or date-time with an offset (repeat it with `cursor`)"
  ),
  ...PageQuery
}
export type LiveOrdersQuery = Schema.Struct.Type<typeof LiveOrdersQuery>
