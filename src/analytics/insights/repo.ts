/**
 * The analytics insights' SQL (decision 0043). Models, dimension values and the rollup figures
 * of quality come from the daily rollups (migration 0019); what the rollups cannot answer
 * (distinct people, live visitors, UTM and click-id presence, a touch list, ids missing from the
 * synced ad structure) is read from `touches` within the range, on its `(profile_id, occurred_at)`
 * index. Money is converted like the other analytics reads (repo.ts): per (day, currency),
 * rounded to 6 decimals, then summed; a missing rate makes the total null.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { Fragment } from "effect/sql/Statement"
import { SqlClient } from "effect/sql/SqlClient"
import {
  AdPeopleRow,
  ModelRow,
  UnknownAdId,
  type UtmSummary,
  UtmSummary as UtmSummarySchema
} from "../../../schema/analytics-insights.ts"
import type { TouchFilter } from "../../../schema/analytics.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AnalyticsFragments } from "../sql/fragments.ts"
import { TouchColumns } from "../../attribution/touches/columns.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"

export interface InsightScope {
  readonly profileId: string
  readonly timeZone: string
  /** Inclusive ISO dates in the profile's time zone. */
  readonly start: string
  readonly end: string
  readonly touchFilter: { readonly dimension: TouchFilter; readonly value: string } | null
}

export interface MoneyScope extends InsightScope {
  readonly conversionKey: string | null
  readonly currency: string | null
  readonly reportingCurrency: string | null
}

// The model is read as text: the service looks each known model up in the rows.
const ModelSqlRow = Schema.Struct({ ...ModelRow.fields, model: Schema.String })
export type ModelSqlRow = typeof ModelSqlRow.Type

const ValueRow = Schema.Struct({ value: Schema.String, touches: Schema.Int })

const QualityRow = Schema.Struct({
  touches: Schema.Int,
  direct: Schema.Int,
  with_campaign_id: Schema.Int,
  with_ad_id: Schema.Int,
  unknown_country: Schema.Int,
  unknown_device: Schema.Int
})
export type QualityRollupRow = typeof QualityRow.Type

const RawQualityRow = Schema.Struct({ with_utm: Schema.Int, with_click_id: Schema.Int })

const TouchRow = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  at: Schema.String,
  /** The keyset: `occurred_at` at full precision. */
  cursor_at: Schema.String,
  ...TouchColumns.fields,
  // Every stored touch has a channel; the touches list reads it as such.
  channel: Schema.String,
  click_id_kind: Schema.NullOr(Schema.String),
  join_method: Schema.NullOr(Schema.String)
})
export type TouchSqlRow = typeof TouchRow.Type

const RealtimeRow = Schema.Struct({ minute: Schema.String, visitors: Schema.Int, live: Schema.Int, as_of: Schema.String })
export type RealtimeSqlRow = typeof RealtimeRow.Type

const AdPeopleSqlRow = Schema.Struct({
  key: Schema.String,
  people: Schema.Int,
  ...AdPeopleRow.fields.by_origin.fields
})
export type AdPeopleSqlRow = typeof AdPeopleSqlRow.Type

const UnknownIdRow = Schema.Struct(UnknownAdId.fields)
export type UnknownIdSqlRow = typeof UnknownIdRow.Type

const ScanRow = Schema.Struct({ scanned_at: Schema.String, fresh: Schema.Boolean, summary: UtmSummarySchema })
export type StoredScan = typeof ScanRow.Type

/** What the repository needs to know about a touch list page. */
export interface TouchPage {
  readonly limit: number
  readonly after: { readonly at: string; readonly id: string } | null
}

export type AdPeopleGroup = "month" | "day" | "ad"

/** Minutes a stored UTM scan is answered as is. */
export const UTM_SCAN_FRESH_MINUTES = 10
/** Days of web touches a UTM scan reads. */
export const UTM_SCAN_WINDOW_DAYS = 30

const iso = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

export class InsightsRepo extends Context.Service<InsightsRepo, {
  /** Every model's credited figures (rows for the models with conversions) and the range's business conversions. */
  readonly models: (
    scope: MoneyScope
  ) => Effect.Effect<{ readonly rows: ReadonlyArray<ModelSqlRow>; readonly businessConversions: number }, DatabaseUnavailable>
  /** Touches per value of a dimension, every value, by touches descending then value. */
  readonly dimensionValues: (scope: InsightScope, dimension: string) => Effect.Effect<ReadonlyArray<typeof ValueRow.Type>, DatabaseUnavailable>
  readonly qualityRollup: (scope: InsightScope) => Effect.Effect<QualityRollupRow, DatabaseUnavailable>
  readonly qualityRaw: (scope: InsightScope) => Effect.Effect<typeof RawQualityRow.Type, DatabaseUnavailable>
  /** Newest first, `limit + 1` rows (the extra one says whether a next page exists). */
  readonly touches: (scope: InsightScope, page: TouchPage) => Effect.Effect<ReadonlyArray<TouchSqlRow>, DatabaseUnavailable>
  readonly realtime: (profileId: string) => Effect.Effect<ReadonlyArray<RealtimeSqlRow>, DatabaseUnavailable>
  readonly adPeople: (scope: InsightScope, group: AdPeopleGroup) => Effect.Effect<ReadonlyArray<AdPeopleSqlRow>, DatabaseUnavailable>
  readonly unknownAdIds: (scope: InsightScope) => Effect.Effect<ReadonlyArray<UnknownIdSqlRow>, DatabaseUnavailable>
  /** The profile's stored UTM scan, `fresh` within UTM_SCAN_FRESH_MINUTES. */
  readonly lastUtmScan: (profileId: string) => Effect.Effect<Option.Option<StoredScan>, DatabaseUnavailable>
  /** Scans the last UTM_SCAN_WINDOW_DAYS days of web touches and stores the summary. */
  readonly scanUtm: (profileId: string) => Effect.Effect<{ readonly scanned_at: string; readonly summary: UtmSummary }, DatabaseUnavailable>
}>()("svc/InsightsRepo") {
  static readonly layer = Layer.effect(InsightsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const fragments = yield* AnalyticsFragments
      const modelRows = decodeRows(ModelSqlRow)
      const valueRows = decodeRows(ValueRow)
      const firstQuality = decodeFirstRow(QualityRow)
      const firstRaw = decodeFirstRow(RawQualityRow)
      const touchRows = decodeRows(TouchRow)
      const realtimeRows = decodeRows(RealtimeRow)
      const adPeopleRows = decodeRows(AdPeopleSqlRow)
      const unknownRows = decodeRows(UnknownIdRow)
      const firstScan = decodeFirstRow(ScanRow)
      const firstCounted = decodeFirstRow(Schema.Struct({ n: Schema.Int }))
      const firstSummary = decodeFirstRow(Schema.Struct({ scanned_at: Schema.String, summary: UtmSummarySchema }))

      const convert = (scope: MoneyScope, target: string | null, profileBlock: boolean) =>
        fragments.convertedMoney(scope.currency, target, profileBlock)

      const total = fragments.convertedTotal

      const dayRange = (scope: InsightScope) => sql`x.day BETWEEN ${scope.start}::date AND ${scope.end}::date`

      /** Raw touches of the range (the profile's calendar days), outcome touches excluded, under the touch filter. */
      const rawTouches = (scope: InsightScope) => {
        const filter = scope.touchFilter
        const column = filter === null ? null : {
          channel: "t.channel",
          campaign: "t.campaign_external_id",
          ad_set: "t.ad_set_external_id",
          ad: "t.ad_external_id"
        }[filter.dimension]
        return sql`t.profile_id = ${scope.profileId} AND ${fragments.inRange(scope, "t.occurred_at")} AND t.kind <> 'outcome'
          ${filter === null || column === null ? sql`` : sql`AND ${sql.literal(column)} = ${filter.value}`}`
      }

      const models = (scope: MoneyScope) =>
        Effect.gen(function*() {
          const keyFilter = scope.conversionKey === null ? sql`` : sql`AND x.conversion_key = ${scope.conversionKey}`
          const filter = scope.touchFilter
          const source: Fragment = filter === null
            ? sql`
                SELECT x.model, x.day, x.currency, sum(x.attributed_conversions) AS conversions,
                       sum(x.credited_conversions) AS credited, sum(x.credited_revenue) AS money
                FROM analytics_conversion_days x
                WHERE x.profile_id = ${scope.profileId} AND ${dayRange(scope)} ${keyFilter}
                GROUP BY x.model, x.day, x.currency`
            : sql`
                SELECT x.model, x.day, x.currency, sum(x.conversions) AS conversions,
                       sum(x.credited_conversions) AS credited, sum(x.credited_revenue) AS money
                FROM analytics_credit_days x
                WHERE x.profile_id = ${scope.profileId} AND x.dimension = ${filter.dimension} AND x.value = ${filter.value} AND ${dayRange(scope)} ${keyFilter}
                GROUP BY x.model, x.day, x.currency`
          const rows = yield* modelRows(sql`
            WITH base AS (${source}),
            converted AS (
              SELECT x.*, ${convert(scope, scope.currency, true)} AS in_profile,
                     ${convert(scope, scope.reportingCurrency, false)} AS in_reporting
              FROM base x)
            SELECT model, COALESCE(sum(conversions), 0)::int AS conversion_count,
                   trim_scale(COALESCE(sum(credited), 0))::text AS credited_conversions,
                   ${total("in_profile")} AS credited_revenue, ${total("in_reporting")} AS reporting_credited_revenue
            FROM converted GROUP BY model`)
          // Every model's rows hold every conversion: one model's count is the range's.
          const counted = yield* firstCounted(sql`
            SELECT COALESCE(sum(x.conversions), 0)::int AS n FROM analytics_conversion_days x
            WHERE x.profile_id = ${scope.profileId} AND x.model = 'last_touch' AND ${dayRange(scope)} ${keyFilter}`)
          return { rows, businessConversions: Option.match(counted, { onNone: () => 0, onSome: (row) => row.n }) }
        })

      const dimensionValues = (scope: InsightScope, dimension: string) =>
        valueRows(sql`
          SELECT x.value, x.touches::int AS touches FROM (${fragments.touchesByValue(scope, dimension)}) x
          ORDER BY x.touches DESC, x.value`)

      const qualityRollup = (scope: InsightScope) => {
        const part = (dimension: string, condition: string) =>
          sql`(SELECT COALESCE(sum(x.touches), 0)::int FROM (${fragments.touchesByValue(scope, dimension)}) x
               WHERE ${sql.literal(condition)})`
        return Effect.map(
          firstQuality(sql`
            SELECT ${part("channel", "true")} AS touches, ${part("channel", "x.value = 'direct'")} AS direct,
                   ${part("campaign", "x.value <> ''")} AS with_campaign_id, ${part("ad", "x.value <> ''")} AS with_ad_id,
                   ${part("country", "x.value = ''")} AS unknown_country, ${part("device", "x.value = ''")} AS unknown_device`),
          Option.getOrElse(() => ({ touches: 0, direct: 0, with_campaign_id: 0, with_ad_id: 0, unknown_country: 0, unknown_device: 0 }))
        )
      }

      const qualityRaw = (scope: InsightScope) =>
        Effect.map(
          firstRaw(sql`
            SELECT (count(*) FILTER (WHERE jsonb_typeof(t.payload -> 'utm') = 'object' AND t.payload -> 'utm' <> '{}'::jsonb))::int AS with_utm,
                   (count(*) FILTER (WHERE t.click_id_kind IS NOT NULL))::int AS with_click_id
            FROM touches t WHERE ${rawTouches(scope)}`),
          Option.getOrElse(() => ({ with_utm: 0, with_click_id: 0 }))
        )

      const touches = (scope: InsightScope, page: TouchPage) =>
        touchRows(sql`
          SELECT t.id::text AS id, t.kind, ${sql.literal(iso("t.occurred_at"))} AS at,
                 to_char(t.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at,
                 t.channel, t.source, t.medium, t.campaign_external_id, t.campaign_name, t.ad_set_external_id, t.ad_set_name,
                 t.ad_external_id, t.ad_name, t.click_id_kind, t.join_method
          FROM touches t
          WHERE ${rawTouches(scope)}
            ${page.after === null ? sql`` : sql`AND (t.occurred_at, t.id) < (${page.after.at}::timestamptz, ${page.after.id}::uuid)`}
          ORDER BY t.occurred_at DESC, t.id DESC
          LIMIT ${page.limit + 1}`)

      const realtime = (profileId: string) =>
        realtimeRows(sql`
          WITH now_at AS (SELECT now() AS at),
          recent AS (
            SELECT t.anonymous_id, t.occurred_at FROM touches t, now_at n
            WHERE t.profile_id = ${profileId} AND t.anonymous_id IS NOT NULL AND t.kind <> 'outcome'
              AND t.occurred_at >= date_trunc('minute', n.at) - interval '29 minutes' AND t.occurred_at <= n.at),
          minutes AS (
            SELECT generate_series(date_trunc('minute', n.at) - interval '29 minutes', date_trunc('minute', n.at), interval '1 minute') AS m
            FROM now_at n)
          SELECT ${sql.literal(iso("m.m"))} AS minute,
                 (SELECT count(DISTINCT r.anonymous_id) FROM recent r WHERE r.occurred_at >= m.m AND r.occurred_at < m.m + interval '1 minute')::int AS visitors,
                 (SELECT count(DISTINCT r.anonymous_id) FROM recent r, now_at n WHERE r.occurred_at > n.at - interval '5 minutes')::int AS live,
                 (SELECT ${sql.literal(iso("n.at"))} FROM now_at n) AS as_of
          FROM minutes m ORDER BY m.m`)

      const adPeople = (scope: InsightScope, group: AdPeopleGroup) => {
        const key = group === "ad"
          ? sql`t.ad_external_id`
          : sql`to_char(t.occurred_at AT TIME ZONE ${scope.timeZone}, ${group === "month" ? "YYYY-MM" : "YYYY-MM-DD"})`
        return adPeopleRows(sql`
          WITH tagged AS (
            SELECT ${key} AS key,
                   CASE WHEN t.customer_id IS NOT NULL THEN 'c:' || t.customer_id::text ELSE 'a:' || t.anonymous_id END AS person,
                   CASE WHEN t.join_method = 'ctwa_referral' THEN 'conversation_ad_referral'
                        WHEN starts_with(t.source_system, 'partner_') THEN 'partner_import'
                        WHEN t.source_system = 'tracker' AND t.kind = 'web_touch' THEN 'website_visit'
                        ELSE 'other' END AS origin
            FROM touches t
            WHERE ${rawTouches(scope)} AND t.ad_external_id IS NOT NULL
              AND (t.customer_id IS NOT NULL OR t.anonymous_id IS NOT NULL))
          SELECT key, count(DISTINCT person)::int AS people,
                 (count(DISTINCT person) FILTER (WHERE origin = 'partner_import'))::int AS partner_import,
                 (count(DISTINCT person) FILTER (WHERE origin = 'conversation_ad_referral'))::int AS conversation_ad_referral,
                 (count(DISTINCT person) FILTER (WHERE origin = 'website_visit'))::int AS website_visit,
                 (count(DISTINCT person) FILTER (WHERE origin = 'other'))::int AS other
          FROM tagged GROUP BY key
          ORDER BY ${group === "ad" ? sql`people DESC, key` : sql`key`}`)
      }

      const unknownAdIds = (scope: InsightScope) =>
        unknownRows(sql`
          SELECT v.level, v.external_id, count(*)::int AS touches,
                 ${sql.literal(iso("min(t.occurred_at)"))} AS first_seen_at, ${sql.literal(iso("max(t.occurred_at)"))} AS last_seen_at
          FROM touches t
          CROSS JOIN LATERAL (VALUES ('campaign', t.campaign_external_id), ('ad_set', t.ad_set_external_id), ('ad', t.ad_external_id))
            AS v(level, external_id)
          WHERE ${rawTouches(scope)} AND v.external_id IS NOT NULL
            AND NOT CASE v.level
              WHEN 'campaign' THEN EXISTS (SELECT 1 FROM ad_campaigns c WHERE c.profile_id = t.profile_id AND c.platform_id = v.external_id)
              WHEN 'ad_set' THEN EXISTS (SELECT 1 FROM ad_sets s WHERE s.profile_id = t.profile_id AND s.platform_id = v.external_id)
              ELSE EXISTS (SELECT 1 FROM ads a WHERE a.profile_id = t.profile_id AND a.platform_id = v.external_id) END
          GROUP BY v.level, v.external_id
          ORDER BY touches DESC, v.level, v.external_id`)

      const lastUtmScan = (profileId: string) =>
        firstScan(sql`
          SELECT ${sql.literal(iso("s.scanned_at"))} AS scanned_at,
                 s.scanned_at > now() - make_interval(mins => ${UTM_SCAN_FRESH_MINUTES}) AS fresh, s.summary
          FROM analytics_utm_scans s WHERE s.profile_id = ${profileId}`)

      const scanUtm = (profileId: string) =>
        Effect.flatMap(
          firstSummary(sql`
            WITH web AS (
              SELECT CASE WHEN jsonb_typeof(t.payload -> 'utm') = 'object' THEN t.payload -> 'utm' ELSE '{}'::jsonb END AS utm,
                     t.click_id_kind IS NOT NULL AS clicked
              FROM touches t
              WHERE t.profile_id = ${profileId} AND t.source_system = 'tracker' AND t.kind = 'web_touch'
                AND t.occurred_at >= now() - make_interval(days => ${UTM_SCAN_WINDOW_DAYS}) AND t.occurred_at <= now()),
            summary AS (
              SELECT jsonb_build_object(
                'window_days', ${UTM_SCAN_WINDOW_DAYS}::int,
                'web_touches', count(*)::int,
                'with_utm', (count(*) FILTER (WHERE utm <> '{}'::jsonb))::int,
                'complete', (count(*) FILTER (WHERE utm ->> 'utm_source' IS NOT NULL AND utm ->> 'utm_medium' IS NOT NULL AND utm ->> 'utm_campaign' IS NOT NULL))::int,
                'missing_source', (count(*) FILTER (WHERE utm <> '{}'::jsonb AND utm ->> 'utm_source' IS NULL))::int,
                'missing_medium', (count(*) FILTER (WHERE utm <> '{}'::jsonb AND utm ->> 'utm_medium' IS NULL))::int,
                'missing_campaign', (count(*) FILTER (WHERE utm <> '{}'::jsonb AND utm ->> 'utm_campaign' IS NULL))::int,
                'click_id_without_utm', (count(*) FILTER (WHERE clicked AND utm = '{}'::jsonb))::int) AS summary
              FROM web)
            INSERT INTO analytics_utm_scans AS s (profile_id, scanned_at, summary)
            SELECT ${profileId}, now(), summary FROM summary
            ON CONFLICT (profile_id) DO UPDATE SET scanned_at = excluded.scanned_at, summary = excluded.summary
            RETURNING ${sql.literal(iso("s.scanned_at"))} AS scanned_at, s.summary`),
          (row) => Option.match(row, { onNone: () => Effect.die("the UTM scan stored no row"), onSome: Effect.succeed })
        )

      return atDatabaseBoundary({
        models: (scope: MoneyScope) => models(scope).pipe(Effect.withSpan("InsightsRepo.models")),
        dimensionValues: (scope: InsightScope, dimension: string) =>
          dimensionValues(scope, dimension).pipe(Effect.withSpan("InsightsRepo.dimensionValues")),
        qualityRollup: (scope: InsightScope) => qualityRollup(scope).pipe(Effect.withSpan("InsightsRepo.qualityRollup")),
        qualityRaw: (scope: InsightScope) => qualityRaw(scope).pipe(Effect.withSpan("InsightsRepo.qualityRaw")),
        touches: (scope: InsightScope, page: TouchPage) => touches(scope, page).pipe(Effect.withSpan("InsightsRepo.touches")),
        realtime: (profileId: string) => realtime(profileId).pipe(Effect.withSpan("InsightsRepo.realtime")),
        adPeople: (scope: InsightScope, group: AdPeopleGroup) => adPeople(scope, group).pipe(Effect.withSpan("InsightsRepo.adPeople")),
        unknownAdIds: (scope: InsightScope) => unknownAdIds(scope).pipe(Effect.withSpan("InsightsRepo.unknownAdIds")),
        lastUtmScan: (profileId: string) => lastUtmScan(profileId).pipe(Effect.withSpan("InsightsRepo.lastUtmScan")),
        scanUtm: (profileId: string) => scanUtm(profileId).pipe(Effect.withSpan("InsightsRepo.scanUtm"))
      })
    })
  ).pipe(Layer.provide(AnalyticsFragments.layer))
}
