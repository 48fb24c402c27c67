import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { ExportRules } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { ExportRulesApi } from "./api.ts"

export const ExportRulesHandlers = HttpApiBuilder.group(groupApi(ExportRulesApi), "exportRules", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const rules = yield* ExportRules
    const data = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.map(effect, (value) => ({ data: value }))
    return handlers.handleAll({
      listRules: ({ query }) => Effect.flatMap(access.current, (profile) => rules.list(profile, query)),
      createRule: ({ payload }) => Effect.flatMap(access.current, (profile) => data(rules.create(profile, payload))),
      updateRule: ({ params, payload }) => Effect.flatMap(access.current, (profile) => data(rules.update(profile, params.id, payload)))
    })
  })).pipe(Layer.provide([ExportRules.layer, ProfileAccess.layer]))
