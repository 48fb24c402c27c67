/**
 * The SQL fragments the analytics repositories share (decisions 0041, 0045), built by one
 * service whose layer holds the `SqlClient`: what reads and the rollup job count a touch under,
 * the per-value sources of breakdowns, and money conversion with the stored FX table.
 *
 * Rollups hold one slice per (dimension, value); a breakdown within a touch filter on another
 * dimension needs the pair of values on one touch, which only the raw facts of the range have, so
 * it reads them (bounded by the 366-day range and the filter). The money fragments read the row
 * alias `x` with its `currency` ('' = the profile's) and `day` columns.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import type { TouchFilter } from "../../../schema/analytics.ts"
import type { CreditModel } from "../../../schema/events.ts"
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

/** What an analytics read covers: a credit slice of one model, and the currencies it converts to. */
export interface ReadScope extends CreditSliceScope {
  readonly model: CreditModel
  /** Target currencies: the profile's and the workspace's reporting currency. */
  readonly currency: string | null
  readonly reportingCurrency: string | null
}

/** Whole calendar days of a profile: what `inRange` reads of a scope. */
type DayRange = Pick<SliceScope, "start" | "end" | "timeZone">

export class AnalyticsFragments extends Context.Service<AnalyticsFragments, {
  /** `column` (a timestamp) within [start, end] as the profile's calendar days. */
  readonly inRange: (scope: DayRange, column: string) => Fragment
  /** Rows (value, touches): non-outcome touches of the range per value of `dimension`, within the filter. */
  readonly touchesByValue: (scope: SliceScope, dimension: string) => Fragment
  /**
   * Rows (value, day, currency, conversions, cash_payments, first_payments, credited, money): the
   * conversions of the range the model credits to touches with each value of `dimension` (once per
   * conversion), their credit shares and share-weighted net cash, within the filter.
   */
  readonly creditedByValue: (scope: CreditSliceScope, dimension: string) => Fragment
  /** Rows shaped like `analytics_campaign_days` for one level (see `campaignRowsOf` below). */
  readonly campaignRowsOf: (scope: CreditSliceScope, level: "campaign" | "ad_set" | "ad") => Fragment
  /** `money` (default `x.money`) of `x.currency` on `x.day` in `target` (see `convertedMoney` below). */
  readonly convertedMoney: (profileCurrency: string | null, target: string | null, profileBlock: boolean, money?: string) => Fragment
  /** The sum of a converted column as exact text: null as soon as one amount could not be converted. */
  readonly convertedTotal: (column: string) => Fragment
}>()("svc/AnalyticsFragments") {
  static readonly layer = Layer.effect(AnalyticsFragments)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      /** The range's conversions (of the key, if any), by one index range scan (the fence keeps it one). */
      const rangeConversions = (scope: CreditSliceScope) =>
        sql`SELECT * FROM conversions c WHERE c.profile_id = ${scope.profileId} AND ${inRange(scope, "c.occurred_at")}
            ${scope.conversionKey === null ? sql`` : sql`AND c.conversion_key = ${scope.conversionKey}`} OFFSET 0`

      /**
       * A conversion's credited rows under one model, probed on the primary key per conversion: the
       * `OFFSET 0` fence keeps the planner from a scan of every credit row, which stale statistics on a
       * table that just grew by a replay would otherwise pick. `conversion` is the alias of a row of
       * `conversions`: the whole key, its month included, so each probe reads that month only.
       */
      const creditedOf = (model: string, conversion: string) =>
        sql`SELECT a.touch_id, a.touch_at, a.credit_share FROM attribution_credits a
            WHERE a.conversion_id = ${sql.literal(`${conversion}.id`)} AND a.profile_id = ${sql.literal(`${conversion}.profile_id`)}
              AND a.converted_at = ${sql.literal(`${conversion}.occurred_at`)} AND a.model = ${model} AND a.is_credited OFFSET 0`

      /**
       * The touch `tch` of the credit row `a` of the conversion `conversion`, by its whole key: the
       * row's `touch_at` names its month, so the probe reads that month only, not every month's
       * index (migration 0075).
       */
      const touchOf = (conversion: string) =>
        sql.literal(`tch.id = a.touch_id AND tch.profile_id = ${conversion}.profile_id AND tch.occurred_at = a.touch_at`)

      /** True when the breakdown needs the raw facts: a filter on a dimension other than the broken-down one. */
      const crossFiltered = (scope: SliceScope, dimension: string) =>
        scope.touchFilter !== null && scope.touchFilter.dimension !== dimension

      const valueOf = (dimension: string) => {
        if (!isRollupDimension(dimension)) throw new RangeError(`not a rollup dimension: ${dimension}`)
        return sql.literal(DIMENSION_SQL[dimension])
      }

      /** `column` (a timestamp) within [start, end] as the profile's calendar days. */
      const inRange = (scope: DayRange, column: string) =>
        sql`${sql.literal(column)} >= (${scope.start}::date::timestamp AT TIME ZONE ${scope.timeZone})
          AND ${sql.literal(column)} < ((${scope.end}::date + 1)::timestamp AT TIME ZONE ${scope.timeZone})`

      const rawFilter = (scope: SliceScope) =>
        scope.touchFilter === null ? sql`` : sql`AND ${valueOf(scope.touchFilter.dimension)} = ${scope.touchFilter.value}`

      /** A filter on the broken-down dimension itself is one of its values. */
      const sameValue = (scope: SliceScope, dimension: string) =>
        scope.touchFilter !== null && scope.touchFilter.dimension === dimension ? sql`AND x.value = ${scope.touchFilter.value}` : sql``

      /** Rows (value, touches): non-outcome touches of the range per value of `dimension`, within the filter. */
      const touchesByValue = (scope: SliceScope, dimension: string): Fragment =>
        crossFiltered(scope, dimension)
          ? sql`
              SELECT ${valueOf(dimension)} AS value, count(*) AS touches FROM touches tch
              WHERE tch.profile_id = ${scope.profileId} AND ${inRange(scope, "tch.occurred_at")} AND tch.kind <> 'outcome'
                ${rawFilter(scope)}
              GROUP BY 1`
          : sql`
              SELECT x.value, sum(x.touches) AS touches FROM analytics_touch_days x
              WHERE x.profile_id = ${scope.profileId} AND x.dimension = ${dimension} ${sameValue(scope, dimension)}
                AND x.day BETWEEN ${scope.start}::date AND ${scope.end}::date
              GROUP BY x.value`

      /**
       * Rows (value, day, currency, conversions, cash_payments, first_payments, credited, money): the
       * conversions of the range the model credits to touches with each value of `dimension` (once per
       * conversion), their credit shares and share-weighted net cash, within the filter.
       */
      const creditedByValue = (scope: CreditSliceScope, dimension: string): Fragment => {
        if (!crossFiltered(scope, dimension)) {
          return sql`
            SELECT x.value, x.day, x.currency, sum(x.conversions) AS conversions, sum(x.cash_payments) AS cash_payments,
                   sum(x.first_payments) AS first_payments, sum(x.credited_conversions) AS credited, sum(x.credited_revenue) AS money
            FROM analytics_credit_days x
            WHERE x.profile_id = ${scope.profileId} AND x.model = ${scope.model} AND x.dimension = ${dimension}
              ${sameValue(scope, dimension)} AND x.day BETWEEN ${scope.start}::date AND ${scope.end}::date
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
                   ${sql.literal(CONVERSION_MEASURES_SQL)}, ${valueOf(dimension)} AS value, sum(a.credit_share) AS share
            FROM (${rangeConversions(scope)}) c
            CROSS JOIN LATERAL (${creditedOf(scope.model, "c")}) a
            JOIN touches tch ON ${touchOf("c")}
            WHERE true ${rawFilter(scope)}
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
      const campaignRowsOf = (scope: CreditSliceScope, level: "campaign" | "ad_set" | "ad"): Fragment => {
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
            SELECT c.id, c.profile_id, c.occurred_at, (c.occurred_at AT TIME ZONE ${scope.timeZone})::date AS day, c.conversion_key,
                   COALESCE(c.currency, '') AS currency, ${sql.literal(CONVERSION_MEASURES_SQL)}
            FROM (${rangeConversions(scope)}) c),
          per_conv AS (
            SELECT conv.id, ${valueOf(level)} AS platform_id, sum(a.credit_share) AS share
            FROM conv
            CROSS JOIN LATERAL (${creditedOf(scope.model, "conv")}) a
            JOIN touches tch ON ${touchOf("conv")}
            WHERE true ${rawFilter(scope)}
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

      /**
       * `money` (an SQL expression, default `x.money`) of `x.currency` on `x.day` in `target`, rounded
       * to 6 decimals; null when it cannot be converted. The rate lookup runs only for a real conversion:
       * reads convert one amount per (entity, day, currency). In the profile's own block (`profileBlock`) an
       * amount of no known currency is taken as is: it is "in the profile's currency", which is unset.
       */
      const convertedMoney = (
        profileCurrency: string | null,
        target: string | null,
        profileBlock: boolean,
        money = "x.money"
      ) => {
        const amount = sql.literal(money)
        const currency = sql`COALESCE(NULLIF(x.currency, ''), ${profileCurrency}::text)`
        return sql`CASE WHEN ${amount} = 0 THEN 0
                        WHEN ${currency} IS NULL THEN ${profileBlock ? sql`round(${amount}, 6)` : sql`NULL::numeric`}
                        WHEN ${target}::text IS NULL THEN NULL::numeric
                        WHEN ${currency} = ${target}::text THEN round(${amount}, 6)
                        ELSE round(${amount} * analytics_fx_rate(${currency}, ${target}::text, x.day), 6) END`
      }

      /** The sum of a converted column as exact text: null as soon as one amount could not be converted. */
      const convertedTotal = (column: string) =>
        sql.literal(`CASE WHEN bool_or(${column} IS NULL) THEN NULL ELSE trim_scale(COALESCE(sum(${column}), 0))::text END`)

      return { inRange, touchesByValue, creditedByValue, campaignRowsOf, convertedMoney, convertedTotal }
    })
  )
}
