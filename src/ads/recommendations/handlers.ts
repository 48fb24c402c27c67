import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdActions } from "../actions/service.ts"
import { Principal } from "../../kernel/principal.ts"
import { ProfileAccess } from "../../kernel/access.ts"
import { Recommendations } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { RecommendationsApi } from "./api.ts"

export const RecommendationsHandlers = HttpApiBuilder.group(groupApi(RecommendationsApi), "recommendations", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const recommendations = yield* Recommendations
    return handlers.handleAll({
      listRecommendations: ({ query }) => Effect.flatMap(access.current, (profile) => recommendations.list(profile, query)),
      dismissRecommendation: ({ params }) =>
        Effect.flatMap(access.current, (profile) => recommendations.dismiss(profile, params.id)),
      applyRecommendation: ({ params, payload }) =>
        Effect.flatMap(Principal, (actor) =>
          Effect.flatMap(access.current, (profile) => recommendations.apply(actor, profile, params.id, payload)))
    })
  })).pipe(Layer.provide([Recommendations.layer.pipe(Layer.provide(AdActions.layer)), ProfileAccess.layer]))
