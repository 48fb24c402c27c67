/**
 * The owner of `recommendations` (decision 0072): the statistics the rules read (ad sets and ads
 * with their spend and credited conversions), the idempotent write of a generation (ids derived
 * from profile, rule and target; open ones no longer proposed expire), the keyset list, dismiss,
 * and marking one applied with the ad action that applied it.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { Rule } from "../../../schema/creative-analysis.ts"
import { RecommendationStatus } from "../../../schema/recommendations.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const TargetLevel = Schema.Literals(["campaign", "ad_set", "ad"])

export const EntityStats = Schema.Struct({
  level: TargetLevel,
  platform_id: Schema.String,
  status: Schema.String,
  daily_budget_minor: Schema.NullOr(Schema.Number),
  currency: Schema.NullOr(Schema.String),
  /** Spend in major units of the spend rows' currency over the window. */
  spend: Schema.Number,
  days_with_spend: Schema.Number,
  outcomes: Schema.Number
})
export type EntityStats = typeof EntityStats.Type

export interface Proposal {
  readonly id: string
  readonly ruleId: string
  readonly level: "campaign" | "ad_set" | "ad"
  readonly platformId: string
  readonly actionType: "pause" | "budget"
  readonly previousDailyBudgetMinor: number | null
  readonly newDailyBudgetMinor: number | null
  readonly rule: Rule
}

export const RecommendationRow = Schema.Struct({
  id: Schema.String,
  status: RecommendationStatus,
  rule: Rule,
  target_level: TargetLevel,
  target_platform_id: Schema.String,
  target_name: Schema.NullOr(Schema.String),
  action_type: Schema.Literals(["pause", "budget"]),
  previous_daily_budget_minor: Schema.NullOr(Schema.Number),
  new_daily_budget_minor: Schema.NullOr(Schema.Number),
  action_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String,
  dismissed_at: Schema.NullOr(Schema.String)
})
export type RecommendationRow = typeof RecommendationRow.Type

export class RecommendationsRepo extends Context.Service<RecommendationsRepo, {
  /** Active synced ad sets and ads with spend (major units) and last-touch credited conversions in [since, until]. */
  readonly stats: (profileId: string, since: string, until: string) => Effect.Effect<ReadonlyArray<EntityStats>, DatabaseUnavailable>
  /**
   * Writes a generation in one transaction (serialized per profile): new proposals are inserted
   * open; an open or expired one is (re)opened with the new inputs; dismissed and applied ones
   * stay as they are; open ones not proposed any more expire.
   */
  readonly record: (profileId: string, proposals: ReadonlyArray<Proposal>) => Effect.Effect<void, DatabaseUnavailable>
  readonly list: (
    profileId: string,
    status: string | null,
    after: Option.Option<Keyset>,
    limit: number
  ) => Effect.Effect<ReadonlyArray<RecommendationRow>, DatabaseUnavailable>
  readonly find: (profileId: string, id: string) => Effect.Effect<Option.Option<RecommendationRow>, DatabaseUnavailable>
  /** Open → dismissed; None when it was not open. */
  readonly dismiss: (profileId: string, id: string) => Effect.Effect<Option.Option<RecommendationRow>, DatabaseUnavailable>
  /** Open → applied with the ad action that applied it; None when it was not open (for the apply route). */
  readonly markApplied: (profileId: string, id: string, actionId: string) => Effect.Effect<Option.Option<RecommendationRow>, DatabaseUnavailable>
}>()("svc/RecommendationsRepo") {
  static readonly layer = Layer.effect(RecommendationsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const statRows = decodeRows(EntityStats)
      const recRows = decodeRows(RecommendationRow)
      const firstRec = decodeFirstRow(RecommendationRow)

      const stats = (profileId: string, since: string, until: string) =>
        statRows(sql`
          WITH spend AS (
            SELECT ad_set_external_id, ad_external_id, sum(amount)::float8 AS spend, count(DISTINCT day)::float8 AS days
            FROM ad_spend WHERE profile_id = ${profileId} AND day BETWEEN ${since}::date AND ${until}::date
            GROUP BY GROUPING SETS ((ad_set_external_id), (ad_external_id))),
          credited AS (
            SELECT level, platform_id, sum(credited_conversions)::float8 AS outcomes
            FROM analytics_campaign_days
            WHERE profile_id = ${profileId} AND model = 'last_touch' AND level IN ('ad_set', 'ad')
              AND day BETWEEN ${since}::date AND ${until}::date
            GROUP BY level, platform_id)
          SELECT 'ad_set' AS level, s.platform_id, s.status, s.daily_budget_minor::float8 AS daily_budget_minor, s.currency,
                 COALESCE(sp.spend, 0) AS spend, COALESCE(sp.days, 0) AS days_with_spend, COALESCE(cr.outcomes, 0) AS outcomes
          FROM ad_sets s
          LEFT JOIN spend sp ON sp.ad_set_external_id = s.platform_id AND sp.ad_external_id IS NULL
          LEFT JOIN credited cr ON cr.level = 'ad_set' AND cr.platform_id = s.platform_id
          WHERE s.profile_id = ${profileId} AND s.status = 'active'
          UNION ALL
          SELECT 'ad', a.platform_id, a.status, NULL, NULL,
                 COALESCE(sp.spend, 0), COALESCE(sp.days, 0), COALESCE(cr.outcomes, 0)
          FROM ads a
          LEFT JOIN spend sp ON sp.ad_external_id = a.platform_id AND sp.ad_set_external_id IS NULL
          LEFT JOIN credited cr ON cr.level = 'ad' AND cr.platform_id = a.platform_id
          WHERE a.profile_id = ${profileId} AND a.status = 'active'
          ORDER BY 1, 2`)

      const record = (profileId: string, proposals: ReadonlyArray<Proposal>) =>
        Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`recommendations:${profileId}`}))`
          for (const p of proposals) {
            yield* sql`
              INSERT INTO recommendations (id, profile_id, rule_id, target_level, target_platform_id, action_type,
                                           previous_daily_budget_minor, new_daily_budget_minor, rule)
              VALUES (${p.id}, ${profileId}, ${p.ruleId}, ${p.level}, ${p.platformId}, ${p.actionType},
                      ${p.previousDailyBudgetMinor}, ${p.newDailyBudgetMinor}, ${JSON.stringify(p.rule)}::jsonb)
              ON CONFLICT (profile_id, rule_id, target_level, target_platform_id) DO UPDATE
              SET rule = EXCLUDED.rule, action_type = EXCLUDED.action_type,
                  previous_daily_budget_minor = EXCLUDED.previous_daily_budget_minor,
                  new_daily_budget_minor = EXCLUDED.new_daily_budget_minor, status = 'open', updated_at = now()
              WHERE recommendations.status = 'expired'
                 OR (recommendations.status = 'open' AND (recommendations.rule <> EXCLUDED.rule
                     OR recommendations.new_daily_budget_minor IS DISTINCT FROM EXCLUDED.new_daily_budget_minor))`
          }
          yield* sql`
            UPDATE recommendations SET status = 'expired', updated_at = now()
            WHERE profile_id = ${profileId} AND status = 'open' AND NOT (id::text = ANY(${proposals.map((p) => p.id)}::text[]))`
        }).pipe(sql.withTransaction)

      const columns = sql`
        r.id::text AS id, r.status, r.rule, r.target_level, r.target_platform_id,
        COALESCE(a.name, s.name, c.name) AS target_name, r.action_type,
        r.previous_daily_budget_minor::float8 AS previous_daily_budget_minor, r.new_daily_budget_minor::float8 AS new_daily_budget_minor,
        r.action_id, ${isoTimestamp(sql, "r.created_at")} AS created_at, ${isoTimestamp(sql, "r.updated_at")} AS updated_at,
        ${isoTimestamp(sql, "r.dismissed_at")} AS dismissed_at`
      const names = sql`
        LEFT JOIN ads a ON r.target_level = 'ad' AND a.profile_id = r.profile_id AND a.platform_id = r.target_platform_id
        LEFT JOIN ad_sets s ON r.target_level = 'ad_set' AND s.profile_id = r.profile_id AND s.platform_id = r.target_platform_id
        LEFT JOIN ad_campaigns c ON r.target_level = 'campaign' AND c.profile_id = r.profile_id AND c.platform_id = r.target_platform_id`

      const list = (profileId: string, status: string | null, after: Option.Option<Keyset>, limit: number) =>
        recRows(sql`
          SELECT ${columns} FROM recommendations r ${names}
          WHERE r.profile_id = ${profileId}
            ${status === null ? sql`` : sql`AND r.status = ${status}`}
            ${Option.match(after, {
              onNone: () => sql``,
              onSome: (key) => sql`AND (r.created_at, r.id::text) < (${key.createdAt}::timestamptz, ${key.id})`
            })}
          ORDER BY r.created_at DESC, r.id::text DESC LIMIT ${limit + 1}`)

      const find = (profileId: string, id: string) =>
        firstRec(sql`SELECT ${columns} FROM recommendations r ${names} WHERE r.profile_id = ${profileId} AND r.id::text = ${id}`)

      const transition = (profileId: string, id: string, set: Fragment) =>
        Effect.flatMap(
          sql`UPDATE recommendations SET ${set}, updated_at = now()
              WHERE profile_id = ${profileId} AND id::text = ${id} AND status = 'open' RETURNING id`,
          (rows) => rows.length === 0 ? Effect.succeed(Option.none<RecommendationRow>()) : find(profileId, id)
        )

      const dismiss = (profileId: string, id: string) => transition(profileId, id, sql`status = 'dismissed', dismissed_at = now()`)

      const markApplied = (profileId: string, id: string, actionId: string) =>
        transition(profileId, id, sql`status = 'applied', applied_at = now(), action_id = ${actionId}`)

      return atDatabaseBoundary({ stats, record, list, find, dismiss, markApplied })
    })
  )
}
