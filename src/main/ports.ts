/**
 * The ports a lower context declares and a higher one implements (dependency inversion: imports
 * go down the layers, calls may go up through these). Each is assembled here from the owning
 * context's service, so neither side imports the other.
 */
import { Effect, Layer } from "effect"
import { CommerceAppConnections } from "../accounts/admin/kill-switch.ts"
import { Definitions } from "../attribution/definitions/service.ts"
import { Connections } from "../connections/service.ts"
import { StageOutcomes } from "../connections/stages/outcomes.ts"
import { PushReceivers } from "../connections/hooks/receivers.ts"
import { CommerceHooks } from "../ingestion/commerce/orders/hooks.ts"
import { CrmOutcomes } from "../ingestion/crm-outcomes/service.ts"
import { CardgwPayments } from "../ingestion/sync/cardgw.ts"
import { pushedMessages } from "../messaging/inbox/pushes.ts"
import { Inbox } from "../messaging/inbox/service.ts"

/** The kill switch's connections: the connections context stops and revokes them. */
const CommerceAppConnectionsLive = Layer.effect(CommerceAppConnections)(
  Connections.useSync((connections) => ({
    stopChannels: connections.stopCommerceAppChannels,
    revokeAll: connections.revokeCommerceAppConnections
  }))
).pipe(Layer.provide(Connections.layer))

/** A CRM stage's mapping reads attribution's outcome definitions. */
const StageOutcomesLive = Layer.effect(StageOutcomes)(
  Definitions.useSync((definitions) => ({ outcomeDefinitions: definitions.outcomeDefinitions }))
).pipe(Layer.provide(Definitions.layer))

/** A provider push's orders, payments and CRM deals go to ingestion, its inbound messages to the inbox. */
const PushReceiversLive = Layer.effect(PushReceivers)(
  Effect.gen(function*() {
    const commerce = yield* CommerceHooks
    const crm = yield* CrmOutcomes
    const cardgw = yield* CardgwPayments
    const inbox = yield* Inbox
    return {
      commerce: commerce.handle,
      messages: (provider, body) => {
        const pushes = pushedMessages(provider, body)
        return Effect.as(
          Effect.forEach(pushes, (pushed) => inbox.ingestPushed(provider, pushed.accountId, pushed.messageId), { discard: true }),
          pushes
        )
      },
      crmDeal: crm.fromCallback,
      cardPayment: (body) => Effect.asVoid(cardgw.hook(body))
    }
  })
).pipe(Layer.provide([CrmOutcomes.layer, CardgwPayments.layer, CommerceHooks.layer]), Layer.provide(Inbox.layer))

/** Every port, for the routes and whatever else reaches a service that needs one. */
export const PortsLive = Layer.mergeAll(CommerceAppConnectionsLive, StageOutcomesLive, PushReceiversLive)
