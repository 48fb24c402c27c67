import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { WebhookSubscriptions } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { WebhookSubscriptionsApi } from "./api.ts"

/** Single answers ride in `data`, as every success body does (api-concepts.md, Conventions). */
const wrap = <A>(data: A) => ({ data })

export const WebhookSubscriptionsHandlers = HttpApiBuilder.group(groupApi(WebhookSubscriptionsApi), "webhookSubscriptions", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const subscriptions = yield* WebhookSubscriptions
    return handlers.handleAll({
      list: ({ query }) => Effect.flatMap(access.current, (profile) => subscriptions.list(profile, query)),
      create: ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const profile = yield* access.current
          return { data: yield* subscriptions.create(principal, profile, payload) }
        }),
      update: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => Effect.map(subscriptions.update(profile, params.id, payload), wrap)),
      remove: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(subscriptions.remove(profile, params.id), wrap)),
      rotateSecret: ({ params }) => Effect.flatMap(access.current, (profile) => Effect.map(subscriptions.rotateSecret(profile, params.id), wrap))
    })
  })).pipe(Layer.provide([WebhookSubscriptions.layer, ProfileAccess.layer]))
