import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../../kernel/access.ts"
import { CommerceAdapter } from "./service.ts"
import { groupApi } from "../../../http/group-api.ts"
import { CommerceLiveApi } from "./api.ts"

export const CommerceLiveHandlers = HttpApiBuilder.group(groupApi(CommerceLiveApi), "commerceLive", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const live = yield* CommerceAdapter
    return handlers.handleAll({
      liveProducts: ({ query }) => Effect.flatMap(access.current, (profile) => live.products(profile, query)),
      liveOrders: ({ query }) => Effect.flatMap(access.current, (profile) => live.orders(profile, query))
    })
  })).pipe(Layer.provide([CommerceAdapter.layer, ProfileAccess.layer]))
