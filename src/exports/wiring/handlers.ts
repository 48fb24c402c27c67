import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { ConversionSyncWiring } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ConversionSyncWiringApi } from "./api.ts"

export const ConversionSyncWiringHandlers = HttpApiBuilder.group(groupApi(ConversionSyncWiringApi), "conversionSyncWiring", (handlers) =>
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
