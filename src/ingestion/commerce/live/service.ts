/**
 * Live commerce reads (decision 0061): every call goes to the connected store through the
 * `Commerce` port, never to the service's copy. The profile's current commerce connection is
 * the one read; the page cursor is the store's own, handed through.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { LiveOrdersQuery, LiveProductsQuery } from "../../../../schema/commerce-live.ts"
import {
  AdplatformUnavailable,
  type DatabaseUnavailable,
  type InsufficientScope,
  InvalidParameter,
  InvalidState,
  RateLimitExceeded
} from "../../../../schema/errors.ts"
import type { ProfileContext } from "../../../kernel/principal.ts"
import { ConnectionSessions } from "../../../connections/sessions.ts"
import type { ProviderError } from "../../../connections/providers/errors.ts"
import type { ProviderSession } from "../../../connections/providers/oauth/port.ts"
import { Commerce, type Order, type Product, type ProviderPage } from "../../../connections/providers/commerce/port.ts"
import { HealthcareCheck } from "../../../accounts/healthcare.ts"
import { DEFAULT_PAGE_SIZE } from "../../../platform/pagination.ts"

const PROVIDER = "commerce"

export type LiveReadError = InvalidState | InvalidParameter | RateLimitExceeded | AdplatformUnavailable | DatabaseUnavailable

const noConnection = () =>
  new InvalidState({
    message: "The profile has no commerce connection: connect the store through POST /api/v1/connections/commerce/handoff.",
    reason: "commerce_connection_required"
  })

const reconnectRequired = () =>
  new InvalidState({
    message: "The store's grant is no longer valid: reconnect it through POST /api/v1/connections/commerce/handoff.",
    reason: "reconnect_required",
    reconnect_required: true,
    provider: PROVIDER
  })

export interface LivePage<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

const toPage = <A, B>(page: ProviderPage<A>, render: (item: A) => B): LivePage<B> => ({
  data: page.items.map(render),
  pagination: { has_next: page.next !== null, cursor: page.next }
})

const renderProduct = (product: Product) => ({
  id: product.id,
  title: product.title,
  handle: product.handle,
  status: product.status,
  variants: product.variants.map((v) => ({ id: v.id, sku: v.sku, title: v.title, price: v.price, stock: v.stock })),
  updated_at: product.updated_at
})

// The store's customer id, cart and checkout tokens and attributes stay out: only the documented fields leave.
const renderOrder = (order: Order) => ({
  id: order.id,
  name: order.name,
  number: order.number,
  status: order.status,
  milestones: order.milestones.map((m) => ({ status: m.status, at: m.at })),
  financial_status: order.financial_status,
  fulfillment_status: order.fulfillment_status,
  currency: order.currency,
  total_price: order.total_price,
  lines: order.lines.map((l) => ({
    product_id: l.product_id,
    variant_id: l.variant_id,
    sku: l.sku,
    title: l.title,
    quantity: l.quantity,
    price: l.price
  })),
  email: order.email,
  phone: order.phone,
  created_at: order.created_at,
  updated_at: order.updated_at
})

export type LiveProduct = ReturnType<typeof renderProduct>
export type LiveOrder = ReturnType<typeof renderOrder>

export class CommerceAdapter extends Context.Service<CommerceAdapter, {
  readonly products: (profile: ProfileContext, query: LiveProductsQuery) => Effect.Effect<LivePage<LiveProduct>, LiveReadError>
  /** Refused (403) on a healthcare-family profile: buyer contact is person data. */
  readonly orders: (
    profile: ProfileContext,
    query: LiveOrdersQuery
  ) => Effect.Effect<LivePage<LiveOrder>, LiveReadError | InsufficientScope>
}>()("svc/CommerceAdapter") {
  static readonly layer = Layer.effect(CommerceAdapter)(
    Effect.gen(function*() {
      const sessions = yield* ConnectionSessions
      const commerce = yield* Commerce
      const healthcare = yield* HealthcareCheck

      /** The provider's failure as a documented answer; a dead grant is reported once and answered 409. */
      const mapFailure = (connectionId: string) => (error: ProviderError | DatabaseUnavailable): Effect.Effect<never, LiveReadError> => {
        switch (error._tag) {
          case "DatabaseUnavailable":
            return Effect.fail(error)
          case "ProviderAuthRevoked":
            return Effect.flatMap(sessions.reportAuthRevoked(connectionId), () => Effect.fail(reconnectRequired()))
          case "ProviderThrottled":
            return Effect.fail(
              new RateLimitExceeded({
                message: "The store is throttling reads; retry after the delay it asked for.",
                reason: "provider_throttled",
                provider: PROVIDER,
                retry_after_seconds: Math.max(1, Math.ceil(error.retryAfterSeconds))
              })
            )
          case "ProviderRefused":
            // The store refuses a cursor it did not cut (or one past its life): the caller's parameter.
            return Effect.fail(
              error.status === 400 || error.status === 404 || error.status === 422
                ? new InvalidParameter({
                  message: "cursor: the store did not accept it; start again without a cursor.",
                  reason: "cursor",
                  provider_status: error.status,
                  provider_code: error.code
                })
                : storeUnavailable(error.status, error.detail)
            )
          case "ProviderPermissionMissing":
            return Effect.fail(
              new AdplatformUnavailable({
                message: `The store's grant lacks the permission ${error.permission}; reconnect the store to grant it.`,
                reason: "store_permission_missing",
                provider: PROVIDER
              })
            )
          case "ProviderUnavailable":
            return Effect.fail(storeUnavailable(error.status, error.detail))
        }
      }

      const storeUnavailable = (status: number | null, detail: string) =>
        new AdplatformUnavailable({
          message: "The store could not be read live; retry shortly.",
          reason: "store_unavailable",
          provider: PROVIDER,
          ...(status === null ? {} : { provider_status: status }),
          provider_message: detail.slice(0, 200)
        })

      /** Opens the profile's commerce connection and runs `read` on it, failures mapped. */
      const onStore = <A>(
        profile: ProfileContext,
        read: (session: ProviderSession) => Effect.Effect<A, ProviderError>
      ): Effect.Effect<A, LiveReadError> =>
        Effect.flatMap(sessions.currentOf(profile.profileId, PROVIDER), (found): Effect.Effect<A, LiveReadError> => {
          if (Option.isNone(found)) return Effect.fail(noConnection())
          const connection = found.value
          if (connection.status === "reconnect_required") return Effect.fail(reconnectRequired())
          return sessions.session(connection.id).pipe(
            Effect.flatMap(read),
            Effect.catch(mapFailure(connection.id))
          )
        })

      const products = Effect.fn("CommerceAdapter.products")(function*(profile: ProfileContext, query: LiveProductsQuery) {
        const page = yield* onStore(profile, (session) =>
          commerce.productsPage(session, { limit: query.limit ?? DEFAULT_PAGE_SIZE, after: emptyAsUndefined(query.cursor) }))
        return toPage(page, renderProduct)
      })

      const orders = Effect.fn("CommerceAdapter.orders")(function*(profile: ProfileContext, query: LiveOrdersQuery) {
        yield* healthcare.refuse(profile)
        const updatedSince = new Date(query.updated_since)
        const page = yield* onStore(profile, (session) =>
          commerce.ordersPage(session, {
            limit: query.limit ?? DEFAULT_PAGE_SIZE,
            after: emptyAsUndefined(query.cursor),
            updatedSince
          }))
        return toPage(page, renderOrder)
      })

      return { products, orders }
    })
  ).pipe(Layer.provide([ConnectionSessions.layer, HealthcareCheck.layer]))
}

const emptyAsUndefined = (cursor: string | undefined) => (cursor === undefined || cursor === "" ? undefined : cursor)
