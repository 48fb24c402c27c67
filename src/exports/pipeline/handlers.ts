import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { ExportPipeline } from "./service.ts"

export const ExportDeliveriesHandlers = HttpApiBuilder.group(Api, "exportDeliveries", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const pipeline = yield* ExportPipeline
    return handlers.handleAll({
      listDeliveries: ({ query }) => Effect.flatMap(access.current, (profile) => pipeline.deliveries(profile, query))
    })
  })).pipe(Layer.provide([ExportPipeline.layer, ProfileAccess.layer]))
