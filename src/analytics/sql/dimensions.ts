/**
 * What reads and the rollup job count a touch under, and the per-value sources of breakdowns
 * (decision 0045). Rollups hold one slice per (dimension, value); a breakdown within a touch
 * filter on another dimension needs the pair of values on one touch, which only the raw facts
 * of the range have, so it reads them (bounded by the 366-day range and the filter).
 */
import type { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import type { TouchFilter } from "../../../schema/analytics.ts"
import { ROLLUP_DIMENSIONS } from "../rollups/build.ts"

export type RollupDimension = (typeof ROLLUP_DIMENSIONS)[number]

/** Per dimension, the touch's value ('' = none) over the alias `tch`. */
export const DIMENSION_SQL: Record<RollupDimension, string> = {
  channel: "tch.channel",
  campaign: "COALESCE(tch.campaign_external_id, '')",
  ad_set: "COALESCE(tch.ad_set_external_id, '')",
  ad: "COALESCE(tch.ad_external_id, '')",
  referrer: "COALESCE(tch.referrer_domain, '')",
  page: "COALESCE(tch.path, '')",
  keyword: "COALESCE(tch.payload -> 'utm' ->> 'utm_term', '')",
  country: "COALESCE(tch.country, '')",
  device: "COALESCE(tch.device, '')",
  browser: "COALESCE(tch.browser, '')",
  os: "COALESCE(tch.os, '')",
  // The tags as the link carried them (decision 0051): a newsletter or partner link has no platform id.
  utm_campaign: "COALESCE(tch.payload -> 'utm' ->> 'utm_campaign', '')",
  utm_source: "COALESCE(tch.payload -> 'utm' ->> 'utm_source', '')",
  utm_medium: "COALESCE(tch.payload -> 'utm' ->> 'utm_medium', '')"
}

/**
 * What rollups and reads count of a conversion `c`: `counted` (not refunded), `cash`,
 * `first_payment` and `net` (its cash value net of a refund; 0 when it is not cash).
 */
export const CONVERSION_MEASURES_SQL = `c.refunded_at IS NULL AS counted, c.counts_as_cash AS cash,
  c.counts_as_cash AND c.is_first_payment IS TRUE AS first_payment,
  CASE WHEN c.counts_as_cash THEN COALESCE(c.value_amount, 0) - COALESCE(c.refund_amount, 0) ELSE 0 END AS net`

/** Every dimension's value, in ROLLUP_DIMENSIONS order. */
export const dimensionColumns = ROLLUP_DIMENSIONS.map((name) => DIMENSION_SQL[name]).join(", ")

const isRollupDimension = (name: string): name is RollupDimension => name in DIMENSION_SQL

export interface SliceScope {
  readonly profileId: string
  readonly timeZone: string
  /** Inclusive ISO dates in the profile's time zone. */
  readonly start: string
  readonly end: string
  readonly touchFilter: { readonly dimension: TouchFilter; readonly value: string } | null
}

export interface CreditSliceScope extends SliceScope {
  readonly model: string
  readonly conversionKey: string | null
}

/** The range's conversions (of the key, if any), by one index range scan (the fence keeps it one). */
const rangeConversions = (sql: SqlClient, scope: CreditSliceScope) =>
  sql`SELECT * FROM conversions c WHERE c.profile_id = ${scope.profileId} AND ${inRange(sql, scope, "c.occurred_at")}
      ${scope.conversionKey === null ? sql`` : sql`AND c.conversion_key = ${scope.conversionKey}`} OFFSET 0`

/**
 * A conversion's credited rows under one model, probed on the primary key per conversion: the
 * `OFFSET 0` fence keeps the planner from a scan of every credit row, which stale statistics on a
 * table that just grew by a replay would otherwise pick.
 */
const creditedOf = (sql: SqlClient, model: string, conversionId: string) =>
  sql`SELECT a.touch_id, a.credit_share FROM attribution_credits a
      WHERE a.conversion_id = ${sql.literal(conversionId)} AND a.model = ${model} AND a.is_credited OFFSET 0`

/** True when the breakdown needs the raw facts: a filter on a dimension other than the broken-down one. */
const crossFiltered = (scope: SliceScope, dimension: string) =>
  scope.touchFilter !== null && scope.touchFilter.dimension !== dimension

const valueOf = (sql: SqlClient, dimension: string) => {
  if (!isRollupDimension(dimension)) throw new RangeError(`not a rollup dimension: ${dimension}`)
  return sql.literal(DIMENSION_SQL[dimension])
}

/** `column` (a timestamp) within [start, end] as the profile's calendar days. */
export const inRange = (sql: SqlClient, scope: Pick<SliceScope, "start" | "end" | "timeZone">, column: string) =>
  sql`${sql.literal(column)} >= (${scope.start}::date::timestamp AT TIME ZONE ${scope.timeZone})
    AND ${sql.literal(column)} < ((${scope.end}::date + 1)::timestamp AT TIME ZONE ${scope.timeZone})`

const rawFilter = (sql: SqlClient, scope: SliceScope) =>
  scope.touchFilter === null ? sql`` : sql`AND ${valueOf(sql, scope.touchFilter.dimension)} = ${scope.touchFilter.value}`

/** A filter on the broken-down dimension itself is one of its values. */
const sameValue = (sql: SqlClient, scope: SliceScope, dimension: string) =>
  scope.touchFilter !== null && scope.touchFilter.dimension === dimension ? sql`AND x.value = ${scope.touchFilter.value}` : sql``

/** Rows (value, touches): non-outcome touches of the range per value of `dimension`, within the filter. */
export const touchesByValue = (sql: SqlClient, scope: SliceScope, dimension: string): Fragment =>
  crossFiltered(scope, dimension)
    ? sql`
        SELECT ${valueOf(sql, dimension)} AS value, count(*) AS touches FROM touches tch
        WHERE tch.profile_id = ${scope.profileId} AND ${inRange(sql, scope, "tch.occurred_at")} AND tch.kind <> 'outcome'
          ${rawFilter(sql, scope)}
        GROUP BY 1`
    : sql`
        SELECT x.value, sum(x.touches) AS touches FROM analytics_touch_days x
        WHERE x.profile_id = ${scope.profileId} AND x.dimension = ${dimension} ${sameValue(sql, scope, dimension)}
          AND x.day BETWEEN ${scope.start}::date AND ${scope.end}::date
        GROUP BY x.value`

/**
 * Rows (value, day, currency, conversions, cash_payments, first_payments, credited, money): the
 * conversions of the range the model credits to touches with each value of `dimension` (once per
 * conversion), their credit shares and share-weighted net cash, within the filter.
 */
export const creditedByValue = (sql: SqlClient, scope: CreditSliceScope, dimension: string): Fragment => {
  if (!crossFiltered(scope, dimension)) {
    return sql`
      SELECT x.value, x.day, x.currency, sum(x.conversions) AS conversions, sum(x.cash_payments) AS cash_payments,
             sum(x.first_payments) AS first_payments, sum(x.credited_conversions) AS credited, sum(x.credited_revenue) AS money
      FROM analytics_credit_days x
      WHERE x.profile_id = ${scope.profileId} AND x.model = ${scope.model} AND x.dimension = ${dimension}
        ${sameValue(sql, scope, dimension)} AND x.day BETWEEN ${scope.start}::date AND ${scope.end}::date
        ${scope.conversionKey === null ? sql`` : sql`AND x.conversion_key = ${scope.conversionKey}`}
      GROUP BY x.value, x.day, x.currency`
  }
  return sql`
    SELECT per.value, per.day, per.currency, count(*) FILTER (WHERE per.counted) AS conversions,
           count(*) FILTER (WHERE per.counted AND per.cash) AS cash_payments,
           count(*) FILTER (WHERE per.counted AND per.first_payment) AS first_payments,
           COALESCE(sum(per.share) FILTER (WHERE per.counted), 0) AS credited, sum(per.share * per.net) AS money
    FROM (
      SELECT c.id, (c.occurred_at AT TIME ZONE ${scope.timeZone})::date AS day, COALESCE(c.currency, '') AS currency,
             ${sql.literal(CONVERSION_MEASURES_SQL)}, ${valueOf(sql, dimension)} AS value, sum(a.credit_share) AS share
      FROM (${rangeConversions(sql, scope)}) c
      CROSS JOIN LATERAL (${creditedOf(sql, scope.model, "c.id")}) a
      JOIN touches tch ON tch.id = a.touch_id
      WHERE true ${rawFilter(sql, scope)}
      GROUP BY 1, 2, 3, 4, 5, 6, 7, 8) per
    GROUP BY per.value, per.day, per.currency`
}

/**
 * Rows shaped like `analytics_campaign_days` (platform_id, day, conversion_key, currency,
 * conversions, cash_payments, first_payments, credited_conversions, credited_revenue,
 * outcome_value) for one level: the rollup without a touch filter, else computed from the raw
 * facts of the range with the rule of decision 0042 (an entity row counts a conversion credited to
 * a matching touch with that id once; the '' row is the filter's share no id took, counting the
 * conversions with no id at that level).
 */
export const campaignRowsOf = (sql: SqlClient, scope: CreditSliceScope, level: "campaign" | "ad_set" | "ad"): Fragment => {
  const keyFilter = scope.conversionKey === null ? sql`` : sql`AND c.conversion_key = ${scope.conversionKey}`
  if (scope.touchFilter === null) {
    return sql`
      SELECT c.platform_id, c.day, c.conversion_key, c.currency, c.conversions, c.cash_payments, c.first_payments,
             c.credited_conversions, c.credited_revenue, c.outcome_value
      FROM analytics_campaign_days c
      WHERE c.profile_id = ${scope.profileId} AND c.model = ${scope.model} AND c.level = ${level}
        AND c.day BETWEEN ${scope.start}::date AND ${scope.end}::date ${keyFilter}`
  }
  return sql`
    WITH conv AS (
      SELECT c.id, (c.occurred_at AT TIME ZONE ${scope.timeZone})::date AS day, c.conversion_key, COALESCE(c.currency, '') AS currency,
             ${sql.literal(CONVERSION_MEASURES_SQL)}
      FROM (${rangeConversions(sql, scope)}) c),
    per_conv AS (
      SELECT conv.id, ${valueOf(sql, level)} AS platform_id, sum(a.credit_share) AS share
      FROM conv
      CROSS JOIN LATERAL (${creditedOf(sql, scope.model, "conv.id")}) a
      JOIN touches tch ON tch.id = a.touch_id
      WHERE true ${rawFilter(sql, scope)}
      GROUP BY conv.id, 2),
    slices AS (
      SELECT id, sum(share) AS slice_share, sum(share) FILTER (WHERE platform_id <> '') AS entity_share FROM per_conv GROUP BY id),
    contributions AS (
      SELECT id, platform_id, share, true AS counts FROM per_conv WHERE platform_id <> ''
      UNION ALL
      SELECT id, '', slice_share - COALESCE(entity_share, 0), entity_share IS NULL FROM slices)
    SELECT x.platform_id, conv.day, conv.conversion_key, conv.currency,
           count(*) FILTER (WHERE x.counts AND conv.counted) AS conversions,
           count(*) FILTER (WHERE x.counts AND conv.counted AND conv.cash) AS cash_payments,
           count(*) FILTER (WHERE x.counts AND conv.counted AND conv.first_payment) AS first_payments,
           COALESCE(sum(x.share) FILTER (WHERE conv.counted), 0) AS credited_conversions,
           sum(x.share * conv.net) AS credited_revenue,
           COALESCE(sum(conv.net) FILTER (WHERE x.counts AND conv.counted AND conv.cash), 0) AS outcome_value
    FROM contributions x JOIN conv ON conv.id = x.id
    GROUP BY x.platform_id, conv.day, conv.conversion_key, conv.currency`
}
