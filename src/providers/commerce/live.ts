/** `Commerce` over HTTP (docs/sandbox-providers.md, "commerce"), through the shared provider client. */
import { Effect, Layer, Schema, Stream } from "effect"
import { ProviderHttp } from "../http.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { decodeAnswer } from "../oauth/live.ts"
import { Commerce, Order, Product, ProductStock, Shop } from "./port.ts"

const shopPath = (session: ProviderSession) => `/v1/accounts/${encodeURIComponent(session.accountId)}`

export const CommerceLive = Layer.effect(Commerce)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  const facts = (operation: string) => ({ provider: "commerce" as const, operation: `commerce.${operation}` })
  const request = (session: ProviderSession, operation: string) => ({
    ...facts(operation),
    connectionId: session.connectionId,
    accessToken: session.accessToken
  })

  const get = <S extends Schema.Top & { readonly DecodingServices: never }>(
    schema: S,
    session: ProviderSession,
    operation: string,
    path: string
  ) =>
    http.call({ ...request(session, operation), method: "GET", path }).pipe(
      Effect.flatMap(decodeAnswer(schema, facts(operation)))
    )

  const list = <S extends Schema.Top & { readonly DecodingServices: never }>(
    schema: S,
    session: ProviderSession,
    operation: string,
    path: string,
    query: Readonly<Record<string, string | undefined>> = {}
  ) =>
    http.pages({ ...request(session, operation), method: "GET", path, query }).pipe(
      Stream.mapEffect(decodeAnswer(schema, facts(operation)))
    )

  const pageOf = <S extends Schema.Top & { readonly DecodingServices: never }>(
    schema: S,
    session: ProviderSession,
    operation: string,
    path: string,
    query: Readonly<Record<string, string | number | undefined>>
  ) =>
    http.call({ ...request(session, operation), method: "GET", path, query }).pipe(
      Effect.flatMap(decodeAnswer(
        Schema.Struct({
          data: Schema.Array(schema),
          paging: Schema.optional(Schema.Struct({ next: Schema.optional(Schema.NullOr(Schema.String)) }))
        }),
        facts(operation)
      )),
      Effect.map((page) => ({ items: page.data, next: page.paging?.next ?? null }))
    )

  return {
    shop: (session) => get(Shop, session, "shop", shopPath(session)),
    products: (session) => list(Product, session, "products", `${shopPath(session)}/products`),
    productStock: (session, productId) =>
      get(ProductStock, session, "productStock", `${shopPath(session)}/products/${encodeURIComponent(productId)}/stock`),
    orders: (session, options) =>
      list(Order, session, "orders", `${shopPath(session)}/orders`, {
        updated_since: options?.updatedSince?.toISOString()
      }),
    getOrder: (session, id) => get(Order, session, "getOrder", `${shopPath(session)}/orders/${encodeURIComponent(id)}`),
    productsPage: (session, page) =>
      pageOf(Product, session, "productsPage", `${shopPath(session)}/products`, { limit: page.limit, after: page.after }),
    ordersPage: (session, page) =>
      pageOf(Order, session, "ordersPage", `${shopPath(session)}/orders`, {
        limit: page.limit,
        after: page.after,
        updated_since: page.updatedSince?.toISOString()
      })
  }
}))
