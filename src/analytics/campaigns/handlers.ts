import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { CampaignsService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { CampaignsApi } from "./api.ts"
import { Calibrations } from "../calibration.ts"

export const CampaignsHandlers = HttpApiBuilder.group(groupApi(CampaignsApi), "campaigns", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const campaigns = yield* CampaignsService
    const calibrations = yield* Calibrations
    return handlers.handleAll({
      list: ({ query }) =>
        Effect.flatMap(access.current, (profile) =>
          Effect.flatMap(campaigns.campaigns(profile, query), (answer) => {
            if (query.calibrated !== "true" || answer.meta.level !== "campaign") return Effect.succeed(answer)
            // Each row keeps its modelled figures; the factor (or null) rides beside them.
            return Effect.map(calibrations.factors(profile, answer.meta.model), (factors) => {
              const byCampaign = new Map(factors.map((factor) => [factor.campaign, factor]))
              return { ...answer, data: answer.data.map((row) => ({ ...row, calibration: byCampaign.get(row.platform_id) ?? null })) }
            })
          })),
      unattributed: ({ query }) => Effect.flatMap(access.current, (profile) => campaigns.unattributed(profile, query)),
      conversions: ({ params, query }) =>
        Effect.flatMap(access.current, (profile) => campaigns.conversions(profile, params.id, query)),
      adsTrend: ({ query }) => Effect.flatMap(access.current, (profile) => campaigns.trend(profile, query)),
      fatigueRisk: ({ query }) => Effect.flatMap(access.current, (profile) => campaigns.fatigueRisk(profile, query)),
      ad: ({ params, query }) =>
        Effect.flatMap(access.current, (profile) =>
          Effect.flatMap(campaigns.ad(profile, params.id, query), (answer) =>
            query.calibrated !== "true" || answer.meta.level !== "campaign"
              ? Effect.succeed(answer)
              : Effect.map(calibrations.factors(profile, answer.meta.model), (factors) => ({
                ...answer,
                data: { ...answer.data, calibration: factors.find((factor) => factor.campaign === answer.data.platform_id) ?? null }
              }))))
    })
  })).pipe(Layer.provide([CampaignsService.layer, ProfileAccess.layer]))
