/**
 * The live commerce reads over HTTP (routes.tsv Commerce, `commerce:live`; decision 0061):
 * proxied to the connected store on every call. The orders read answers buyer email and phone,
 * so every call of it lands in the PII access log; the catalogue holds no person data.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { LiveOrderPage, LiveOrdersQuery, LiveProductPage, LiveProductsQuery } from "../../../../schema/commerce-live.ts"
import { AdplatformUnavailable, InvalidParameter, InvalidState, profileErrors, RateLimitExceeded } from "../../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../../http/policy.ts"

const errors = [...profileErrors, InvalidParameter.wire, InvalidState.wire, RateLimitExceeded.wire, AdplatformUnavailable.wire] as const

const live = (personData: boolean) =>
  policy({ scopes: ["commerce:live"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none", ...(personData ? { personData } : {}) })

const failures =
  "409 `invalid_state` with reason `commerce_connection_required` when the profile has no commerce connection, " +
  "`reconnect_required` when the store's grant is dead (reconnect through the hand-off); 429 `rate_limit_exceeded` " +
  "with `Retry-After` when the store throttles; 502 `adplatform_unavailable` with reason `store_unavailable` " +
  "(unreachable, timed out, failing) or `store_permission_missing`; a cursor the store refuses is 400 `invalid_parameter`."

export const CommerceLiveApi = HttpApiGroup.make("commerceLive")
  .add(
    HttpApiEndpoint.get("liveProducts", "/commerce/live/products", {
      query: LiveProductsQuery,
      success: LiveProductPage,
      error: errors
    })
      .annotate(OpenApi.Summary, "The connected store's catalogue with live stock per variant, read from the store now (never the copy)")
      .annotate(
        OpenApi.Description,
        "Products with their variants (`sku`, `price` as a decimal string in the store's currency, `stock` at the time of the call), " +
          "in the store's order, paged by the store: `pagination.cursor` is the store's cursor, handed back as `?cursor`. " + failures
      )
      .annotateMerge(live(false)),
    HttpApiEndpoint.get("liveOrders", "/commerce/live/orders", {
      query: LiveOrdersQuery,
      success: LiveOrderPage,
      error: errors
    })
      .annotate(
        OpenApi.Summary,
        "The connected store's orders changed since `updated_since`, oldest change first, with buyer email and phone, read from the store now"
      )
      .annotate(
        OpenApi.Description,
        "`updated_since` (required; an ISO 8601 date or date-time with an offset, else 400 `invalid_parameter`) bounds the read; " +
          "repeat it with `?cursor`. Each order: `name`, `number`, `status` (latest milestone: created, paid, fulfilled, delivered, " +
          "refunded, cancelled), `milestones` with times, `financial_status`, `fulfillment_status`, `currency`, `total_price`, `lines`, " +
          "and the buyer's `email` and `phone` (null when withheld). Personal data: every call is written to the PII access log; on a " +
          "healthcare-family profile the read is refused with 403 `insufficient_scope` (reason `healthcare_family_profile`). " +
          failures
      )
      .annotateMerge(live(true))
  )
  .prefix("/api/v1")
