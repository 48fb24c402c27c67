/**
 * The commerce copy's reads (routes.tsv Commerce, `commerce:read`; decision 0064): the connected
 * store's catalogue (no stock: stock is read live) and its orders as last synced or pushed, looked
 * up by `number`, `email` or `phone`. No customer identity is ever in the answer: no buyer email,
 * phone, customer id, cart or checkout token.
 */
import { Schema } from "effect"
import { Page, PageQuery } from "./common.ts"

export const CopiedVariant = Schema.Struct({
  id: Schema.String,
  sku: Schema.String,
  title: Schema.String,
  /** Decimal string in the store's currency. */
  price: Schema.String
})

export const CommerceProduct = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  handle: Schema.String,
  status: Schema.String,
  variants: Schema.Array(CopiedVariant),
  updated_at: Schema.String
}).annotate({ identifier: "CommerceProduct" })

export const CommerceOrderLine = Schema.Struct({
  product_id: Schema.String,
  variant_id: Schema.String,
  sku: Schema.String,
  title: Schema.String,
  quantity: Schema.Int,
  price: Schema.String
})

export const CommerceOrder = Schema.Struct({
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
  total_price: Schema.String,
  lines: Schema.Array(CommerceOrderLine),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "CommerceOrder" })

export const CommerceProductPage = Page(CommerceProduct)
export const CommerceOrderPage = Page(CommerceOrder)

export const CommerceProductsQuery = PageQuery
export type CommerceProductsQuery = Schema.Struct.Type<typeof CommerceProductsQuery>

/** At most one of `number`, `email`, `phone`; without any, every order of the copy. */
export const CommerceOrdersQuery = {
  number: Schema.optionalKey(Schema.String.annotate({ description: "The order number (`1001` or `#1001`)" })),
  email: Schema.optionalKey(Schema.String.annotate({ description: "The buyer's email (matched normalised, never answered)" })),
  phone: Schema.optionalKey(Schema.String.annotate({ description: "The buyer's phone (matched normalised, never answered)" })),
  ...PageQuery
}
export type CommerceOrdersQuery = Schema.Struct.Type<typeof CommerceOrdersQuery>
