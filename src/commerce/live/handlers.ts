import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { CommerceLive } from "./service.ts"

export const CommerceLiveHandlers = HttpApiBuilder.group(Api, "commerceLive", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const live = yield* CommerceLive
    return handlers.handleAll({
      liveProducts: ({ query }) => Effect.flatMap(access.current, (profile) => live.products(profile, query)),
      liveOrders: ({ query }) => Effect.flatMap(access.current, (profile) => live.orders(profile, query))
    })
  })).pipe(Layer.provide([CommerceLive.layer, ProfileAccess.layer]))
