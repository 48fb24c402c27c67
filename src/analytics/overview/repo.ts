/**
 * The analytics reads' SQL (decision 0041): everything comes from the daily rollups and the
 * daily `ad_spend` rows, never from the raw fact tables. Money is summed per (day, currency),
 * converted to the target currency with that day's stored FX rate and rounded to 6 decimals,
 * then summed: a (day, currency) amount without a rate makes the total null.
 */
import { Context, Effect, Layer, Option, Schema, Struct } from "effect"
import type { Fragment } from "effect/sql/Statement"
import { SqlClient } from "effect/sql/SqlClient"
import { BreakdownRow, TimeseriesPoint } from "../../../schema/analytics.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AnalyticsFragments, type ReadScope } from "../sql/fragments.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"

export interface ProfileFacts {
  readonly time_zone: string
  readonly currency: string | null
  readonly reporting_currency: string | null
  /** Today in the profile's time zone. */
  readonly today: string
  /** `meta.as_of`: read before the rollups, so it never claims more than the rows read show. */
  readonly as_of: string
}

const ProfileFactsRow = Schema.Struct({
  time_zone: Schema.String,
  currency: Schema.NullOr(Schema.String),
  reporting_currency: Schema.NullOr(Schema.String),
  today: Schema.String,
  as_of: Schema.String
})

/** A period's (or, by day, a day's) measures: the timeseries point's counts and money, and the reporting revenue. */
const MeasuresRow = Schema.Struct({
  day: Schema.NullOr(Schema.String),
  ...Struct.pick(TimeseriesPoint.fields, ["outcomes", "cash_payments", "first_payments", "credited_conversions", "revenue"]),
  reporting_revenue: Schema.NullOr(Schema.String)
})
export type MeasuresRow = typeof MeasuresRow.Type

const SpendRow = Schema.Struct({
  day: Schema.NullOr(Schema.String),
  spend: Schema.NullOr(Schema.String),
  reporting_spend: Schema.NullOr(Schema.String)
})
export type SpendRow = typeof SpendRow.Type

// '' is "no value" in the rollups; the service answers it as null.
const BreakdownRowSql = Schema.Struct({ ...BreakdownRow.fields, value: Schema.String })
export type BreakdownSqlRow = typeof BreakdownRowSql.Type

export class AnalyticsRepo extends Context.Service<AnalyticsRepo, {
  readonly profileFacts: (profileId: string) => Effect.Effect<Option.Option<ProfileFacts>, DatabaseUnavailable>
  /** Outcome counts and revenue, per day (`byDay`) or for the whole range (one row, `day` null). */
  readonly measures: (scope: ReadScope, byDay: boolean) => Effect.Effect<ReadonlyArray<MeasuresRow>, DatabaseUnavailable>
  /** Spend per day or for the range; `measured` is false when no spend was ever recorded for the filters. */
  readonly spend: (
    scope: ReadScope,
    byDay: boolean
  ) => Effect.Effect<{ readonly measured: boolean; readonly rows: ReadonlyArray<SpendRow> }, DatabaseUnavailable>
  /** Touches and credited values per value of `dimension`, every value (the caller sorts and cuts). */
  readonly breakdown: (scope: ReadScope, dimension: string) => Effect.Effect<ReadonlyArray<BreakdownSqlRow>, DatabaseUnavailable>
}>()("svc/AnalyticsRepo") {
  static readonly layer = Layer.effect(AnalyticsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const fragments = yield* AnalyticsFragments
      const firstFacts = decodeFirstRow(ProfileFactsRow)
      const measureRows = decodeRows(MeasuresRow)
      const spendRows = decodeRows(SpendRow)
      const breakdownRows = decodeRows(BreakdownRowSql)
      const firstMeasured = decodeFirstRow(Schema.Struct({ measured: Schema.Boolean }))

      /**
       * `x.money` of `x.currency` ('' = the profile's) on `x.day` in `target`, rounded to 6 decimals;
       * null when it cannot be converted. In the profile's own block an amount of no known currency
       * is taken as is (it is "in the profile's currency", which is unset).
       */
      const convert = (scope: ReadScope, target: string | null, profileBlock: boolean) =>
        fragments.convertedMoney(scope.currency, target, profileBlock)

      const total = fragments.convertedTotal

      const range = (scope: ReadScope) => sql`x.day BETWEEN ${scope.start}::date AND ${scope.end}::date`

      // as_of (decision 0051): a mark's marked_at is its writer's transaction start, so at or before
      // the commit of the facts it stands for; a fact committed before the oldest pending mark was
      // taken by a recompute that already committed. Truncated to milliseconds: never later.
      const profileFacts = (profileId: string) =>
        firstFacts(sql`
          SELECT p.time_zone, p.currency, w.reporting_currency, (now() AT TIME ZONE p.time_zone)::date::text AS today,
                 to_char(date_trunc('milliseconds', LEAST(now(), (SELECT min(d.marked_at) FROM analytics_dirty d WHERE d.profile_id = p.id)))
                         AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS as_of
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id WHERE p.id = ${profileId}`)

      const measures = (scope: ReadScope, byDay: boolean) => {
        const keyFilter = scope.conversionKey === null ? sql`` : sql`AND x.conversion_key = ${scope.conversionKey}`
        const source: Fragment = scope.touchFilter === null
          ? sql`
              SELECT x.day, x.currency, sum(x.conversions) AS outcomes, sum(x.cash_payments) AS cash_payments,
                     sum(x.first_payments) AS first_payments, sum(x.credited_conversions) AS credited, sum(x.revenue) AS money
              FROM analytics_conversion_days x
              WHERE x.profile_id = ${scope.profileId} AND x.model = ${scope.model} AND ${range(scope)} ${keyFilter}
              GROUP BY x.day, x.currency`
          : sql`
              SELECT x.day, x.currency, sum(x.conversions) AS outcomes, sum(x.cash_payments) AS cash_payments,
                     sum(x.first_payments) AS first_payments, sum(x.credited_conversions) AS credited,
                     sum(x.credited_revenue) AS money
              FROM analytics_credit_days x
              WHERE x.profile_id = ${scope.profileId} AND x.model = ${scope.model} AND x.dimension = ${scope.touchFilter.dimension}
                AND x.value = ${scope.touchFilter.value} AND ${range(scope)} ${keyFilter}
              GROUP BY x.day, x.currency`
        return measureRows(sql`
          WITH base AS (${source}),
          converted AS (
            SELECT x.*, ${convert(scope, scope.currency, true)} AS in_profile,
                   ${convert(scope, scope.reportingCurrency, false)} AS in_reporting
            FROM base x)
          SELECT ${byDay ? sql`day::text` : sql`NULL::text`} AS day,
                 COALESCE(sum(outcomes), 0)::int AS outcomes, COALESCE(sum(cash_payments), 0)::int AS cash_payments,
                 COALESCE(sum(first_payments), 0)::int AS first_payments,
                 trim_scale(COALESCE(sum(credited), 0))::text AS credited_conversions,
                 ${total("in_profile")} AS revenue, ${total("in_reporting")} AS reporting_revenue
          FROM converted
          ${byDay ? sql`GROUP BY day ORDER BY day` : sql``}`)
      }

      const spendFilter = (scope: ReadScope) => {
        const filter = scope.touchFilter
        if (filter === null) return sql``
        switch (filter.dimension) {
          case "campaign":
            return sql`AND x.campaign_external_id = ${filter.value}`
          case "ad_set":
            return sql`AND x.ad_set_external_id = ${filter.value}`
          case "ad":
            return sql`AND x.ad_external_id = ${filter.value}`
          case "channel":
            return sql`AND false`
        }
      }

      const spend = (scope: ReadScope, byDay: boolean) =>
        Effect.gen(function*() {
          const probe = yield* firstMeasured(sql`
            SELECT EXISTS (SELECT 1 FROM ad_spend x WHERE x.profile_id = ${scope.profileId} ${spendFilter(scope)}) AS measured`)
          if (!Option.exists(probe, (row) => row.measured)) return { measured: false, rows: [] }
          const rows = yield* spendRows(sql`
            WITH base AS (
              SELECT x.day, x.currency, sum(x.amount) AS money FROM ad_spend x
              WHERE x.profile_id = ${scope.profileId} AND ${range(scope)} ${spendFilter(scope)}
              GROUP BY x.day, x.currency),
            converted AS (
              SELECT x.*, ${convert(scope, scope.currency, true)} AS in_profile,
                     ${convert(scope, scope.reportingCurrency, false)} AS in_reporting
              FROM base x)
            SELECT ${byDay ? sql`day::text` : sql`NULL::text`} AS day,
                   ${total("in_profile")} AS spend, ${total("in_reporting")} AS reporting_spend
            FROM converted
            ${byDay ? sql`GROUP BY day ORDER BY day` : sql``}`)
          return { measured: true, rows }
        })

      const breakdown = (scope: ReadScope, dimension: string) =>
        breakdownRows(sql`
          WITH credited AS (${fragments.creditedByValue(scope, dimension)}),
          converted AS (
            SELECT x.*, ${convert(scope, scope.currency, true)} AS in_profile,
                   ${convert(scope, scope.reportingCurrency, false)} AS in_reporting
            FROM credited x),
          per_value AS (
            SELECT value, sum(conversions)::int AS conversions, sum(cash_payments)::int AS cash_payments,
                   sum(first_payments)::int AS first_payments, trim_scale(sum(credited))::text AS credited_conversions,
                   ${total("in_profile")} AS credited_revenue, ${total("in_reporting")} AS reporting_credited_revenue
            FROM converted GROUP BY value),
          touched AS (${fragments.touchesByValue(scope, dimension)})
          SELECT COALESCE(v.value, t.value) AS value, COALESCE(t.touches, 0)::int AS touches,
                 COALESCE(v.conversions, 0) AS conversions, COALESCE(v.cash_payments, 0) AS cash_payments,
                 COALESCE(v.first_payments, 0) AS first_payments, COALESCE(v.credited_conversions, '0') AS credited_conversions,
                 CASE WHEN v.value IS NULL THEN '0' ELSE v.credited_revenue END AS credited_revenue,
                 CASE WHEN v.value IS NULL THEN '0' ELSE v.reporting_credited_revenue END AS reporting_credited_revenue
          FROM per_value v FULL JOIN touched t ON t.value = v.value
          ORDER BY conversions DESC, touches DESC, value`)

      return atDatabaseBoundary({
        profileFacts: (profileId: string) => profileFacts(profileId).pipe(Effect.withSpan("AnalyticsRepo.profileFacts")),
        measures: (scope: ReadScope, byDay: boolean) => measures(scope, byDay).pipe(Effect.withSpan("AnalyticsRepo.measures")),
        spend: (scope: ReadScope, byDay: boolean) => spend(scope, byDay).pipe(Effect.withSpan("AnalyticsRepo.spend")),
        breakdown: (scope: ReadScope, dimension: string) => breakdown(scope, dimension).pipe(Effect.withSpan("AnalyticsRepo.breakdown"))
      })
    })
  ).pipe(Layer.provide(AnalyticsFragments.layer))
}
