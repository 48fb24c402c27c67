import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { AnalyticsService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { AnalyticsApi } from "./api.ts"

export const AnalyticsHandlers = HttpApiBuilder.group(groupApi(AnalyticsApi), "analytics", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const analytics = yield* AnalyticsService
    return handlers.handleAll({
      overview: ({ query }) => Effect.flatMap(access.current, (profile) => analytics.overview(profile, query)),
      timeseries: ({ query }) => Effect.flatMap(access.current, (profile) => analytics.timeseries(profile, query)),
      breakdown: ({ params, query }) => Effect.flatMap(access.current, (profile) => analytics.breakdown(profile, params.dimension, query))
    })
  })).pipe(Layer.provide([AnalyticsService.layer, ProfileAccess.layer]))
