/**
 * `/hooks/commerce` after the signature check (src/connections/hooks/service.ts dispatches here):
 * `orders/create` and `orders/updated` take the order the callback carries down the same path
 * as the sync (CommerceOrders.ingest); `app/uninstalled` disconnects the shop's connections with
 * `connection.revoked`. Each callback id is handled once (`provider_events`); what it causes is
 * idempotent too, so a crash before the id is recorded redoes nothing twice.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { ConnectionRecords } from "../../../connections/records.ts"
import { ConnectionSessions } from "../../../connections/sessions.ts"
import { Commerce, Order } from "../../../connections/providers/commerce/port.ts"
import { CommerceOrders } from "./service.ts"

const PROVIDER = "commerce"

const Callback = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  account_id: Schema.String,
  data: Schema.optionalKey(Schema.Struct({ object: Schema.optionalKey(Schema.Unknown) }))
})
const decodeCallback = Schema.decodeUnknownOption(Callback)
const decodeOrder = Schema.decodeUnknownOption(Order)

export class CommerceHooks extends Context.Service<CommerceHooks, {
  /** Handles one verified callback body; answers whether it was new. */
  readonly handle: (body: unknown) => Effect.Effect<boolean, DatabaseUnavailable>
}>()("svc/CommerceHooks") {
  static readonly layer = Layer.effect(CommerceHooks)(
    Effect.gen(function*() {
      const connections = yield* ConnectionRecords
      const sessions = yield* ConnectionSessions
      const commerce = yield* Commerce
      const orders = yield* CommerceOrders

      const handle = Effect.fn("CommerceHooks.handle")(function*(body: unknown) {
        const callback = decodeCallback(body)
        if (Option.isNone(callback)) return false
        const { id, type, account_id: accountId } = callback.value
        if (yield* connections.eventSeen(PROVIDER, id)) return false
        const live = yield* sessions.liveForAccount(PROVIDER, accountId)
        if (type === "app/uninstalled") {
          yield* orders.uninstalled(accountId)
        } else if (type === "orders/create" || type === "orders/updated") {
          let order = decodeOrder(callback.value.data?.object)
          // A callback without a readable order: the order as the store holds it now.
          if (Option.isNone(order) && live.length > 0) {
            const objectId = callback.value.data?.object
            const orderId = typeof objectId === "object" && objectId !== null && "id" in objectId && typeof objectId.id === "string"
              ? objectId.id
              : null
            if (orderId !== null) {
              order = yield* sessions.session(live[0]!.id).pipe(
                Effect.flatMap((session) => commerce.getOrder(session, orderId)),
                Effect.map(Option.some),
                Effect.catch((error) => error._tag === "DatabaseUnavailable" ? Effect.fail(error) : Effect.succeed(Option.none()))
              )
            }
          }
          if (Option.isSome(order)) {
            for (const record of live) yield* orders.ingest(record, [order.value])
          }
        }
        return yield* connections.claimEvent(PROVIDER, id, live[0]?.id ?? null)
      })

      return { handle }
    })
  ).pipe(Layer.provide([ConnectionRecords.layer, ConnectionSessions.layer, CommerceOrders.layer]))
}
