/**
 * Analytics reads over HTTP (decision 0041): overview, daily timeseries and breakdowns, served
 * from the rollups. `analytics:read`; a connect-broker profile is answered empty, never a 403.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Breakdown, BreakdownParams, BreakdownQuery, AnalyticsQuery, Overview, Timeseries } from "../../schema/analytics.ts"
import { analyticsErrors, profileRead } from "./policies.ts"

const errors = analyticsErrors
const read = profileRead("analytics:read")

export const AnalyticsApi = HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("overview", "/overview", { query: AnalyticsQuery, success: Overview, error: errors })
      .annotate(
        OpenApi.Summary,
        "Outcomes (business_conversions), cash payments, revenue, spend and ROAS of a period and the one before it; spend and roas are null when spend is unmeasurable for the filters"
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("timeseries", "/timeseries", { query: AnalyticsQuery, success: Timeseries, error: errors })
      .annotate(OpenApi.Summary, "The overview's measures per calendar day of the profile's time zone")
      .annotateMerge(read),
    HttpApiEndpoint.get("breakdown", "/breakdowns/:dimension", {
      params: BreakdownParams,
      query: BreakdownQuery,
      success: Breakdown,
      error: errors
    })
      .annotate(
        OpenApi.Summary,
        "Touches and the model's credit per value of a dimension (channel, referrer, page, keyword, country, device, browser, os)"
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Analytics reads")
