/**
 * `calibrated=true` on the campaign and overview reads (decision 0124), one composition for every
 * surface (REST handlers, MCP tools, RPC): the read's modelled answer unchanged, the measured
 * incrementality of the Calibrations port beside it, under the model the read used.
 */
import { Effect } from "effect"
import type { AdDetail, Campaigns } from "../../schema/analytics-campaigns.ts"
import type { Overview } from "../../schema/analytics.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { ProfileContext } from "../kernel/principal.ts"
import type { Calibrations } from "./calibration.ts"

type Port = Calibrations["Service"]
type Ask = { readonly calibrated?: "true" | "false" | undefined }

/** Each campaign row keeps its modelled figures; its factor (or null) rides beside them (level campaign only). */
export const calibrateCampaigns = (
  calibrations: Port,
  profile: ProfileContext,
  query: Ask,
  answer: Campaigns
): Effect.Effect<Campaigns, DatabaseUnavailable> => {
  if (query.calibrated !== "true" || answer.meta.level !== "campaign") return Effect.succeed(answer)
  return Effect.map(calibrations.factors(profile, answer.meta.model), (factors) => {
    const byCampaign = new Map(factors.map((factor) => [factor.campaign, factor]))
    return { ...answer, data: answer.data.map((row) => ({ ...row, calibration: byCampaign.get(row.platform_id) ?? null })) }
  })
}

/** One campaign's detail with its factor (or null) beside it (level campaign only). */
export const calibrateAd = (
  calibrations: Port,
  profile: ProfileContext,
  query: Ask,
  answer: AdDetail
): Effect.Effect<AdDetail, DatabaseUnavailable> =>
  query.calibrated !== "true" || answer.meta.level !== "campaign"
    ? Effect.succeed(answer)
    : Effect.map(calibrations.factors(profile, answer.meta.model), (factors) => ({
      ...answer,
      data: { ...answer.data, calibration: factors.find((factor) => factor.campaign === answer.data.platform_id) ?? null }
    }))

/** The overview with the campaigns' factors beside its modelled figures. */
export const calibrateOverview = (
  calibrations: Port,
  profile: ProfileContext,
  query: Ask,
  answer: Overview
): Effect.Effect<Overview, DatabaseUnavailable> =>
  query.calibrated !== "true"
    ? Effect.succeed(answer)
    : Effect.map(calibrations.factors(profile, answer.data.model), (calibration) => ({ ...answer, data: { ...answer.data, calibration } }))
