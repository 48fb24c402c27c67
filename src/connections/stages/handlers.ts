import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { ConnectionStages } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ConnectionStagesApi } from "./api.ts"

export const ConnectionStagesHandlers = HttpApiBuilder.group(groupApi(ConnectionStagesApi), "connectionStages", (handlers) =>
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
