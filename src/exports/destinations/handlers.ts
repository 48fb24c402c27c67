import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { ExportDestinations } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ExportDestinationsApi } from "./api.ts"

export const ExportDestinationsHandlers = HttpApiBuilder.group(groupApi(ExportDestinationsApi), "exportDestinations", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const destinations = yield* ExportDestinations
    const data = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.map(effect, (value) => ({ data: value }))
    return handlers.handleAll({
      listDestinations: ({ query }) => Effect.flatMap(access.current, (profile) => destinations.list(profile, query)),
      createDestination: ({ payload }) => Effect.flatMap(access.current, (profile) => data(destinations.create(profile, payload))),
      updateDestination: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(destinations.update(profile, params.id, payload))),
      deleteDestination: ({ params }) => Effect.flatMap(access.current, (profile) => data(destinations.remove(profile, params.id))),
      testDestination: ({ params, payload }) =>
        Effect.flatMap(access.current, (profile) => data(destinations.testEvent(profile, params.id, payload.event_name)))
    })
  })).pipe(Layer.provide([ExportDestinations.layer, ProfileAccess.layer]))
