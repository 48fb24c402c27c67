import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../auth/principal.ts"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { ConversionSyncWiring } from "./service.ts"

export const ConversionSyncWiringHandlers = HttpApiBuilder.group(Api, "conversionSyncWiring", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const wiring = yield* ConversionSyncWiring
    return handlers.handleAll({
      getWiring: ({ query }) => Effect.flatMap(access.current, (p) => Effect.map(wiring.view(p, query.force === "1"), (data) => ({ data }))),
      recheckWiring: () => Effect.flatMap(access.current, (p) => Effect.map(wiring.view(p, true), (data) => ({ data }))),
      wireAdSets: ({ payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.flatMap(access.current, (p) => Effect.map(wiring.wireAdSets(actor, p, payload), (data) => ({ data }))))
    })
  })).pipe(Layer.provide([ConversionSyncWiring.layer, ProfileAccess.layer]))
