import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../auth/principal.ts"
import { Api } from "../../http/api.ts"
import { ProfileAccess } from "../../tenancy/access.ts"
import { ConnectionStages } from "./service.ts"

export const ConnectionStagesHandlers = HttpApiBuilder.group(Api, "connectionStages", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const stages = yield* ConnectionStages
    return handlers.handleAll({
      listPipelineStages: ({ params, query }) =>
        Effect.gen(function*() {
          const actor = yield* Principal
          const profile = yield* access.current
          const data = yield* stages.stages(actor, profile, params.provider, query.locale)
          return { data }
        })
    })
  })).pipe(Layer.provide([ConnectionStages.layer, ProfileAccess.layer]))
