import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { ConversionSyncCatalog } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ConversionSyncCatalogApi } from "./api.ts"

export const ConversionSyncCatalogHandlers = HttpApiBuilder.group(groupApi(ConversionSyncCatalogApi), "conversionSyncCatalog", (handlers) =>
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
