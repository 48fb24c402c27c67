/**
 * Analytics reads over HTTP (decision 0041): overview, daily timeseries and breakdowns, served
 * from the rollups. `analytics:read`; a connect-broker profile is answered empty, never a 403.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Breakdown, BreakdownParams, BreakdownQuery, AnalyticsQuery, Overview, OverviewQuery, Timeseries } from "../../../schema/analytics.ts"
import { analyticsErrors, profileRead, ROLLUP_FRESHNESS } from "../policies.ts"

const errors = analyticsErrors
const read = profileRead("analytics:read")

export const AnalyticsApi = HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("overview", "/overview", { query: OverviewQuery, success: Overview, error: errors })
      .annotate(
        OpenApi.Summary,
        "Outcomes (business_conversions), cash payments, revenue, spend and ROAS of a period and the one before it; spend and roas are null when spend is unmeasurable for the filters"
      )
      .annotate(
        OpenApi.Description,
        "`campaign` (like `ad_set` and `ad`) is the ad platform's id, not a UTM campaign name: a campaign known only by its " +
          "`utm_campaign` tag is a row of GET /api/v1/breakdowns/utm_campaign (decision 0051).\n\n" + ROLLUP_FRESHNESS
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("timeseries", "/timeseries", { query: AnalyticsQuery, success: Timeseries, error: errors })
      .annotate(OpenApi.Summary, "The overview's measures per calendar day of the profile's time zone")
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("breakdown", "/breakdowns/:dimension", {
      params: BreakdownParams,
      query: BreakdownQuery,
      success: Breakdown,
      error: errors
    })
      .annotate(
        OpenApi.Summary,
        "Touches and the model's credit per value of a dimension (channel, referrer, page, keyword, country, device, browser, os, utm_campaign, utm_source, utm_medium)"
      )
      .annotate(
        OpenApi.Description,
        "`utm_campaign`, `utm_source` and `utm_medium` are the tags as the touch's link carried them (beyond the specification's " +
          "dimensions, decision 0051): a newsletter or partner link with no ad-platform id shows here. A null value is touches " +
          "without the tag.\n\n" + ROLLUP_FRESHNESS
      )
      .annotateMerge(read)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Analytics reads")
