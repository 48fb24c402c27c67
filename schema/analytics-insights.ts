/**
 * Analytics insights (decision 0043): the credit models side by side, dimension values, tracking
 * quality, the touch list, live visitors, people reached by ads, unknown ad ids and the UTM scan.
 * Counts are integers; money, credited conversions and shares are exact decimal strings.
 * No read answers person or browser data: no click id values, anonymous or session ids, URLs.
 */
import { Schema } from "effect"
import { AnalyticsFilters, AnalyticsQuery, AnalyticsRange, AsOf, BREAKDOWN_DIMENSIONS, UnavailableReason } from "./analytics.ts"
import { Pagination } from "./common.ts"
import { CursorParam, LimitParam, LiteralParam } from "./query.ts"
import { CreditModels } from "./events.ts"
import { JoinMethods, JourneyRowKind } from "./customers.ts"

const Decimal = Schema.String.annotate({ description: "Exact decimal string" })
const NullableDecimal = Schema.NullOr(Decimal)

/** Touch-only reads: no model, no conversion key (a touch has neither). */
const { model: _model, conversion_key: _key, ...TouchQuery } = AnalyticsQuery

/** Every model is answered: no `model`. */
const { model: _unused, ...ModelsFields } = AnalyticsQuery
export const ModelsQuery = { ...ModelsFields }
export type ModelsQuery = Schema.Struct.Type<typeof ModelsQuery>

export const DimensionValuesQuery = {
  ...TouchQuery,
  limit: Schema.optionalKey(LimitParam(200, 50, "Rows, 1 to 200 (default 50), by touches descending, then value"))
}
export type DimensionValuesQuery = Schema.Struct.Type<typeof DimensionValuesQuery>

export const DimensionValuesParams = {
  dimension: LiteralParam(BREAKDOWN_DIMENSIONS, `One of ${BREAKDOWN_DIMENSIONS.join(", ")}`)
}

export const QualityQuery = { ...TouchQuery }
export type QualityQuery = Schema.Struct.Type<typeof QualityQuery>

export const TouchListQuery = {
  ...TouchQuery,
  limit: Schema.optionalKey(LimitParam(200, 50, "Rows per page, 1 to 200 (default 50)")),
  cursor: Schema.optionalKey(CursorParam("`pagination.cursor` of the previous page"))
}
export type TouchListQuery = Schema.Struct.Type<typeof TouchListQuery>

export const AD_PEOPLE_GROUPS = ["month", "day", "ad"] as const
export const AdPeopleQuery = {
  ...TouchQuery,
  group_by: Schema.optionalKey(LiteralParam(AD_PEOPLE_GROUPS, "month (default), day or ad", "month"))
}
export type AdPeopleQuery = Schema.Struct.Type<typeof AdPeopleQuery>

export const AdIdsQuery = {
  ...TouchQuery,
  limit: Schema.optionalKey(LimitParam(200, 50, "Rows, 1 to 200 (default 50), by touches descending"))
}
export type AdIdsQuery = Schema.Struct.Type<typeof AdIdsQuery>

const InsightsMeta = {
  time_zone: Schema.String,
  range: AnalyticsRange,
  filters: AnalyticsFilters
}

export const ModelRow = Schema.Struct({
  model: Schema.Literals(CreditModels),
  /** Conversions (refunds excluded) the model credits; with a touch filter, to a matching touch. */
  conversion_count: Schema.Int,
  /** Sum of the model's credit shares over those conversions. */
  credited_conversions: Decimal,
  /** Cash only, net of refunds, weighted by credit share, in the profile's currency. */
  credited_revenue: NullableDecimal,
  reporting_credited_revenue: NullableDecimal
}).annotate({ identifier: "AttributionModelRow" })

export const AttributionModels = Schema.Struct({
  data: Schema.Array(ModelRow),
  meta: Schema.Struct({
    ...InsightsMeta,
    as_of: AsOf,
    currency: Schema.NullOr(Schema.String),
    reporting_currency: Schema.NullOr(Schema.String),
    /** Every conversion of the range (refunds excluded), credited or not: the same under every model. */
    business_conversions: Schema.Int,
    unavailable_reason: UnavailableReason,
    reporting_unavailable_reason: UnavailableReason
  })
})

export const DimensionValue = Schema.Struct({
  /** Null for touches without a value (no referrer, unknown country, ...). */
  value: Schema.NullOr(Schema.String),
  touches: Schema.Int
}).annotate({ identifier: "DimensionValue" })

export const DimensionValues = Schema.Struct({
  data: Schema.Array(DimensionValue),
  meta: Schema.Struct({ ...InsightsMeta, as_of: AsOf, dimension: Schema.Literals(BREAKDOWN_DIMENSIONS), rows_total: Schema.Int })
})

export const QualityFigure = Schema.Struct({
  count: Schema.Int,
  /** count / touches, 4 decimals half-up; null without touches. */
  share: NullableDecimal
}).annotate({ identifier: "QualityFigure" })

export const Quality = Schema.Struct({
  data: Schema.Struct({
    touches: Schema.Int,
    with_utm: QualityFigure,
    with_click_id: QualityFigure,
    direct: QualityFigure,
    classified: QualityFigure,
    with_campaign_id: QualityFigure,
    with_ad_id: QualityFigure,
    unknown_country: QualityFigure,
    unknown_device: QualityFigure
  }).annotate({ identifier: "Quality" }),
  meta: Schema.Struct({ ...InsightsMeta, as_of: AsOf })
})

const AdRef = Schema.Struct({ external_id: Schema.NullOr(Schema.String), name: Schema.NullOr(Schema.String) })

/** The journey's projected row, without credit: no page, device, geo or browser identity. */
export const TouchListRow = Schema.Struct({
  touch_id: Schema.String,
  kind: JourneyRowKind,
  at: Schema.String,
  channel: Schema.String,
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  campaign: Schema.NullOr(AdRef),
  ad_set: Schema.NullOr(AdRef),
  ad: Schema.NullOr(AdRef),
  /** The kind of click id the touch carried; the value itself is never answered. */
  click_id_kind: Schema.NullOr(Schema.String),
  join_method: Schema.NullOr(Schema.Literals(JoinMethods))
}).annotate({ identifier: "TouchListRow" })

export const TouchList = Schema.Struct({
  data: Schema.Array(TouchListRow),
  meta: Schema.Struct(InsightsMeta),
  pagination: Pagination
})

export const RealtimeVisitors = Schema.Struct({
  data: Schema.Struct({
    /** Distinct anonymous ids with a touch in the last 5 minutes. */
    visitors: Schema.Int,
    /** The last 30 minutes, oldest first, the current (partial) minute last: distinct anonymous ids per minute. */
    per_minute: Schema.Array(Schema.Struct({ minute: Schema.String, visitors: Schema.Int })),
    as_of: Schema.String
  }).annotate({ identifier: "RealtimeVisitors" })
})

export const AD_PEOPLE_ORIGINS = ["partner_import", "conversation_ad_referral", "website_visit", "other"] as const

export const AdPeopleRow = Schema.Struct({
  /** `YYYY-MM` or `YYYY-MM-DD` in the profile's time zone; null when grouped by ad. */
  period: Schema.NullOr(Schema.String),
  /** The ad platform's ad id; null unless grouped by ad. */
  ad_external_id: Schema.NullOr(Schema.String),
  /** Distinct people (customers, or anonymous visitors not bound to one) of the row. */
  people: Schema.Int,
  /** Distinct people per origin of their ad-tagged touch; a person reached two ways counts in both. */
  by_origin: Schema.Struct({
    partner_import: Schema.Int,
    conversation_ad_referral: Schema.Int,
    website_visit: Schema.Int,
    other: Schema.Int
  }),
  /** The ad platform's reported messaging conversations; null until the ad-platform sync supplies them. */
  reported_messaging_conversations: Schema.NullOr(Schema.Int)
}).annotate({ identifier: "AdPeopleRow" })

export const AdPeople = Schema.Struct({
  data: Schema.Array(AdPeopleRow),
  meta: Schema.Struct({ ...InsightsMeta, group_by: Schema.Literals(AD_PEOPLE_GROUPS) })
})

export const UnknownAdId = Schema.Struct({
  level: Schema.Literals(["campaign", "ad_set", "ad"]),
  external_id: Schema.String,
  touches: Schema.Int,
  first_seen_at: Schema.String,
  last_seen_at: Schema.String
}).annotate({ identifier: "UnknownAdId" })

export const AdIdsQuality = Schema.Struct({
  data: Schema.Array(UnknownAdId),
  meta: Schema.Struct({ ...InsightsMeta, rows_total: Schema.Int })
})

export const UtmSummary = Schema.Struct({
  /** Web tracker touches of the last 30 days. */
  window_days: Schema.Int,
  web_touches: Schema.Int,
  with_utm: Schema.Int,
  /** utm_source, utm_medium and utm_campaign all present. */
  complete: Schema.Int,
  missing_source: Schema.Int,
  missing_medium: Schema.Int,
  missing_campaign: Schema.Int,
  /** A click id but no UTM parameter: an ad whose URL carries no tags. */
  click_id_without_utm: Schema.Int
}).annotate({ identifier: "UtmSummary" })

export const UtmRefresh = Schema.Struct({
  data: Schema.Struct({
    refreshed: Schema.Boolean,
    /** When the summary was computed; null when none was (connect-broker tier). */
    scanned_at: Schema.NullOr(Schema.String),
    summary: UtmSummary
  })
})

export type AttributionModels = typeof AttributionModels.Type
export type DimensionValues = typeof DimensionValues.Type
export type Quality = typeof Quality.Type
export type QualityFigure = typeof QualityFigure.Type
export type TouchList = typeof TouchList.Type
export type TouchListRow = typeof TouchListRow.Type
export type RealtimeVisitors = typeof RealtimeVisitors.Type
export type AdPeople = typeof AdPeople.Type
export type AdIdsQuality = typeof AdIdsQuality.Type
export type UtmSummary = typeof UtmSummary.Type
export type UtmRefresh = typeof UtmRefresh.Type
