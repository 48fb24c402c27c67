/**
 * Campaign, ad set and ad reads over HTTP (decision 0042), served from the campaign rollups.
 * `campaigns:read` (the spec's scope for these routes); a connect-broker profile is answered
 * empty, never a 403.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdDetail,
  AdDetailParams,
  AdDetailQuery,
  AdsTrend,
  CampaignConversions,
  CampaignConversionsQuery,
  CampaignParams,
  Campaigns,
  CampaignsListQuery,
  CampaignsQuery,
  FatigueRisk,
  Unattributed
} from "../../../schema/analytics-campaigns.ts"
import { AnalyticsQuery } from "../../../schema/analytics.ts"
import { analyticsErrors, profileRead, ROLLUP_FRESHNESS } from "../policies.ts"

const errors = analyticsErrors
const read = profileRead("campaigns:read")

export const CampaignsApi = HttpApiGroup.make("campaigns")
  .add(
    HttpApiEndpoint.get("list", "/campaigns", { query: CampaignsListQuery, success: Campaigns, error: errors })
      .annotate(
        OpenApi.Summary,
        "Campaign, ad set or ad rows (`level`) with what the model credits to each, spend, ROAS and CAC; rows plus /campaigns/unattributed add up to the overview"
      )
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("unattributed", "/campaigns/unattributed", { query: CampaignsQuery, success: Unattributed, error: errors })
      .annotate(OpenApi.Summary, "The remainder no campaign (ad set, ad) of the level got under the model")
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("conversions", "/campaigns/:id/conversions", {
      params: CampaignParams,
      query: CampaignConversionsQuery,
      success: CampaignConversions,
      error: errors
    })
      .annotate(OpenApi.Summary, "Conversions the model credits to a campaign (by platform id), newest first, refunds excluded")
      .annotateMerge(read),
    // Literal paths before the `:id` one.
    HttpApiEndpoint.get("adsTrend", "/ads/trend", { query: AnalyticsQuery, success: AdsTrend, error: errors })
      .annotate(OpenApi.Summary, "Daily credit and spend of the ads under the filters; messaging_conversations_started_7d null until synced")
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("fatigueRisk", "/ads/fatigue-risk", { query: AnalyticsQuery, success: FatigueRisk, error: errors })
      .annotate(OpenApi.Summary, "Ads at risk of fatigue; no model serves today: model.status withheld and an empty list")
      .annotateMerge(read),
    HttpApiEndpoint.get("ad", "/ads/:id", { params: AdDetailParams, query: AdDetailQuery, success: AdDetail, error: errors })
      .annotate(
        OpenApi.Summary,
        "One ad (or ad set / campaign with `level`) by platform id: the campaign-row metrics and learned values ({value, status, reason})"
      )
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Campaign, ad set and ad reads")
