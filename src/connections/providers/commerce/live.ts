/** `Commerce` over HTTP (docs/sandbox-providers.md, "commerce"), through the shared provider client. */
import { Effect, Layer, Schema } from "effect"
import { ProviderHttp } from "../http.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { apiPath, sessionCall, sessionPages } from "../session-http.ts"
import { Commerce, Order, Product, ProductStock, Shop } from "./port.ts"

const shopPath = (session: ProviderSession, ...rest: ReadonlyArray<string>) => apiPath("accounts", session.accountId, ...rest)

/** One page of a list as the store answered it (the live reads pass its cursor through). */
const PageOf = <S extends Schema.Top>(item: S) =>
  Schema.Struct({
    data: Schema.Array(item),
    paging: Schema.optional(Schema.Struct({ next: Schema.optional(Schema.NullOr(Schema.String)) }))
  })

export const CommerceAdapter = Layer.effect(Commerce)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  const ProductsPage = PageOf(Product)
  const OrdersPage = PageOf(Order)
  const itemsAndNext = <A>(
    page: { readonly data: ReadonlyArray<A>; readonly paging?: { readonly next?: string | null | undefined } | undefined }
  ) => ({
    items: page.data,
    next: page.paging?.next ?? null
  })

  return {
    shop: (session) => sessionCall(http, session, "shop", Shop, { method: "GET", path: shopPath(session) }),
    products: (session) => sessionPages(http, session, "products", Product, shopPath(session, "products")),
    productStock: (session, productId) =>
      sessionCall(http, session, "productStock", ProductStock, {
        method: "GET",
        path: shopPath(session, "products", productId, "stock")
      }),
    orders: (session, options) =>
      sessionPages(http, session, "orders", Order, shopPath(session, "orders"), {
        updated_since: options?.updatedSince?.toISOString()
      }),
    getOrder: (session, id) => sessionCall(http, session, "getOrder", Order, { method: "GET", path: shopPath(session, "orders", id) }),
    productsPage: (session, page) =>
      sessionCall(http, session, "productsPage", ProductsPage, {
        method: "GET",
        path: shopPath(session, "products"),
        query: { limit: page.limit, after: page.after }
      }).pipe(Effect.map(itemsAndNext)),
    ordersPage: (session, page) =>
      sessionCall(http, session, "ordersPage", OrdersPage, {
        method: "GET",
        path: shopPath(session, "orders"),
        query: { limit: page.limit, after: page.after, updated_since: page.updatedSince?.toISOString() }
      }).pipe(Effect.map(itemsAndNext))
  }
}))
