/**
 * The commerce platform as the service needs it: the shop, its catalogue (products with
 * variants), live stock, and orders changed since a time with their milestones, lines and buyer
 * contact. The shop is the connection's account (`session.accountId`, the shop's handle).
 * Prices are decimal strings in the shop's currency, as the platform answers them.
 */
import type { Effect, Stream } from "effect"
import { Context, Schema } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

export const ORDER_MILESTONES = ["created", "paid", "fulfilled", "delivered", "refunded", "cancelled"] as const
export const OrderMilestone = Schema.Literals(ORDER_MILESTONES)
export type OrderMilestone = typeof OrderMilestone.Type

export const Shop = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  domain: Schema.String,
  currency: Schema.String,
  timezone: Schema.String,
  installed: Schema.Boolean
})
export type Shop = typeof Shop.Type

export const ProductVariant = Schema.Struct({
  id: Schema.String,
  sku: Schema.String,
  title: Schema.String,
  price: Schema.String,
  stock: Schema.Int
})
export type ProductVariant = typeof ProductVariant.Type

export const Product = Schema.Struct({
  id: Schema.String,
  title: Schema.String,
  handle: Schema.String,
  status: Schema.Literals(["active", "draft"]),
  variants: Schema.Array(ProductVariant),
  updated_at: Schema.String
})
export type Product = typeof Product.Type

export const ProductStock = Schema.Struct({
  product_id: Schema.String,
  variants: Schema.Array(Schema.Struct({ id: Schema.String, sku: Schema.String, stock: Schema.Int }))
})
export type ProductStock = typeof ProductStock.Type

export const OrderLine = Schema.Struct({
  product_id: Schema.String,
  variant_id: Schema.String,
  sku: Schema.String,
  title: Schema.String,
  quantity: Schema.Int,
  price: Schema.String
})
export type OrderLine = typeof OrderLine.Type

/** One refund the store made on an order (a part of it, or the rest); `amount` a decimal string. */
export const OrderRefund = Schema.Struct({
  id: Schema.String,
  amount: Schema.String.check(Schema.isPattern(/^\d{1,15}(\.\d{1,6})?$/, { message: "Expected a decimal amount" })),
  at: Schema.String
})
export type OrderRefund = typeof OrderRefund.Type

export const Order = Schema.Struct({
  id: Schema.String,
  /** `#1001`: what the merchant and the buyer call it. */
  name: Schema.String,
  number: Schema.Int,
  /** The latest milestone. */
  status: OrderMilestone,
  milestones: Schema.Array(Schema.Struct({ status: OrderMilestone, at: Schema.String })),
  financial_status: Schema.Literals(["pending", "paid", "partially_refunded", "refunded", "voided"]),
  fulfillment_status: Schema.NullOr(Schema.Literals(["fulfilled", "delivered"])),
  currency: Schema.String,
  total_price: Schema.String,
  lines: Schema.Array(OrderLine),
  /** Null when the buyer withheld it. */
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  customer_id: Schema.NullOr(Schema.String),
  cart_token: Schema.NullOr(Schema.String),
  checkout_token: Schema.NullOr(Schema.String),
  /** The store's refunds, oldest first (absent from a store that does not list them: a `refunded` order is refunded whole). */
  refunds: Schema.optionalKey(Schema.Array(OrderRefund)),
  attributes: Schema.Record(Schema.String, Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type Order = typeof Order.Type

/** One page of a provider list as the provider cut it; `next` is the provider's own cursor. */
export interface ProviderPage<A> {
  readonly items: ReadonlyArray<A>
  readonly next: string | null
}

/** Where a single-page read starts and how much it takes (the provider caps `limit`). */
export interface PageRequest {
  readonly limit: number
  /** The provider's cursor from a previous page's `next`. */
  readonly after?: string | undefined
}

export class Commerce extends Context.Service<Commerce, {
  readonly shop: (session: ProviderSession) => Effect.Effect<Shop, ProviderError>
  readonly products: (session: ProviderSession) => Stream.Stream<Product, ProviderError>
  /** Stock per variant, read live from the platform. */
  readonly productStock: (session: ProviderSession, productId: string) => Effect.Effect<ProductStock, ProviderError>
  /** Orders changed at or after `updatedSince` (every order without it), oldest change first. */
  readonly orders: (
    session: ProviderSession,
    options?: { readonly updatedSince?: Date | undefined }
  ) => Stream.Stream<Order, ProviderError>
  readonly getOrder: (session: ProviderSession, id: string) => Effect.Effect<Order, ProviderError>
  /** One page of the catalogue, stock as the platform holds it now (live reads pass the cursor through). */
  readonly productsPage: (session: ProviderSession, page: PageRequest) => Effect.Effect<ProviderPage<Product>, ProviderError>
  /** One page of the orders changed at or after `updatedSince`, oldest change first. */
  readonly ordersPage: (
    session: ProviderSession,
    page: PageRequest & { readonly updatedSince?: Date | undefined }
  ) => Effect.Effect<ProviderPage<Order>, ProviderError>
}>()("svc/Commerce") {}
