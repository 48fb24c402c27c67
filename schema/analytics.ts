/**
 * Analytics reads (decision 0041): overview, timeseries and breakdowns. Counts are integers;
 * money and credited conversions are exact decimal strings. Amounts are in the profile's
 * currency, and again in the workspace's reporting currency converted with the stored daily FX
 * table; an amount that cannot be converted is null with the block's `unavailable_reason`.
 */
import { Schema } from "effect"
import { CreditModels } from "./events.ts"
import { CalendarDateParam, DaysParam, LimitParam, LiteralParam, NonBlankParam } from "./query.ts"

/** The spec's dimensions, then the UTM tags as sent (decision 0051). */
export const BREAKDOWN_DIMENSIONS = [
  "channel", "referrer", "page", "keyword", "country", "device", "browser", "os", "utm_campaign", "utm_source", "utm_medium"
] as const
export type BreakdownDimension = typeof BREAKDOWN_DIMENSIONS[number]

/** The touch filters (one at a time) and what they match on a touch. */
export const TOUCH_FILTERS = ["channel", "campaign", "ad_set", "ad"] as const
export type TouchFilter = typeof TOUCH_FILTERS[number]

/** The range of a read: at most 366 days (the spec's limit), 30 by default. */
export const MAX_RANGE_DAYS = 366
export const DEFAULT_RANGE_DAYS = 30

/**
 * A touch filter's value: any text. `''` selects the touches with no value for that dimension,
 * the row a breakdown shows as null (decision 0041: `''` stands for "none").
 */
const touchFilter = (description: string) => Schema.optionalKey(Schema.String.annotate({ description }))

/** The parameters every analytics read takes. */
export const AnalyticsQuery = {
  start: Schema.optionalKey(CalendarDateParam("ISO date (YYYY-MM-DD), first day in the profile's time zone; with `end` (default today)")),
  end: Schema.optionalKey(CalendarDateParam("ISO date (YYYY-MM-DD), last day in the profile's time zone, inclusive; needs `start`")),
  days: Schema.optionalKey(
    DaysParam(MAX_RANGE_DAYS, DEFAULT_RANGE_DAYS, "Calendar days ending today in the profile's time zone (1 to 366, default 30); not with start/end")
  ),
  model: Schema.optionalKey(LiteralParam(CreditModels, `Credit model: ${CreditModels.join(", ")} (default last_touch)`, "last_touch")),
  channel: touchFilter("Only credit (and touches) of touches of this channel"),
  campaign: touchFilter("Only credit (and touches) of touches of this campaign (the ad platform's id); spend of this campaign"),
  ad_set: touchFilter("Only credit (and touches) of touches of this ad set (the ad platform's id); spend of this ad set"),
  ad: touchFilter("Only credit (and touches) of touches of this ad (the ad platform's id); spend of this ad"),
  // Every conversion has a key, so a blank one could only ever match nothing.
  conversion_key: Schema.optionalKey(NonBlankParam("Only conversions of this definition"))
}
export type AnalyticsQuery = Schema.Struct.Type<typeof AnalyticsQuery>

export const BreakdownQuery = {
  ...AnalyticsQuery,
  limit: Schema.optionalKey(LimitParam(200, 50, "Rows, 1 to 200 (default 50), by conversions then touches, descending"))
}
export type BreakdownQuery = Schema.Struct.Type<typeof BreakdownQuery>

export const BreakdownParams = {
  dimension: LiteralParam(BREAKDOWN_DIMENSIONS, `One of ${BREAKDOWN_DIMENSIONS.join(", ")}`)
}

const Decimal = Schema.String.annotate({ description: "Exact decimal string" })
const NullableDecimal = Schema.NullOr(Decimal)

export const UnavailableReason = Schema.NullOr(Schema.Literals(["fx_rate_missing", "currency_unset"]))

export const AnalyticsRange = Schema.Struct({
  start: Schema.String,
  end: Schema.String,
  days: Schema.Int
})

export const AnalyticsFilters = Schema.Struct({
  channel: Schema.NullOr(Schema.String),
  campaign: Schema.NullOr(Schema.String),
  ad_set: Schema.NullOr(Schema.String),
  ad: Schema.NullOr(Schema.String),
  conversion_key: Schema.NullOr(Schema.String)
})

/** Money of a period in the workspace's reporting currency. */
export const ReportingAmounts = Schema.Struct({
  currency: Schema.NullOr(Schema.String),
  revenue: NullableDecimal,
  spend: NullableDecimal,
  roas: NullableDecimal,
  unavailable_reason: UnavailableReason
})

export const OverviewPeriod = Schema.Struct({
  start: Schema.String,
  end: Schema.String,
  /** `business_conversions`: the canonical count. */
  outcomes: Schema.Int,
  business_conversions: Schema.Int,
  cash_payments: Schema.Int,
  first_payments: Schema.Int,
  credited_conversions: Decimal,
  revenue: NullableDecimal,
  /** Null when spend is unmeasurable for the filters; "0" for a measured zero. */
  spend: NullableDecimal,
  roas: NullableDecimal,
  unavailable_reason: UnavailableReason,
  reporting: ReportingAmounts
}).annotate({ identifier: "OverviewPeriod" })

/**
 * `meta.as_of` of every read served from the rollups: every fact recorded (committed) before
 * this instant is counted; later ones may not be yet. It is the oldest change to the profile's
 * facts the rollup job has not applied, or the time of the read when none waits (decision 0051).
 */
export const AsOf = Schema.String.annotate({
  description: "ISO 8601 UTC instant up to which the rollups behind this read are complete: facts recorded before it are " +
    "counted, later ones may not be yet (the rollups trail writes by a few seconds). The read's own time when nothing is pending."
})

const AnalyticsMetaFields = {
  model: Schema.Literals(CreditModels),
  time_zone: Schema.String,
  currency: Schema.NullOr(Schema.String),
  reporting_currency: Schema.NullOr(Schema.String),
  filters: AnalyticsFilters
}

const CalibrationInterval = Schema.Struct({ estimate: Schema.Finite, lower: Schema.Finite, upper: Schema.Finite, level: Schema.Finite })

/**
 * A campaign's measured incrementality beside its modelled credit (`?calibrated=true`, decision
 * 0124): the latest completed switchback or pre/post on it (metric a count) within 365 days.
 */
export const CalibrationFactor = Schema.Struct({
  /** The campaign's platform id. */
  campaign: Schema.String,
  experiment_id: Schema.String,
  kind: Schema.Literals(["switchback", "pre_post"]),
  conversion_key: Schema.String,
  /** The days the experiment's results read. */
  analysed: Schema.Struct({ start: Schema.String, end: Schema.String }),
  completed_at: Schema.String,
  age_days: Schema.Int,
  /** More than 90 days since completion: shown, but measured under conditions that may have changed. */
  stale: Schema.Boolean,
  /** Conversions of the key the requested model credited to the campaign over the analysed days. */
  credited_conversions: Schema.Finite,
  /** Measured: conversions the campaign added over the analysed days (95 % interval). */
  incremental_conversions: CalibrationInterval,
  /** incremental_conversions / credited_conversions (the interval's bounds over the same credit); null without credit. */
  incrementality_factor: Schema.NullOr(CalibrationInterval)
}).annotate({ identifier: "CalibrationFactor" })
export type CalibrationFactor = typeof CalibrationFactor.Type

export const OverviewQuery = {
  ...AnalyticsQuery,
  calibrated: Schema.optionalKey(
    LiteralParam(["true", "false"], "true: add `calibration`, the measured incrementality of campaigns with a completed experiment (decision 0124)", "false")
  )
}
export type OverviewQuery = Schema.Struct.Type<typeof OverviewQuery>

export const Overview = Schema.Struct({
  data: Schema.Struct({
    ...AnalyticsMetaFields,
    spend_measured: Schema.Boolean,
    current: OverviewPeriod,
    previous: OverviewPeriod,
    /** `calibrated=true` only: the campaigns' factors under `model`, beside (never in) the modelled figures. */
    calibration: Schema.optionalKey(Schema.Array(CalibrationFactor))
  }).annotate({ identifier: "Overview" }),
  meta: Schema.Struct({ as_of: AsOf })
})

export const TimeseriesPoint = Schema.Struct({
  date: Schema.String,
  outcomes: Schema.Int,
  cash_payments: Schema.Int,
  first_payments: Schema.Int,
  credited_conversions: Decimal,
  revenue: NullableDecimal,
  spend: NullableDecimal,
  reporting: Schema.Struct({ revenue: NullableDecimal, spend: NullableDecimal })
}).annotate({ identifier: "TimeseriesPoint" })

export const Timeseries = Schema.Struct({
  data: Schema.Array(TimeseriesPoint),
  meta: Schema.Struct({
    ...AnalyticsMetaFields,
    granularity: Schema.Literal("day"),
    range: AnalyticsRange,
    as_of: AsOf,
    spend_measured: Schema.Boolean,
    unavailable_reason: UnavailableReason,
    reporting_unavailable_reason: UnavailableReason
  })
})

export const BreakdownRow = Schema.Struct({
  /** The dimension's value; null for touches without one (no referrer, unknown country, ...). */
  value: Schema.NullOr(Schema.String),
  touches: Schema.Int,
  /** Conversions the model credits to a touch with this value (refunds excluded). */
  conversions: Schema.Int,
  cash_payments: Schema.Int,
  first_payments: Schema.Int,
  credited_conversions: Decimal,
  /** Cash only, net of refunds, weighted by credit share. */
  credited_revenue: NullableDecimal,
  reporting_credited_revenue: NullableDecimal
}).annotate({ identifier: "BreakdownRow" })

export const Breakdown = Schema.Struct({
  data: Schema.Array(BreakdownRow),
  meta: Schema.Struct({
    ...AnalyticsMetaFields,
    dimension: Schema.Literals(BREAKDOWN_DIMENSIONS),
    range: AnalyticsRange,
    as_of: AsOf,
    rows_total: Schema.Int,
    unavailable_reason: UnavailableReason,
    reporting_unavailable_reason: UnavailableReason
  })
})

export type OverviewPeriod = typeof OverviewPeriod.Type
export type Overview = typeof Overview.Type
export type Timeseries = typeof Timeseries.Type
export type Breakdown = typeof Breakdown.Type
