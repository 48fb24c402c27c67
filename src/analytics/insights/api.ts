/**
 * Analytics insights over HTTP (decision 0043): the credit models side by side, dimension values,
 * tracking quality, the touch list, live visitors, people reached by ads, unknown ad ids and the
 * UTM scan. `analytics:read` (live visitors: `realtime:read`); a connect-broker profile is
 * answered empty, never a 403.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AdIdsQuality,
  AdIdsQuery,
  AdPeople,
  AdPeopleQuery,
  AttributionModels,
  DimensionValues,
  DimensionValuesParams,
  DimensionValuesQuery,
  ModelsQuery,
  Quality,
  QualityQuery,
  RealtimeVisitors,
  TouchList,
  TouchListQuery,
  UtmRefresh
} from "../../../schema/analytics-insights.ts"
import { RateLimitExceeded } from "../../../schema/errors.ts"
import { analyticsErrors, profileRead, ROLLUP_FRESHNESS } from "../policies.ts"

const errors = analyticsErrors
const read = profileRead("analytics:read")
const live = profileRead("realtime:read")

export const InsightsApi = HttpApiGroup.make("insights")
  .add(
    HttpApiEndpoint.get("models", "/attribution/models", { query: ModelsQuery, success: AttributionModels, error: errors })
      .annotate(
        OpenApi.Summary,
        "The six credit models side by side: conversions each credits, credited conversions (sum of shares) and credited cash revenue"
      )
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("adPeople", "/attribution/ad-people", { query: AdPeopleQuery, success: AdPeople, error: errors })
      .annotate(
        OpenApi.Summary,
        "Distinct people with an ad-tagged touch per month, day or ad, split by origin, beside the ad platform's reported messaging conversations; counts only"
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("dimensionValues", "/dimensions/:dimension", {
      params: DimensionValuesParams,
      query: DimensionValuesQuery,
      success: DimensionValues,
      error: errors
    })
      .annotate(OpenApi.Summary, "The values of a dimension seen in the range, with their touch counts")
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("quality", "/quality", { query: QualityQuery, success: Quality, error: errors })
      .annotate(OpenApi.Summary, "Tracking data quality of the range: UTM and click-id presence, direct vs classified, unknown device and country")
      .annotate(OpenApi.Description, ROLLUP_FRESHNESS)
      .annotateMerge(read),
    HttpApiEndpoint.get("adIds", "/quality/ad-ids", { query: AdIdsQuery, success: AdIdsQuality, error: errors })
      .annotate(OpenApi.Summary, "Campaign, ad set and ad ids carried by touches that the synced ad structure does not know; counts only")
      .annotateMerge(read),
    HttpApiEndpoint.post("refreshUtm", "/quality/utm/refresh", {
      success: UtmRefresh,
      error: [...errors, RateLimitExceeded.wire]
    })
      .annotate(
        OpenApi.Summary,
        "Scans the last 30 days of web touches for UTM health; within 10 minutes of the last scan the stored summary with refreshed: false; 6 scans per hour per key"
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("touches", "/touches", { query: TouchListQuery, success: TouchList, error: errors })
      .annotate(OpenApi.Summary, "The profile's touches, newest first (projected fields: no click id values, visitor ids or URLs)")
      .annotateMerge(read),
    HttpApiEndpoint.get("realtime", "/realtime/visitors", { success: RealtimeVisitors, error: errors })
      .annotate(OpenApi.Summary, "Live visitors: distinct anonymous ids with a touch in the last 5 minutes, and per minute over the last 30")
      .annotateMerge(live)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Analytics insights")
