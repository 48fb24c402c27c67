import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../auth/principal.ts"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { ConversionSyncCatalog } from "./service.ts"

export const ConversionSyncCatalogHandlers = HttpApiBuilder.group(Api, "conversionSyncCatalog", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const catalog = yield* ConversionSyncCatalog
    return handlers.handleAll({
      getCatalog: () => Effect.flatMap(access.current, (profile) => Effect.map(catalog.get(profile), (data) => ({ data }))),
      putCatalog: ({ payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.flatMap(access.current, (profile) => Effect.map(catalog.put(actor, profile, payload), (data) => ({ data }))))
    })
  })).pipe(Layer.provide([ConversionSyncCatalog.layer, ProfileAccess.layer]))
