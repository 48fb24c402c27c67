/**
 * SQL of the campaign, ad set and ad reads (decision 0042). Metrics come from
 * `analytics_campaign_days` and spend from the daily `ad_spend` rows; the synced structure
 * (migration 0013) names the entities. Money is summed per (entity, day, currency), converted
 * with that day's stored FX rate and rounded to 6 decimals, then summed (as in repo.ts); a
 * (day, currency) amount without a rate makes the entity's total null. The conversions list of
 * one campaign is a list of facts, so it reads the raw tables (keyset on occurred_at, id).
 */
import { Context, Effect, Layer, Option, Schema, Struct } from "effect"
import type { Fragment } from "effect/sql/Statement"
import { SqlClient } from "effect/sql/SqlClient"
import { type CampaignLevel, CampaignConversion, CampaignRow } from "../../../schema/analytics-campaigns.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { CreditModels } from "../../../schema/events.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import { AnalyticsFragments, type ReadScope } from "../sql/fragments.ts"

const MetricsRow = Schema.Struct({
  platform_id: Schema.String,
  conversions: Schema.Int,
  cash_payments: Schema.Int,
  first_payments: Schema.Int,
  credited_conversions: Schema.String,
  by_type: Schema.Record(Schema.String, Schema.Int),
  outcome_value: Schema.NullOr(Schema.String),
  credited_revenue: Schema.NullOr(Schema.String),
  reporting_outcome_value: Schema.NullOr(Schema.String),
  reporting_credited_revenue: Schema.NullOr(Schema.String)
})
export type MetricsRow = typeof MetricsRow.Type

const SpendRow = Schema.Struct({
  platform_id: Schema.String,
  spend: Schema.NullOr(Schema.String),
  reporting_spend: Schema.NullOr(Schema.String),
  /** The platform's own counts from synced insights; null when no synced day carries them. */
  reported_conversions: Schema.NullOr(Schema.Int),
  reported_chats: Schema.NullOr(Schema.Int)
})
export type EntitySpendRow = typeof SpendRow.Type

const StructureRow = Schema.Struct({
  platform_id: Schema.String,
  id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  ...Struct.pick(CampaignRow.fields, ["learning_stage_status", "campaign_objective"])
})
export type StructureRow = typeof StructureRow.Type

const TrendRowSql = Schema.Struct({
  day: Schema.String,
  conversions: Schema.Int,
  cash_payments: Schema.Int,
  first_payments: Schema.Int,
  credited_conversions: Schema.String,
  credited_revenue: Schema.NullOr(Schema.String),
  reporting_credited_revenue: Schema.NullOr(Schema.String)
})
export type TrendRow = typeof TrendRowSql.Type

const TrendSpendSql = Schema.Struct({
  day: Schema.String,
  spend: Schema.NullOr(Schema.String),
  reporting_spend: Schema.NullOr(Schema.String)
})
export type TrendSpendRow = typeof TrendSpendSql.Type

/** The wire's conversion row, as read. */
const ConversionRow = Schema.Struct(CampaignConversion.fields)
export type CampaignConversionRow = typeof ConversionRow.Type

export interface ConversionsPage {
  readonly platformId: string
  readonly after: { readonly occurredAt: string; readonly id: string } | null
  /** Rows to fetch (the page size plus one). */
  readonly take: number
}

const SPEND_COLUMN = { campaign: "x.campaign_external_id", ad_set: "x.ad_set_external_id", ad: "x.ad_external_id" } as const
const TOUCH_COLUMN = {
  channel: "tch.channel",
  campaign: "tch.campaign_external_id",
  ad_set: "tch.ad_set_external_id",
  ad: "tch.ad_external_id"
} as const

export class CampaignsRepo extends Context.Service<CampaignsRepo, {
  /** Per platform id of the level ('' = the remainder), within the scope's filters. */
  readonly metrics: (
    scope: ReadScope,
    level: CampaignLevel,
    only?: string
  ) => Effect.Effect<ReadonlyArray<MetricsRow>, DatabaseUnavailable>
  /**
   * Spend per platform id of the level in the range, and the ids whose spend is measured (any
   * spend row ever, within the filter). A `channel` filter measures nothing.
   */
  readonly spend: (scope: ReadScope, level: CampaignLevel, only?: string) => Effect.Effect<{
    readonly measured: ReadonlySet<string>
    readonly rows: ReadonlyArray<EntitySpendRow>
  }, DatabaseUnavailable>
  /** The synced entities of the level that the filter reaches through the structure. */
  readonly structure: (
    scope: ReadScope,
    level: CampaignLevel,
    only?: string
  ) => Effect.Effect<ReadonlyArray<StructureRow>, DatabaseUnavailable>
  /** Whether a list of the level can show this id: synced, credited under some model, or with spend recorded. */
  readonly known: (profileId: string, level: CampaignLevel, platformId: string) => Effect.Effect<boolean, DatabaseUnavailable>
  /** Ad rows (credited ids only) summed per day, and the spend of the filters per day. */
  readonly trend: (scope: ReadScope) => Effect.Effect<{
    readonly days: ReadonlyArray<TrendRow>
    readonly measured: boolean
    readonly spend: ReadonlyArray<TrendSpendRow>
  }, DatabaseUnavailable>
  readonly conversions: (scope: ReadScope, page: ConversionsPage) => Effect.Effect<ReadonlyArray<CampaignConversionRow>, DatabaseUnavailable>
}>()("svc/CampaignsRepo") {
  static readonly layer = Layer.effect(CampaignsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const fragments = yield* AnalyticsFragments
      const metricRows = decodeRows(MetricsRow)
      const spendRows = decodeRows(SpendRow)
      const structureRows = decodeRows(StructureRow)
      const conversionRows = decodeRows(ConversionRow)
      const trendRows = decodeRows(TrendRowSql)
      const trendSpendRows = decodeRows(TrendSpendSql)
      const platformIdRows = decodeRows(Schema.Struct({ platform_id: Schema.String }))
      const firstKnown = decodeFirstRow(Schema.Struct({ known: Schema.Boolean }))
      const firstMeasured = decodeFirstRow(Schema.Struct({ measured: Schema.Boolean }))

      const convert = (scope: ReadScope, target: string | null, profileBlock: boolean, money: string) =>
        fragments.convertedMoney(scope.currency, target, profileBlock, money)

      const total = fragments.convertedTotal

      const range = (scope: ReadScope) => sql`x.day BETWEEN ${scope.start}::date AND ${scope.end}::date`

      const metrics = (scope: ReadScope, level: CampaignLevel, only: string | undefined) => {
        return metricRows(sql`
          WITH base AS (
            SELECT x.* FROM (${fragments.campaignRowsOf(scope, level)}) x
            ${only === undefined ? sql`` : sql`WHERE x.platform_id = ${only}`}),
          counts AS (
            SELECT platform_id, sum(conversions)::int AS conversions, sum(cash_payments)::int AS cash_payments,
                   sum(first_payments)::int AS first_payments, trim_scale(sum(credited_conversions))::text AS credited_conversions
            FROM base GROUP BY platform_id),
          by_type AS (
            SELECT platform_id, jsonb_object_agg(conversion_key, n) AS by_type FROM (
              SELECT platform_id, conversion_key, sum(conversions)::int AS n FROM base GROUP BY platform_id, conversion_key
            ) k WHERE n > 0 GROUP BY platform_id),
          money AS (
            SELECT x.platform_id, x.day, x.currency, sum(x.outcome_value) AS outcome_value, sum(x.credited_revenue) AS credited_revenue
            FROM base x GROUP BY x.platform_id, x.day, x.currency),
          converted AS (
            SELECT x.platform_id, ${convert(scope, scope.currency, true, "x.outcome_value")} AS value_p,
                   ${convert(scope, scope.currency, true, "x.credited_revenue")} AS revenue_p,
                   ${convert(scope, scope.reportingCurrency, false, "x.outcome_value")} AS value_r,
                   ${convert(scope, scope.reportingCurrency, false, "x.credited_revenue")} AS revenue_r
            FROM money x),
          amounts AS (
            SELECT platform_id, ${total("value_p")} AS outcome_value, ${total("revenue_p")} AS credited_revenue,
                   ${total("value_r")} AS reporting_outcome_value, ${total("revenue_r")} AS reporting_credited_revenue
            FROM converted GROUP BY platform_id)
          SELECT c.platform_id, c.conversions, c.cash_payments, c.first_payments, c.credited_conversions,
                 COALESCE(t.by_type, '{}'::jsonb) AS by_type, a.outcome_value, a.credited_revenue,
                 a.reporting_outcome_value, a.reporting_credited_revenue
          FROM counts c JOIN amounts a ON a.platform_id = c.platform_id LEFT JOIN by_type t ON t.platform_id = c.platform_id`)
      }

      const spendFilter = (scope: ReadScope) => {
        const filter = scope.touchFilter
        if (filter === null || filter.dimension === "channel") return sql``
        return sql`AND ${sql.literal(SPEND_COLUMN[filter.dimension])} = ${filter.value}`
      }

      const spend = (scope: ReadScope, level: CampaignLevel, only: string | undefined) =>
        Effect.gen(function*() {
          // Spend is recorded per ad, never per channel: under a channel filter nothing is measured.
          if (scope.touchFilter?.dimension === "channel") return { measured: new Set<string>(), rows: [] }
          const column = sql.literal(SPEND_COLUMN[level])
          const one = only === undefined ? sql`` : sql`AND ${column} = ${only}`
          // Without a filter, the distinct ids are walked through the level's index (one probe per
          // id) rather than read from every spend row the profile ever had.
          const measured = yield* platformIdRows(scope.touchFilter === null && only === undefined
            ? sql`
                WITH RECURSIVE ids AS (
                  (SELECT ${column} AS platform_id FROM ad_spend x
                   WHERE x.profile_id = ${scope.profileId} AND ${column} IS NOT NULL ORDER BY ${column} LIMIT 1)
                  UNION ALL
                  SELECT (SELECT ${column} FROM ad_spend x
                          WHERE x.profile_id = ${scope.profileId} AND ${column} > ids.platform_id ORDER BY ${column} LIMIT 1)
                  FROM ids WHERE ids.platform_id IS NOT NULL)
                SELECT platform_id FROM ids WHERE platform_id IS NOT NULL`
            : sql`
                SELECT DISTINCT ${column} AS platform_id FROM ad_spend x
                WHERE x.profile_id = ${scope.profileId} AND ${column} IS NOT NULL ${spendFilter(scope)} ${one}`)
          const rows = yield* spendRows(sql`
            WITH base AS (
              SELECT ${column} AS platform_id, x.day, x.currency, sum(x.amount) AS money,
                     sum(x.reported_conversions) AS rc, sum(x.reported_chats) AS rh FROM ad_spend x
              WHERE x.profile_id = ${scope.profileId} AND ${column} IS NOT NULL AND ${range(scope)} ${spendFilter(scope)} ${one}
              GROUP BY 1, x.day, x.currency),
            converted AS (
              SELECT x.platform_id, ${convert(scope, scope.currency, true, "x.money")} AS in_profile,
                     ${convert(scope, scope.reportingCurrency, false, "x.money")} AS in_reporting, x.rc, x.rh
              FROM base x)
            SELECT platform_id, ${total("in_profile")} AS spend, ${total("in_reporting")} AS reporting_spend,
                   sum(rc)::int AS reported_conversions, sum(rh)::int AS reported_chats
            FROM converted GROUP BY platform_id`)
          return { measured: new Set(measured.map((row) => row.platform_id)), rows }
        })

      const structure = (scope: ReadScope, level: CampaignLevel, only: string | undefined) => {
        const filter = scope.touchFilter
        // The filter reaches the level's entities through the structure (up or down); a channel does not narrow it.
        const where: Fragment = filter === null || filter.dimension === "channel"
          ? sql``
          : filter.dimension === "campaign"
          ? sql`AND c.platform_id = ${filter.value}`
          : filter.dimension === "ad_set"
          ? level === "campaign"
            ? sql`AND EXISTS (SELECT 1 FROM ad_sets s2 WHERE s2.campaign_id = c.id AND s2.platform_id = ${filter.value})`
            : sql`AND s.platform_id = ${filter.value}`
          : level === "ad"
          ? sql`AND a.platform_id = ${filter.value}`
          : level === "ad_set"
          ? sql`AND EXISTS (SELECT 1 FROM ads a2 WHERE a2.ad_set_id = s.id AND a2.platform_id = ${filter.value})`
          : sql`AND EXISTS (SELECT 1 FROM ads a2 JOIN ad_sets s2 ON s2.id = a2.ad_set_id
                            WHERE s2.campaign_id = c.id AND a2.platform_id = ${filter.value})`
        switch (level) {
          case "campaign":
            return structureRows(sql`
              SELECT c.platform_id, c.id::text AS id, c.name, c.status, NULL::text AS learning_stage_status,
                     NULL::text AS campaign_objective
              FROM ad_campaigns c WHERE c.profile_id = ${scope.profileId} ${where}
              ${only === undefined ? sql`` : sql`AND c.platform_id = ${only}`}`)
          case "ad_set":
            return structureRows(sql`
              SELECT s.platform_id, s.id::text AS id, s.name, s.status, s.learning_stage_status, c.objective AS campaign_objective
              FROM ad_sets s JOIN ad_campaigns c ON c.id = s.campaign_id WHERE s.profile_id = ${scope.profileId} ${where}
              ${only === undefined ? sql`` : sql`AND s.platform_id = ${only}`}`)
          case "ad":
            return structureRows(sql`
              SELECT a.platform_id, a.id::text AS id, a.name, a.status, NULL::text AS learning_stage_status,
                     NULL::text AS campaign_objective
              FROM ads a JOIN ad_sets s ON s.id = a.ad_set_id JOIN ad_campaigns c ON c.id = s.campaign_id
              WHERE a.profile_id = ${scope.profileId} ${where} ${only === undefined ? sql`` : sql`AND a.platform_id = ${only}`}`)
        }
      }

      const SYNCED_TABLE = { campaign: "ad_campaigns", ad_set: "ad_sets", ad: "ads" } as const
      const SPEND_ID = { campaign: "campaign_external_id", ad_set: "ad_set_external_id", ad: "ad_external_id" } as const
      // Exactly the ids a list of the level can show (synced, credited under some model, or with spend), each probe on an index.
      const known = (profileId: string, level: CampaignLevel, platformId: string) =>
        Effect.map(
          firstKnown(sql`
            SELECT EXISTS (SELECT 1 FROM ${sql(SYNCED_TABLE[level])} WHERE profile_id = ${profileId} AND platform_id = ${platformId})
                OR EXISTS (SELECT 1 FROM analytics_campaign_days
                           WHERE profile_id = ${profileId} AND model = ANY(${CreditModels}::text[]) AND level = ${level}
                             AND platform_id = ${platformId})
                OR EXISTS (SELECT 1 FROM ad_spend WHERE profile_id = ${profileId} AND ${sql(SPEND_ID[level])} = ${platformId}) AS known`),
          Option.exists((row) => row.known)
        )

      const trend = (scope: ReadScope) =>
        Effect.gen(function*() {
          const days = yield* trendRows(sql`
            WITH base AS (
              SELECT x.day, x.currency, sum(x.conversions) AS conversions, sum(x.cash_payments) AS cash_payments,
                     sum(x.first_payments) AS first_payments, sum(x.credited_conversions) AS credited, sum(x.credited_revenue) AS money
              FROM (${fragments.campaignRowsOf(scope, "ad")}) x
              WHERE x.platform_id <> ''
              GROUP BY x.day, x.currency),
            converted AS (
              SELECT x.*, ${convert(scope, scope.currency, true, "x.money")} AS in_profile,
                     ${convert(scope, scope.reportingCurrency, false, "x.money")} AS in_reporting
              FROM base x)
            SELECT day::text AS day, sum(conversions)::int AS conversions, sum(cash_payments)::int AS cash_payments,
                   sum(first_payments)::int AS first_payments, trim_scale(sum(credited))::text AS credited_conversions,
                   ${total("in_profile")} AS credited_revenue, ${total("in_reporting")} AS reporting_credited_revenue
            FROM converted GROUP BY day ORDER BY day`)
          if (scope.touchFilter?.dimension === "channel") return { days, measured: false, spend: [] }
          const probe = yield* firstMeasured(sql`
            SELECT EXISTS (SELECT 1 FROM ad_spend x WHERE x.profile_id = ${scope.profileId} ${spendFilter(scope)}) AS measured`)
          if (!Option.exists(probe, (row) => row.measured)) return { days, measured: false, spend: [] }
          const spend = yield* trendSpendRows(sql`
            WITH base AS (
              SELECT x.day, x.currency, sum(x.amount) AS money FROM ad_spend x
              WHERE x.profile_id = ${scope.profileId} AND ${range(scope)} ${spendFilter(scope)}
              GROUP BY x.day, x.currency),
            converted AS (
              SELECT x.*, ${convert(scope, scope.currency, true, "x.money")} AS in_profile,
                     ${convert(scope, scope.reportingCurrency, false, "x.money")} AS in_reporting
              FROM base x)
            SELECT day::text AS day, ${total("in_profile")} AS spend, ${total("in_reporting")} AS reporting_spend
            FROM converted GROUP BY day ORDER BY day`)
          return { days, measured: true, spend }
        })

      const conversions = (scope: ReadScope, page: ConversionsPage) => {
        const filter = scope.touchFilter
        const sameTouch = filter === null ? sql`` : sql`AND ${sql.literal(TOUCH_COLUMN[filter.dimension])} = ${filter.value}`
        const keyFilter = scope.conversionKey === null ? sql`` : sql`AND c.conversion_key = ${scope.conversionKey}`
        const after = page.after === null
          ? sql``
          : sql`AND (c.occurred_at, c.id) < (${page.after.occurredAt}::timestamptz, ${page.after.id}::uuid)`
        return conversionRows(sql`
          SELECT c.id::text AS id, c.outcome_event_id::text AS outcome_event_id, c.conversion_key,
                 to_char(c.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS occurred_at,
                 trim_scale(c.value_amount)::text AS value, c.currency, c.counts_as_cash, c.is_first_payment,
                 trim_scale(sum(a.credit_share))::text AS credit_share
          FROM touches tch
          JOIN attribution_credits a ON a.touch_id = tch.id AND a.profile_id = tch.profile_id AND a.model = ${scope.model} AND a.is_credited
          JOIN conversions c ON c.id = a.conversion_id AND c.profile_id = a.profile_id AND c.occurred_at = a.converted_at
          WHERE tch.profile_id = ${scope.profileId} AND tch.campaign_external_id = ${page.platformId} ${sameTouch}
            AND c.profile_id = ${scope.profileId} AND c.refunded_at IS NULL
            AND ${fragments.inRange(scope, "c.occurred_at")} ${keyFilter} ${after}
            -- The same range on the credit rows' month (equal to c.occurred_at): their other months are never read.
            AND ${fragments.inRange(scope, "a.converted_at")}
          -- The whole key: the other columns of c depend on (id, profile_id, occurred_at) (migrations 0064, 0072).
          GROUP BY c.id, c.profile_id, c.occurred_at
          ORDER BY c.occurred_at DESC, c.id DESC
          LIMIT ${page.take}`)
      }

      return atDatabaseBoundary({
        metrics: (scope: ReadScope, level: CampaignLevel, only?: string) =>
          metrics(scope, level, only).pipe(Effect.withSpan("CampaignsRepo.metrics")),
        spend: (scope: ReadScope, level: CampaignLevel, only?: string) => spend(scope, level, only).pipe(Effect.withSpan("CampaignsRepo.spend")),
        structure: (scope: ReadScope, level: CampaignLevel, only?: string) =>
          structure(scope, level, only).pipe(Effect.withSpan("CampaignsRepo.structure")),
        known: (profileId: string, level: CampaignLevel, platformId: string) =>
          known(profileId, level, platformId).pipe(Effect.withSpan("CampaignsRepo.known")),
        trend: (scope: ReadScope) => trend(scope).pipe(Effect.withSpan("CampaignsRepo.trend")),
        conversions: (scope: ReadScope, page: ConversionsPage) => conversions(scope, page).pipe(Effect.withSpan("CampaignsRepo.conversions"))
      })
    })
  ).pipe(Layer.provide(AnalyticsFragments.layer))
}
