/**
 * The commerce copy's reads over HTTP (routes.tsv Commerce, `commerce:read`; decision 0064):
 * served from what the sync and `/hooks/commerce` wrote, never from the store.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { CommerceOrderPage, CommerceOrdersQuery, CommerceProductPage, CommerceProductsQuery } from "../../../../schema/commerce.ts"
import { InvalidParameter, profileErrors } from "../../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../../http/policy.ts"

const errors = [...profileErrors, InvalidParameter.wire] as const
const read = policy({ scopes: ["commerce:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

export const CommerceCopyApi = HttpApiGroup.make("commerceCopy")
  .add(
    HttpApiEndpoint.get("products", "/commerce/products", {
      query: CommerceProductsQuery,
      success: CommerceProductPage,
      error: errors
    })
      .annotate(OpenApi.Summary, "The connected store's catalogue as last synced (no stock: read it live)")
      .annotate(
        OpenApi.Description,
        "Products and their variants as the last sync or push left them, paged. Stock is never copied: read it live " +
          "(`GET /api/v1/commerce/live/products`, `commerce:live`)."
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("orders", "/commerce/orders", {
      query: CommerceOrdersQuery,
      success: CommerceOrderPage,
      error: errors
    })
      .annotate(OpenApi.Summary, "The connected store's orders as last synced or pushed, looked up by number, email or phone")
      .annotate(
        OpenApi.Description,
        "At most one of `number` (`1001` or `#1001`), `email`, `phone` (else 400 `invalid_parameter`); email and phone are " +
          "matched normalised against a hash the copy keeps. No customer identity is in the answer (no email, phone, customer " +
          "id, cart or checkout token): read those live (`GET /api/v1/commerce/live/orders`, `commerce:live`)."
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
