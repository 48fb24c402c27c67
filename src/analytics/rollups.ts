/**
 * The analytics rollup job (decision 0041): keeps `analytics_*_days` equal to what the raw facts
 * say, with a lag of about one poll interval. Triggers on the fact tables (migrations/0019)
 * append the (profile, day) pairs a write touched to `analytics_dirty` in the writer's
 * transaction; this job takes a batch of them (`FOR UPDATE SKIP LOCKED`: runners share the
 * work), recomputes those days from the raw tables and deletes the batch, all in one
 * transaction: a runner that dies leaves the batch to the next one, and recomputing a day twice
 * writes the same rows (idempotent). A per-profile advisory lock keeps two runners from
 * rewriting one profile's days at once. `rebuild` marks every day a profile has facts or rollups
 * for and drains: the operator's full recompute (`svc analytics rebuild`).
 */
import { Cause, Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { CreditModels } from "../../schema/events.ts"
import { decodeRows, orDatabaseUnavailable } from "../platform/database.ts"

export interface AnalyticsRollupSettingsShape {
  /** Run the background fiber. Off: rollups change only when `drain` is called. */
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /** Dirty marks taken per transaction. */
  readonly batchSize: number
}

export const defaultRollupSettings: AnalyticsRollupSettingsShape = {
  enabled: true,
  pollInterval: Duration.seconds(1),
  batchSize: 200
}

export const AnalyticsRollupSettings = Context.Reference<AnalyticsRollupSettingsShape>("svc/AnalyticsRollupSettings", {
  defaultValue: () => defaultRollupSettings
})

/**
 * What a touch is counted under, per dimension ('' = none). The filter dimensions are the first
 * four; a rollup row within a filter value counts only touches that have it.
 */
export const DIMENSION_SQL = {
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
  os: "COALESCE(tch.os, '')"
} as const

const FILTER_DIMENSIONS = ["channel", "campaign", "ad_set", "ad"] as const

const dimensionValues = Object.entries(DIMENSION_SQL).map(([name, expression]) => `('${name}', ${expression})`).join(", ")
const filterValues = ["('', '')", ...FILTER_DIMENSIONS.map((name) => `('${name}', ${DIMENSION_SQL[name]})`)].join(", ")

/** Touches and credited touches fan out to one row per (filter value, dimension value). */
const fanOut = `
  CROSS JOIN LATERAL (VALUES ${dimensionValues}) AS d(dimension, value)
  CROSS JOIN LATERAL (VALUES ${filterValues}) AS f(filter_dimension, filter_value)`
/** The same fan-out over touches already grouped by their attribute tuple (`g`, one column per dimension). */
const dimensionNames = Object.keys(DIMENSION_SQL)
const tupleColumns = Object.entries(DIMENSION_SQL).map(([name, expression]) => `${expression} AS ${name}`).join(", ")
/** Positions: profile_id, day, then one per dimension. */
const tupleGroupBy = Array.from({ length: dimensionNames.length + 2 }, (_, i) => String(i + 1)).join(", ")
const tupleFanOut = `
  CROSS JOIN LATERAL (VALUES ${dimensionNames.map((name) => `('${name}', g.${name})`).join(", ")}) AS d(dimension, value)
  CROSS JOIN LATERAL (VALUES ('', ''), ${FILTER_DIMENSIONS.map((name) => `('${name}', g.${name})`).join(", ")}) AS f(filter_dimension, filter_value)`
const fanOutWhere = `(f.filter_dimension = '' OR f.filter_value <> '') AND f.filter_dimension <> d.dimension`

const DirtyRow = Schema.Struct({ profile_id: Schema.String, day: Schema.NullOr(Schema.String) })

export interface DrainResult {
  /** (profile, day) pairs recomputed. */
  readonly days: number
}

export class AnalyticsRollups extends Context.Service<AnalyticsRollups, {
  /** Recomputes one batch of dirty days; answers how many dirty marks it consumed. */
  readonly refreshPending: Effect.Effect<number, DatabaseUnavailable>
  /** Recomputes until no dirty mark is left (waiting for marks another runner holds). */
  readonly drain: Effect.Effect<DrainResult, DatabaseUnavailable>
  /** Marks every day of the profiles (all when null) dirty and drains. */
  readonly rebuild: (profileId: string | null) => Effect.Effect<{ readonly profiles: number; readonly days: number }, DatabaseUnavailable>
}>()("svc/AnalyticsRollups") {
  static readonly layer = Layer.effect(AnalyticsRollups)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const settings = yield* AnalyticsRollupSettings
      const dirtyRows = decodeRows(DirtyRow)

      const targets = (profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
        sql`
          SELECT DISTINCT u.profile_id, u.day, (u.day::timestamp AT TIME ZONE p.time_zone) AS from_at,
                 ((u.day + 1)::timestamp AT TIME ZONE p.time_zone) AS to_at
          FROM unnest(${profiles}::uuid[], ${days}::date[]) AS u(profile_id, day)
          JOIN profiles p ON p.id = u.profile_id`

      /** The day's conversions with what the rollups count of them. */
      const conversionsOf = sql.literal(`
        SELECT c.id, c.profile_id, t.day, c.conversion_key, COALESCE(c.currency, '') AS currency,
               c.refunded_at IS NULL AS counted, c.counts_as_cash AS cash,
               c.counts_as_cash AND c.is_first_payment IS TRUE AS first_payment,
               CASE WHEN c.counts_as_cash THEN COALESCE(c.value_amount, 0) - COALESCE(c.refund_amount, 0) ELSE 0 END AS net
        FROM t JOIN conversions c ON c.profile_id = t.profile_id AND c.occurred_at >= t.from_at AND c.occurred_at < t.to_at`)

      /**
       * Campaign / ad set / ad rows (decision 0042, migration 0020). `per_conv`: each conversion's
       * credit share per (model, filter value, level, platform id), '' = touches without an id at
       * that level. Entity rows count a conversion once per id it is credited to; the '' row is the
       * remainder: conversions with no credited id at that level and the share no id got (without a
       * filter every conversion weighs 1, credited or not; within a filter, the filter's share).
       */
      const recomputeCampaigns = (profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
        sql`
          INSERT INTO analytics_campaign_days (profile_id, model, filter_dimension, filter_value, level, platform_id, day,
                                               conversion_key, currency, conversions, cash_payments, first_payments,
                                               credited_conversions, credited_revenue, outcome_value)
          WITH t AS (${targets(profiles, days)}),
          conv AS (${conversionsOf}),
          per_conv AS (
            SELECT conv.id, a.model, f.filter_dimension, f.filter_value, l.level, l.platform_id, sum(a.credit_share) AS share
            FROM conv
            JOIN attribution_credits a ON a.conversion_id = conv.id AND a.is_credited
            JOIN touches tch ON tch.id = a.touch_id
            CROSS JOIN LATERAL (VALUES ('campaign', ${sql.literal(DIMENSION_SQL.campaign)}), ('ad_set', ${sql.literal(DIMENSION_SQL.ad_set)}),
                                       ('ad', ${sql.literal(DIMENSION_SQL.ad)})) AS l(level, platform_id)
            CROSS JOIN LATERAL (VALUES ${sql.literal(filterValues)}) AS f(filter_dimension, filter_value)
            WHERE f.filter_dimension = '' OR f.filter_value <> ''
            GROUP BY conv.id, a.model, f.filter_dimension, f.filter_value, l.level, l.platform_id),
          slices AS (
            SELECT id, model, filter_dimension, filter_value, level, sum(share) AS slice_share,
                   sum(share) FILTER (WHERE platform_id <> '') AS entity_share
            FROM per_conv GROUP BY id, model, filter_dimension, filter_value, level),
          unfiltered AS (
            SELECT conv.id, m.model, l.level FROM conv
            CROSS JOIN unnest(${CreditModels}::text[]) AS m(model)
            CROSS JOIN unnest(ARRAY['campaign', 'ad_set', 'ad']) AS l(level)),
          contributions AS (
            SELECT p.id, p.model, p.filter_dimension, p.filter_value, p.level, p.platform_id, p.share, true AS counts
            FROM per_conv p WHERE p.platform_id <> ''
            UNION ALL
            SELECT u.id, u.model, '', '', u.level, '', 1 - COALESCE(s.entity_share, 0), s.entity_share IS NULL
            FROM unfiltered u
            LEFT JOIN slices s ON s.id = u.id AND s.model = u.model AND s.level = u.level AND s.filter_dimension = ''
            UNION ALL
            SELECT s.id, s.model, s.filter_dimension, s.filter_value, s.level, '', s.slice_share - COALESCE(s.entity_share, 0),
                   s.entity_share IS NULL
            FROM slices s WHERE s.filter_dimension <> '')
          SELECT conv.profile_id, x.model, x.filter_dimension, x.filter_value, x.level, x.platform_id, conv.day,
                 conv.conversion_key, conv.currency,
                 count(*) FILTER (WHERE x.counts AND conv.counted),
                 count(*) FILTER (WHERE x.counts AND conv.counted AND conv.cash),
                 count(*) FILTER (WHERE x.counts AND conv.counted AND conv.first_payment),
                 COALESCE(sum(x.share) FILTER (WHERE conv.counted), 0), sum(x.share * conv.net),
                 COALESCE(sum(conv.net) FILTER (WHERE x.counts AND conv.counted AND conv.cash), 0)
          FROM contributions x JOIN conv ON conv.id = x.id
          GROUP BY conv.profile_id, x.model, x.filter_dimension, x.filter_value, x.level, x.platform_id, conv.day,
                   conv.conversion_key, conv.currency`

      /** Replaces the rollup rows of the (profile, day) pairs with what the raw tables say now. */
      const recompute = (profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          for (const table of ["analytics_conversion_days", "analytics_credit_days", "analytics_touch_days", "analytics_campaign_days"]) {
            yield* sql`
              DELETE FROM ${sql(table)} r USING unnest(${profiles}::uuid[], ${days}::date[]) AS u(profile_id, day)
              WHERE r.profile_id = u.profile_id AND r.day = u.day`
          }
          yield* sql`
            INSERT INTO analytics_conversion_days (profile_id, model, day, conversion_key, currency, conversions, cash_payments,
                                                   first_payments, revenue, attributed_conversions, credited_conversions, credited_revenue)
            WITH t AS (${targets(profiles, days)}),
            conv AS (${conversionsOf}),
            shares AS (
              SELECT a.conversion_id, a.model, sum(a.credit_share) AS share
              FROM conv JOIN attribution_credits a ON a.conversion_id = conv.id AND a.is_credited
              GROUP BY a.conversion_id, a.model)
            SELECT conv.profile_id, m.model, conv.day, conv.conversion_key, conv.currency,
                   count(*) FILTER (WHERE conv.counted), count(*) FILTER (WHERE conv.counted AND conv.cash),
                   count(*) FILTER (WHERE conv.counted AND conv.first_payment), sum(conv.net),
                   count(*) FILTER (WHERE conv.counted AND s.share IS NOT NULL),
                   COALESCE(sum(s.share) FILTER (WHERE conv.counted), 0), COALESCE(sum(s.share * conv.net), 0)
            FROM conv CROSS JOIN unnest(${CreditModels}::text[]) AS m(model)
            LEFT JOIN shares s ON s.conversion_id = conv.id AND s.model = m.model
            GROUP BY conv.profile_id, m.model, conv.day, conv.conversion_key, conv.currency`
          yield* sql`
            INSERT INTO analytics_credit_days (profile_id, model, filter_dimension, filter_value, dimension, value, day,
                                               conversion_key, currency, conversions, cash_payments, first_payments,
                                               credited_conversions, credited_revenue)
            WITH t AS (${targets(profiles, days)}),
            conv AS (${conversionsOf})
            SELECT conv.profile_id, a.model, f.filter_dimension, f.filter_value, d.dimension, d.value, conv.day,
                   conv.conversion_key, conv.currency,
                   count(DISTINCT conv.id) FILTER (WHERE conv.counted),
                   count(DISTINCT conv.id) FILTER (WHERE conv.counted AND conv.cash),
                   count(DISTINCT conv.id) FILTER (WHERE conv.counted AND conv.first_payment),
                   COALESCE(sum(a.credit_share) FILTER (WHERE conv.counted), 0), sum(a.credit_share * conv.net)
            FROM conv
            JOIN attribution_credits a ON a.conversion_id = conv.id AND a.is_credited
            JOIN touches tch ON tch.id = a.touch_id
            ${sql.literal(fanOut)}
            WHERE ${sql.literal(fanOutWhere)}
            GROUP BY conv.profile_id, a.model, f.filter_dimension, f.filter_value, d.dimension, d.value, conv.day,
                     conv.conversion_key, conv.currency`
          // Touches that agree on every dimension are counted together first, then fanned out:
          // a day's distinct attribute tuples are far fewer than its touches (bench/README.md).
          yield* sql`
            INSERT INTO analytics_touch_days (profile_id, filter_dimension, filter_value, dimension, value, day, touches)
            WITH t AS (${targets(profiles, days)}),
            g AS (
              SELECT t.profile_id, t.day, ${sql.literal(tupleColumns)}, count(*) AS touches
              FROM t
              JOIN touches tch ON tch.profile_id = t.profile_id AND tch.occurred_at >= t.from_at AND tch.occurred_at < t.to_at
                               AND tch.kind <> 'outcome'
              GROUP BY ${sql.literal(tupleGroupBy)})
            SELECT g.profile_id, f.filter_dimension, f.filter_value, d.dimension, d.value, g.day, sum(g.touches)
            FROM g
            ${sql.literal(tupleFanOut)}
            WHERE ${sql.literal(fanOutWhere)}
            GROUP BY g.profile_id, f.filter_dimension, f.filter_value, d.dimension, d.value, g.day`
          yield* recomputeCampaigns(profiles, days)
        })

      /** Every day a profile has facts or rollups for, as dirty marks (a whole-profile mark, expanded). */
      const markProfile = (profileId: string) =>
        sql`
          INSERT INTO analytics_dirty (profile_id, day)
          SELECT ${profileId}::uuid, x.day FROM (
            SELECT (c.occurred_at AT TIME ZONE p.time_zone)::date AS day FROM conversions c JOIN profiles p ON p.id = c.profile_id
            WHERE c.profile_id = ${profileId}
            UNION
            SELECT (tch.occurred_at AT TIME ZONE p.time_zone)::date FROM touches tch JOIN profiles p ON p.id = tch.profile_id
            WHERE tch.profile_id = ${profileId}
            UNION SELECT day FROM analytics_conversion_days WHERE profile_id = ${profileId}
            UNION SELECT day FROM analytics_credit_days WHERE profile_id = ${profileId}
            UNION SELECT day FROM analytics_touch_days WHERE profile_id = ${profileId}
            UNION SELECT day FROM analytics_campaign_days WHERE profile_id = ${profileId}
          ) x
          RETURNING day`

      const lockProfile = (profileId: string) =>
        sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`analytics_rollup:${profileId}`}, 0))`

      const refreshBatch = sql.withTransaction(Effect.gen(function*() {
        const taken = yield* dirtyRows(sql`
          DELETE FROM analytics_dirty
          WHERE id IN (SELECT id FROM analytics_dirty ORDER BY id LIMIT ${settings.batchSize} FOR UPDATE SKIP LOCKED)
          RETURNING profile_id::text AS profile_id, day::text AS day`)
        if (taken.length === 0) return 0
        const whole = new Set(taken.filter((row) => row.day === null).map((row) => row.profile_id))
        const pairs = new Map<string, { readonly profileId: string; readonly day: string }>()
        for (const row of taken) {
          if (row.day === null || whole.has(row.profile_id)) continue
          pairs.set(`${row.profile_id} ${row.day}`, { profileId: row.profile_id, day: row.day })
        }
        const profiles = [...new Set([...whole, ...[...pairs.values()].map((pair) => pair.profileId)])].sort()
        for (const profileId of profiles) yield* lockProfile(profileId)
        // A whole profile becomes one mark per day, taken by the next batches.
        for (const profileId of whole) yield* markProfile(profileId)
        if (pairs.size > 0) {
          const list = [...pairs.values()]
          // Later marks of the same days go too: the recompute below sees every fact committed
          // before this statement, which covers them. Marks another runner holds are skipped.
          yield* sql`
            DELETE FROM analytics_dirty WHERE id IN (
              SELECT d.id FROM analytics_dirty d
              JOIN unnest(${list.map((pair) => pair.profileId)}::uuid[], ${list.map((pair) => pair.day)}::date[]) AS u(profile_id, day)
                ON d.profile_id = u.profile_id AND d.day = u.day
              FOR UPDATE OF d SKIP LOCKED)`
          yield* recompute(list.map((pair) => pair.profileId), list.map((pair) => pair.day))
          yield* Effect.annotateCurrentSpan({ "svc.analytics.days": list.length })
        }
        return taken.length
      }))

      const refreshPending = Effect.fn("AnalyticsRollups.refreshPending")(function*() {
        return yield* orDatabaseUnavailable(refreshBatch)
      })

      const remaining = Effect.map(
        sql<{ n: number }>`SELECT count(*)::int AS n FROM analytics_dirty`,
        (rows) => rows[0]?.n ?? 0
      )

      const anyDirty = Effect.map(sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM analytics_dirty) AS any`, (rows) => rows[0]?.any === true)

      const drain = Effect.fn("AnalyticsRollups.drain")(function*() {
        let consumed = 0
        while (true) {
          const batch = yield* refreshPending()
          consumed += batch
          if (batch > 0) continue
          // Marks another runner holds: wait for its commit, so a caller reads caught-up rollups.
          if ((yield* orDatabaseUnavailable(remaining)) === 0) break
          yield* Effect.sleep(Duration.millis(20))
        }
        return { days: consumed } satisfies DrainResult
      })

      const rebuild = Effect.fn("AnalyticsRollups.rebuild")(function*(profileId: string | null) {
        const profiles = profileId === null
          ? (yield* orDatabaseUnavailable(sql<{ id: string }>`SELECT id::text AS id FROM profiles ORDER BY id`)).map((row) => row.id)
          : [profileId]
        for (const id of profiles) yield* orDatabaseUnavailable(sql`INSERT INTO analytics_dirty (profile_id, day) VALUES (${id}, NULL)`)
        const { days } = yield* drain()
        return { profiles: profiles.length, days }
      })

      if (settings.enabled) {
        const loop = Effect.gen(function*() {
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            // The idle probe runs untraced: a poll that finds nothing is not worth a span per second.
            const pending = yield* Effect.withTracerEnabled(orDatabaseUnavailable(anyDirty), false).pipe(
              Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.succeed(false))
            )
            const consumed = !pending ? 0 : yield* refreshPending().pipe(
              Effect.catchCause((cause) =>
                Cause.hasInterruptsOnly(cause)
                  ? Effect.failCause(cause)
                  : Effect.as(Effect.logWarning("analytics rollups: a batch failed; retrying after the poll interval", cause), 0))
            )
            yield* consumed >= settings.batchSize ? Effect.yieldNow : Effect.sleep(settings.pollInterval)
          }
        })
        yield* Effect.forkScoped(loop)
      }

      return { refreshPending: refreshPending(), drain: drain(), rebuild }
    })
  )
}
