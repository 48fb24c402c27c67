/**
 * Campaign, ad set and ad reads (decision 0042): rows per entity of the synced ad structure (and
 * per credited id the sync has not shown yet), the unattributed remainder, and the conversions
 * one campaign is credited with. Counts are integers; money and shares exact decimal strings, in
 * the profile's currency and again in the workspace's reporting currency.
 */
import { Schema } from "effect"
import { Pagination } from "./common.ts"
import { AnalyticsFilters, AnalyticsQuery, AnalyticsRange, AsOf, CalibrationFactor, UnavailableReason } from "./analytics.ts"
import { CreditModels } from "./events.ts"
import { CursorParam, LimitParam, LiteralParam } from "./query.ts"

export const CAMPAIGN_LEVELS = ["campaign", "ad_set", "ad"] as const
export type CampaignLevel = typeof CAMPAIGN_LEVELS[number]

export const CampaignsQuery = {
  ...AnalyticsQuery,
  level: Schema.optionalKey(LiteralParam(CAMPAIGN_LEVELS, "campaign (default), ad_set or ad", "campaign"))
}
export type CampaignsQuery = Schema.Struct.Type<typeof CampaignsQuery>

/** `GET /api/v1/campaigns`: the rows, and with `calibrated=true` each campaign's measured incrementality. */
export const CampaignsListQuery = {
  ...CampaignsQuery,
  calibrated: Schema.optionalKey(
    LiteralParam(["true", "false"], "true: each campaign row adds `calibration` (null without a completed experiment; decision 0124)", "false")
  )
}
export type CampaignsListQuery = Schema.Struct.Type<typeof CampaignsListQuery>

/** `GET /api/v1/ads/{id}`: the id is an ad's unless `level` says otherwise. */
export const AdDetailQuery = {
  ...AnalyticsQuery,
  level: Schema.optionalKey(LiteralParam(CAMPAIGN_LEVELS, "ad (default), ad_set or campaign: which kind of entity the id names", "ad")),
  calibrated: Schema.optionalKey(
    LiteralParam(["true", "false"], "true with level=campaign: add `calibration` (null without a completed experiment; decision 0124)", "false")
  )
}

/** `limit` of a campaign's conversions (the spec: 1 to 200, default 50, other values 400). */
export const MAX_CONVERSIONS_LIMIT = 200
export const DEFAULT_CONVERSIONS_LIMIT = 50

export const CampaignConversionsQuery = {
  ...AnalyticsQuery,
  limit: Schema.optionalKey(
    LimitParam(MAX_CONVERSIONS_LIMIT, DEFAULT_CONVERSIONS_LIMIT, "Rows per page, 1 to 200 (default 50); a page may hold fewer")
  ),
  cursor: Schema.optionalKey(CursorParam("Opaque cursor of the previous page's `pagination.cursor`"))
}
export type CampaignConversionsQuery = Schema.Struct.Type<typeof CampaignConversionsQuery>

export const CampaignParams = {
  id: Schema.String.annotate({ description: "The campaign's platform id (the ad platform's own id, `platform_id` of the rows)" })
}

const Decimal = Schema.String.annotate({ description: "Exact decimal string" })
const NullableDecimal = Schema.NullOr(Decimal)

const CountsByType = Schema.Record(Schema.String, Schema.Int).annotate({
  description: "Conversion key → conversions credited (refunds excluded)"
})

/** What the credit of a level adds up to, per entity or for the remainder. */
const CreditFields = {
  /** Credited cash payments (refunds excluded): the CAC denominator. */
  outcome_count: Schema.Int,
  /** Credited first payments (refunds excluded): the `cac_first_payment` denominator. */
  outcome_count_first_payment: Schema.Int,
  /** Conversions of every kind credited (refunds excluded); never a ROAS or CAC denominator. */
  attributed_outcome_count: Schema.Int,
  attributed_outcomes_by_type: CountsByType,
  /** Sum of the credit shares (refunds excluded): additive across rows under every model. */
  credited_conversions: Decimal,
  /** Cash value (net of refunds) of the conversions in `outcome_count`, each counted whole. */
  outcome_value: NullableDecimal,
  /** Cash only, net of refunds, weighted by credit share. */
  credited_revenue: NullableDecimal
}

export const CampaignReporting = Schema.Struct({
  currency: Schema.NullOr(Schema.String),
  outcome_value: NullableDecimal,
  credited_revenue: NullableDecimal,
  spend: NullableDecimal,
  roas: NullableDecimal,
  cac: NullableDecimal,
  cac_first_payment: NullableDecimal
})

export const CampaignRow = Schema.Struct({
  level: Schema.Literals(CAMPAIGN_LEVELS),
  /** The ad platform's own id. */
  platform_id: Schema.String,
  /** Our id of the synced entity; null for an id credited before the sync has shown it. */
  id: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.String),
  in_synced_structure: Schema.Boolean,
  ...CreditFields,
  /** Null when spend is unmeasurable for this entity and the filters; "0" for a measured zero. */
  spend: NullableDecimal,
  /** credited_revenue / spend, 4 decimals. */
  roas: NullableDecimal,
  /** spend / outcome_count, 6 decimals; null without spend or outcomes. */
  cac: NullableDecimal,
  cac_first_payment: NullableDecimal,
  /**
   * The ad platform's own counts over the range, from the synced daily insights; null where no
   * synced insights cover the entity in the range (`meta.adplatform_reported_status`).
   */
  adplatform_reported_conversions: Schema.NullOr(Schema.Int),
  adplatform_reported_chats: Schema.NullOr(Schema.Int),
  /** `level=ad_set` only, from the synced copy; null at other levels. */
  learning_stage_status: Schema.NullOr(Schema.Literals(["LEARNING", "SUCCESS", "FAIL"])),
  campaign_objective: Schema.NullOr(Schema.String),
  reporting: CampaignReporting,
  /** `calibrated=true`, `level=campaign` only: measured incrementality beside the modelled credit; null without a factor. */
  calibration: Schema.optionalKey(Schema.NullOr(CalibrationFactor))
}).annotate({ identifier: "CampaignRow" })

const MetaFields = {
  model: Schema.Literals(CreditModels),
  time_zone: Schema.String,
  currency: Schema.NullOr(Schema.String),
  reporting_currency: Schema.NullOr(Schema.String),
  filters: AnalyticsFilters,
  level: Schema.Literals(CAMPAIGN_LEVELS),
  range: AnalyticsRange,
  as_of: AsOf
}

export const Campaigns = Schema.Struct({
  data: Schema.Array(CampaignRow),
  meta: Schema.Struct({
    ...MetaFields,
    /**
     * `synced`: some row carries the platform's reported conversions and chats from the synced
     * insights; `not_synced`: no synced insights cover the range (the add-on is off, or nothing synced yet).
     */
    adplatform_reported_status: Schema.Literals(["synced", "not_synced"]),
    unavailable_reason: UnavailableReason,
    reporting_unavailable_reason: UnavailableReason
  })
})

export const Unattributed = Schema.Struct({
  data: Schema.Struct({
    ...CreditFields,
    reporting: Schema.Struct({ currency: Schema.NullOr(Schema.String), outcome_value: NullableDecimal, credited_revenue: NullableDecimal })
  }).annotate({ identifier: "CampaignsUnattributed" }),
  meta: Schema.Struct({ ...MetaFields, unavailable_reason: UnavailableReason, reporting_unavailable_reason: UnavailableReason })
})

export const CampaignConversion = Schema.Struct({
  id: Schema.String,
  outcome_event_id: Schema.String,
  conversion_key: Schema.String,
  occurred_at: Schema.String,
  value: NullableDecimal,
  currency: Schema.NullOr(Schema.String),
  counts_as_cash: Schema.Boolean,
  is_first_payment: Schema.NullOr(Schema.Boolean),
  /** The model's credit share on this campaign's touches. */
  credit_share: Decimal
}).annotate({ identifier: "CampaignConversion" })

export const CampaignConversions = Schema.Struct({
  data: Schema.Array(CampaignConversion),
  pagination: Pagination,
  meta: Schema.Struct({ model: Schema.Literals(CreditModels), time_zone: Schema.String, platform_id: Schema.String, range: AnalyticsRange })
})

export type CampaignRow = typeof CampaignRow.Type
export type Campaigns = typeof Campaigns.Type
export type Unattributed = typeof Unattributed.Type
export type CampaignConversions = typeof CampaignConversions.Type

/** A learned value (dated change 2026-10-09): `value` is read only when `status` is `served`. */
export const LearnedValue = Schema.Struct({
  value: Schema.NullOr(Schema.Union([Schema.Number, Schema.String])),
  status: Schema.Literals(["served", "withheld", "not_applicable"]),
  reason: Schema.NullOr(Schema.String)
}).annotate({ identifier: "LearnedValue" })

export const LEARNED_VALUE_NAMES = [
  "top_performer_likelihood",
  "hazard_30d_pause",
  "hazard_30d_degradation",
  "fatigue_risk_tier",
  "expected_lifespan_days"
] as const

export const AdDetail = Schema.Struct({
  data: Schema.Struct({
    ...CampaignRow.fields,
    learned: Schema.Struct({
      top_performer_likelihood: LearnedValue,
      hazard_30d_pause: LearnedValue,
      hazard_30d_degradation: LearnedValue,
      fatigue_risk_tier: LearnedValue,
      expected_lifespan_days: LearnedValue
    })
  }).annotate({ identifier: "AdDetail" }),
  meta: Campaigns.fields.meta
})

export const AdDetailParams = {
  id: Schema.String.annotate({ description: "The platform id of the ad (or of the ad set / campaign with `level`)" })
}

export const AdsTrendPoint = Schema.Struct({
  date: Schema.String,
  attributed_outcome_count: Schema.Int,
  outcome_count: Schema.Int,
  outcome_count_first_payment: Schema.Int,
  credited_conversions: Decimal,
  credited_revenue: NullableDecimal,
  /** Null when spend is unmeasurable for the filters; "0" for a measured zero. */
  spend: NullableDecimal,
  /** Null until the ad-platform sync supplies messaging metrics. */
  messaging_conversations_started_7d: Schema.NullOr(Schema.Int),
  reporting: Schema.Struct({ credited_revenue: NullableDecimal, spend: NullableDecimal })
}).annotate({ identifier: "AdsTrendPoint" })

export const AdsTrend = Schema.Struct({
  data: Schema.Array(AdsTrendPoint),
  meta: Schema.Struct({
    model: Schema.Literals(CreditModels),
    time_zone: Schema.String,
    currency: Schema.NullOr(Schema.String),
    reporting_currency: Schema.NullOr(Schema.String),
    filters: AnalyticsFilters,
    range: AnalyticsRange,
    as_of: AsOf,
    spend_measured: Schema.Boolean,
    /** `not_synced`: messaging metrics are not supplied by the ad-platform sync yet. */
    messaging_status: Schema.Literal("not_synced"),
    unavailable_reason: UnavailableReason,
    reporting_unavailable_reason: UnavailableReason
  })
})

export const FatigueRisk = Schema.Struct({
  data: Schema.Struct({
    model: Schema.Struct({ status: Schema.Literals(["served", "withheld"]), reason: Schema.NullOr(Schema.String) }),
    ads: Schema.Array(Schema.Struct({ platform_id: Schema.String, fatigue_risk_tier: LearnedValue, risk_rank_score: LearnedValue }))
  }).annotate({ identifier: "FatigueRisk" }),
  meta: Schema.Struct({
    model: Schema.Literals(CreditModels),
    time_zone: Schema.String,
    filters: AnalyticsFilters,
    range: AnalyticsRange
  })
})

export type AdDetail = typeof AdDetail.Type
export type AdsTrend = typeof AdsTrend.Type
export type FatigueRisk = typeof FatigueRisk.Type
