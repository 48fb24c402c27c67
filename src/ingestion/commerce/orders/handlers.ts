import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../../kernel/access.ts"
import { CommerceOrders } from "./service.ts"
import { groupApi } from "../../../http/group-api.ts"
import { CommerceCopyApi } from "./api.ts"

export const CommerceCopyHandlers = HttpApiBuilder.group(groupApi(CommerceCopyApi), "commerceCopy", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const orders = yield* CommerceOrders
    return handlers.handleAll({
      products: ({ query }) => Effect.flatMap(access.current, (profile) => orders.products(profile, query)),
      orders: ({ query }) => Effect.flatMap(access.current, (profile) => orders.orders(profile, query))
    })
  })).pipe(Layer.provide([CommerceOrders.layer, ProfileAccess.layer]))
