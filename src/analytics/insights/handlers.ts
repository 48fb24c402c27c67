import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { meteringKeyOf, Principal, type ProfileContext } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { InsightsService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { InsightsApi } from "./api.ts"

export const InsightsHandlers = HttpApiBuilder.group(groupApi(InsightsApi), "insights", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const insights = yield* InsightsService
    const withProfile = <A, E>(run: (profile: ProfileContext) => Effect.Effect<A, E>) =>
      Effect.flatMap(access.current, run)
    return handlers.handleAll({
      models: ({ query }) => withProfile((profile) => insights.models(profile, query)),
      adPeople: ({ query }) => withProfile((profile) => insights.adPeople(profile, query)),
      dimensionValues: ({ params, query }) => withProfile((profile) => insights.dimensionValues(profile, params.dimension, query)),
      quality: ({ query }) => withProfile((profile) => insights.quality(profile, query)),
      adIds: ({ query }) => withProfile((profile) => insights.adIds(profile, query)),
      refreshUtm: () =>
        Effect.flatMap(Principal, (principal) => withProfile((profile) => insights.refreshUtm(profile, meteringKeyOf(principal)))),
      touches: ({ query }) => withProfile((profile) => insights.touches(profile, query)),
      realtime: () => withProfile((profile) => insights.realtime(profile))
    })
  })).pipe(Layer.provide([InsightsService.layer, ProfileAccess.layer]))
