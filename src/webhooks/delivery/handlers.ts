import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { WebhookDeliveries } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { WebhookDeliveriesApi } from "./api.ts"

export const WebhookDeliveriesHandlers = HttpApiBuilder.group(groupApi(WebhookDeliveriesApi), "webhookDeliveries", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const deliveries = yield* WebhookDeliveries
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(access.current, (profile) => deliveries.list(profile, query)),
      attempts: ({ params, query }) => Effect.flatMap(access.current, (profile) => deliveries.attempts(profile, params.id, query)),
      redeliver: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(deliveries.redeliver(profile, params.id), (data) => ({ data })))
    })
  })).pipe(Layer.provide([WebhookDeliveries.layer, ProfileAccess.layer]))
