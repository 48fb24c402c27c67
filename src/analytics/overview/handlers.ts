import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { AnalyticsService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { AnalyticsApi } from "./api.ts"
import { Calibrations } from "../calibration.ts"
import { calibrateOverview } from "../calibrated.ts"

export const AnalyticsHandlers = HttpApiBuilder.group(groupApi(AnalyticsApi), "analytics", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const analytics = yield* AnalyticsService
    const calibrations = yield* Calibrations
    return handlers.handleAll({
      overview: ({ query }) =>
        Effect.flatMap(access.current, (profile) =>
          Effect.flatMap(analytics.overview(profile, query), (answer) => calibrateOverview(calibrations, profile, query, answer))),
      timeseries: ({ query }) => Effect.flatMap(access.current, (profile) => analytics.timeseries(profile, query)),
      breakdown: ({ params, query }) => Effect.flatMap(access.current, (profile) => analytics.breakdown(profile, params.dimension, query))
    })
  })).pipe(Layer.provide([AnalyticsService.layer, ProfileAccess.layer]))
