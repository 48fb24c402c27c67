import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Api } from "../http/api.ts"
import { ProfileAccess } from "../tenancy/access.ts"
import { Recommendations } from "./service.ts"

export const RecommendationsHandlers = HttpApiBuilder.group(Api, "recommendations", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const recommendations = yield* Recommendations
    return handlers.handleAll({
      listRecommendations: ({ query }) => Effect.flatMap(access.current, (profile) => recommendations.list(profile, query)),
      dismissRecommendation: ({ params }) =>
        Effect.flatMap(access.current, (profile) => recommendations.dismiss(profile, params.id))
    })
  })).pipe(Layer.provide([Recommendations.layer, ProfileAccess.layer]))
