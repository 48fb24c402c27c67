import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { ExportPipeline } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ExportDeliveriesApi } from "./api.ts"

export const ExportDeliveriesHandlers = HttpApiBuilder.group(groupApi(ExportDeliveriesApi), "exportDeliveries", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const pipeline = yield* ExportPipeline
    return handlers.handleAll({
      listDeliveries: ({ query }) => Effect.flatMap(access.current, (profile) => pipeline.deliveries(profile, query))
    })
  })).pipe(Layer.provide([ExportPipeline.layer, ProfileAccess.layer]))
