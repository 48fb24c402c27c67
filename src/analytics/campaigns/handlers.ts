import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ProfileAccess } from "../../kernel/access.ts"
import { CampaignsService } from "./service.ts"
import { groupApi } from "../../http/group-api.ts"
import { CampaignsApi } from "./api.ts"
import { Calibrations } from "../calibration.ts"
import { calibrateAd, calibrateCampaigns } from "../calibrated.ts"

export const CampaignsHandlers = HttpApiBuilder.group(groupApi(CampaignsApi), "campaigns", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const campaigns = yield* CampaignsService
    const calibrations = yield* Calibrations
    return handlers.handleAll({
      list: ({ query }) =>
        Effect.flatMap(access.current, (profile) =>
          Effect.flatMap(campaigns.campaigns(profile, query), (answer) => calibrateCampaigns(calibrations, profile, query, answer))),
      unattributed: ({ query }) => Effect.flatMap(access.current, (profile) => campaigns.unattributed(profile, query)),
      conversions: ({ params, query }) =>
        Effect.flatMap(access.current, (profile) => campaigns.conversions(profile, params.id, query)),
      adsTrend: ({ query }) => Effect.flatMap(access.current, (profile) => campaigns.trend(profile, query)),
      fatigueRisk: ({ query }) => Effect.flatMap(access.current, (profile) => campaigns.fatigueRisk(profile, query)),
      ad: ({ params, query }) =>
        Effect.flatMap(access.current, (profile) =>
          Effect.flatMap(campaigns.ad(profile, params.id, query), (answer) => calibrateAd(calibrations, profile, query, answer)))
    })
  })).pipe(Layer.provide([CampaignsService.layer, ProfileAccess.layer]))
