/**
 * The analytics rollup job (decision 0041): keeps `analytics_*_days` equal to what the raw facts
 * say, with a lag of about the settle delay plus one poll interval. Triggers on the fact tables
 * (migrations/0019) append the (profile, day) pairs a write touched to `analytics_dirty` in the
 * writer's transaction; this job takes a batch of them (`FOR UPDATE SKIP LOCKED`: runners share
 * the work), recomputes those days from the raw tables and deletes the batch, all in one
 * transaction: a runner that dies leaves the batch to the next one, and recomputing a day twice
 * writes the same rows (idempotent). A per-profile advisory lock keeps two runners from
 * rewriting one profile's days at once. `rebuild` marks every day a profile has facts or rollups
 * for and drains: the operator's full recompute (`svc analytics rebuild`).
 */
import { Cause, Context, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { CreditModels } from "../../../schema/events.ts"
import { byKeySettings } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"
import {
  buildRollupRows,
  type CampaignDayRow,
  type ConversionDayRow,
  type ConversionFact,
  type CreditDayRow,
  type CreditFact,
  ROLLUP_DIMENSIONS,
  type RollupRows,
  type SliceMetrics,
  type TouchDayRow,
  type TouchFact,
  type TouchTuple
} from "./build.ts"
import { CONVERSION_MEASURES_SQL, dimensionColumns } from "../sql/fragments.ts"

/**
 * The refresh's claim of settled marks (see `refreshBatch`), as a statement:
 * test/api/queue-claim-plans.test.ts checks its generic plan's cost at growing backlogs.
 */
export const takeStatement = (sql: SqlClient, settledMillis: number, batchSize: number) =>
  sql`
    DELETE FROM analytics_dirty
    -- The taken ids as one array: each is then one probe of the key, whatever the table's size
    -- (as a join the plan is picked on guesses of how many rows it holds).
    WHERE id = ANY(ARRAY(
      SELECT id FROM analytics_dirty WHERE marked_at <= now() - make_interval(secs => ${settledMillis / 1000})
      -- Through analytics_dirty_take (migration 0057). The limit is written into the text, not
      -- bound: a generic plan costs a bound LIMIT as a tenth of the rows it reads, so its cost
      -- would grow with the backlog (issue 34).
      ORDER BY day IS NULL DESC, id LIMIT ${sql.literal(String(Math.max(0, Math.floor(batchSize))))} FOR UPDATE SKIP LOCKED))
    RETURNING profile_id::text AS profile_id, day::text AS day`

/** The (profile, day) pairs with the day's bounds in the profile's time zone. */
const dayTargets = (sql: SqlClient, profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
  sql`
    SELECT DISTINCT u.profile_id, u.day, (u.day::timestamp AT TIME ZONE p.time_zone) AS from_at,
           ((u.day + 1)::timestamp AT TIME ZONE p.time_zone) AS to_at
    FROM unnest(${profiles}::uuid[], ${days}::date[]) AS u(profile_id, day)
    JOIN profiles p ON p.id = u.profile_id`

// LATERAL with OFFSET 0: one index range scan per (profile, day); a join lets the planner
// pick a scan of the profile's whole history.
const DAY_CONVERSIONS = `
  CROSS JOIN LATERAL (SELECT * FROM conversions c WHERE c.profile_id = t.profile_id AND c.occurred_at >= t.from_at
                      AND c.occurred_at < t.to_at OFFSET 0) c`

// The same fence for credits: statistics of attribution_credits are stale right after a replay
// grew it, and a hash join over all of it was the planner's pick then. By the whole key, its month
// included (decision 0145): each probe reads the conversion's month only.
const DAY_CREDITS = `
  CROSS JOIN LATERAL (SELECT a.conversion_id, a.model, a.touch_id, a.touch_at, a.credit_share FROM attribution_credits a
                      WHERE a.conversion_id = c.id AND a.profile_id = c.profile_id AND a.converted_at = c.occurred_at
                        AND a.is_credited OFFSET 0) a`

/**
 * The credit rows of the days' conversions, as a recompute reads them: test/api/partitions.test.ts
 * checks it reads only the months of those days.
 */
export const creditFactsStatement = (sql: SqlClient, profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
  sql`
    WITH t AS (${dayTargets(sql, profiles, days)})
    SELECT a.conversion_id::text, a.model, a.touch_id::text, a.credit_share::text
    FROM t ${sql.literal(DAY_CONVERSIONS)} ${sql.literal(DAY_CREDITS)}`

/**
 * The touches the days' credit rows name, each once, with their dimensions: each probed by its
 * whole key (the row's `touch_at` names its month, migration 0075), so the read touches only the
 * months those touches lie in; test/api/partitions.test.ts checks it.
 */
export const creditedTouchesStatement = (sql: SqlClient, profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
  sql`
    WITH t AS (${dayTargets(sql, profiles, days)})
    SELECT tch.id::text, ${sql.literal(dimensionColumns)}
    FROM (SELECT DISTINCT a.touch_id, c.profile_id, a.touch_at FROM t ${sql.literal(DAY_CONVERSIONS)} ${sql.literal(DAY_CREDITS)}) k
    CROSS JOIN LATERAL (SELECT * FROM touches tch WHERE tch.id = k.touch_id AND tch.profile_id = k.profile_id
                        AND tch.occurred_at = k.touch_at OFFSET 0) tch`

export interface AnalyticsRollupSettingsShape {
  /** Run the background fiber. Off: rollups change only when `drain` is called. */
  readonly enabled: boolean
  readonly pollInterval: Duration.Duration
  /**
   * The background fiber leaves a day alone until its oldest mark is this old. A recompute covers
   * the whole day and every mark made before it, so a day written to continuously (today, under
   * steady ingest) is recomputed about once per delay rather than on every poll: without it the
   * job re-reads an ever larger day every second. `drain` and `rebuild` do not wait.
   */
  readonly settleDelay: Duration.Duration
  /** Dirty marks taken per transaction. */
  readonly batchSize: number
}

export const defaultRollupSettings: AnalyticsRollupSettingsShape = {
  enabled: true,
  pollInterval: Duration.seconds(1),
  settleDelay: Duration.seconds(3),
  batchSize: 200
}

export const AnalyticsRollupSettings = Context.Reference<AnalyticsRollupSettingsShape>("svc/AnalyticsRollupSettings", {
  defaultValue: () => defaultRollupSettings
})

/** Positions: profile_id, day, then one per dimension. */
const tupleGroupBy = Array.from({ length: ROLLUP_DIMENSIONS.length + 2 }, (_, i) => String(i + 1)).join(", ")
/** (profile, day) pairs read and written per round: bounds memory on busy profiles. */
const DAYS_PER_ROUND = 8

const text = (value: unknown) => typeof value === "string" ? value : String(value)
const textsFrom = (row: ReadonlyArray<unknown>, from: number) => row.slice(from).map(text)

/**
 * A rollup table's columns: name → its SQL type and its value in a row, in the table's column
 * order. The names are keys, not strings: a string literal that names a table here would count,
 * for the table-ownership check, as a table the interpolated INSERT below may write.
 */
type Columns<R> = Readonly<Record<string, readonly [type: string, value: (row: R) => string | number]>>

/** The tables the job writes; the only names `insertRows` and the recompute's DELETE take. */
type RollupTable = "analytics_conversion_days" | "analytics_credit_days" | "analytics_touch_days" | "analytics_campaign_days"
const ROLLUP_TABLES: ReadonlyArray<RollupTable> = [
  "analytics_conversion_days",
  "analytics_credit_days",
  "analytics_touch_days",
  "analytics_campaign_days"
]

/** What conversion-day rows share with credit-day and campaign-day rows. */
type SharedMetrics = Omit<SliceMetrics, "outcomeValue">

const groupColumns = <R extends SharedMetrics>(): Columns<R> => ({
  profile_id: ["uuid", (r) => r.profileId],
  model: ["text", (r) => r.model],
  day: ["date", (r) => r.day],
  conversion_key: ["text", (r) => r.conversionKey],
  currency: ["text", (r) => r.currency]
})
const countColumns = <R extends SharedMetrics>(): Columns<R> => ({
  conversions: ["int", (r) => r.conversions],
  cash_payments: ["int", (r) => r.cashPayments],
  first_payments: ["int", (r) => r.firstPayments],
  credited_conversions: ["numeric", (r) => r.creditedConversions],
  credited_revenue: ["numeric", (r) => r.creditedRevenue]
})
const CONVERSION_DAY_COLUMNS: Columns<ConversionDayRow> = {
  ...groupColumns<ConversionDayRow>(),
  ...countColumns<ConversionDayRow>(),
  revenue: ["numeric", (r) => r.revenue],
  attributed_conversions: ["int", (r) => r.attributedConversions]
}
const CREDIT_DAY_COLUMNS: Columns<CreditDayRow> = {
  ...groupColumns<CreditDayRow>(),
  dimension: ["text", (r) => r.dimension],
  value: ["text", (r) => r.value],
  ...countColumns<CreditDayRow>()
}
const CAMPAIGN_DAY_COLUMNS: Columns<CampaignDayRow> = {
  ...groupColumns<CampaignDayRow>(),
  level: ["text", (r) => r.level],
  platform_id: ["text", (r) => r.platformId],
  ...countColumns<CampaignDayRow>(),
  outcome_value: ["numeric", (r) => r.outcomeValue]
}
const TOUCH_DAY_COLUMNS: Columns<TouchDayRow> = {
  profile_id: ["uuid", (r) => r.profileId],
  day: ["date", (r) => r.day],
  dimension: ["text", (r) => r.dimension],
  value: ["text", (r) => r.value],
  touches: ["int", (r) => r.touches]
}

const DirtyRow = Schema.Struct({ profile_id: Schema.String, day: Schema.NullOr(Schema.String) })
const CountRow = Schema.Struct({ n: Schema.Number })
const AnyRow = Schema.Struct({ any: Schema.Boolean })
const IdRow = Schema.Struct({ id: Schema.String })

export interface DrainResult {
  /** (profile, day) pairs recomputed. */
  readonly days: number
}

export class AnalyticsRollups extends Context.Service<AnalyticsRollups, {
  /**
   * Recomputes one batch of dirty days whose oldest mark is at least `settledFor` old (default:
   * any); answers how many dirty marks it took.
   */
  readonly refreshPending: (settledFor?: Duration.Duration) => Effect.Effect<number, DatabaseUnavailable>
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
      const countRows = decodeRows(CountRow)
      const anyRows = decodeRows(AnyRow)
      const idRows = decodeRows(IdRow)

      /** The facts of the (profile, day) pairs: their conversions, credits, credited touches and touch tuples. */
      const readFacts = (profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const conversions = yield* sql`
            WITH t AS (${dayTargets(sql, profiles, days)})
            SELECT c.id::text, c.profile_id::text, t.day::text, c.conversion_key, COALESCE(c.currency, ''),
                   m.counted, m.cash, m.first_payment, m.net::text
            FROM t ${sql.literal(DAY_CONVERSIONS)} CROSS JOIN LATERAL (SELECT ${sql.literal(CONVERSION_MEASURES_SQL)}) m`.values
          const credits = yield* creditFactsStatement(sql, profiles, days).values
          const touches = yield* creditedTouchesStatement(sql, profiles, days).values
          const touchTuples = yield* sql`
            WITH t AS (${dayTargets(sql, profiles, days)})
            SELECT t.profile_id::text, t.day::text, ${sql.literal(dimensionColumns)}, count(*)::int
            FROM t
            CROSS JOIN LATERAL (SELECT * FROM touches tch WHERE tch.profile_id = t.profile_id AND tch.occurred_at >= t.from_at
                                AND tch.occurred_at < t.to_at AND tch.kind <> 'outcome' OFFSET 0) tch
            GROUP BY ${sql.literal(tupleGroupBy)}`.values
          return {
            models: CreditModels,
            conversions: conversions.map((row): ConversionFact => ({
              id: text(row[0]), profileId: text(row[1]), day: text(row[2]), conversionKey: text(row[3]), currency: text(row[4]),
              counted: row[5] === true, cash: row[6] === true, firstPayment: row[7] === true, net: text(row[8])
            })),
            credits: credits.map((row): CreditFact => ({
              conversionId: text(row[0]), model: text(row[1]), touchId: text(row[2]), share: text(row[3])
            })),
            touches: touches.map((row): TouchFact => ({ id: text(row[0]), values: textsFrom(row, 1) })),
            touchTuples: touchTuples.map((row): TouchTuple => ({
              profileId: text(row[0]), day: text(row[1]), values: textsFrom(row, 2).slice(0, -1), touches: Number(row[row.length - 1])
            }))
          }
        })

      /** One `INSERT … SELECT FROM unnest(...)` of `rows`, one array per column. */
      const insertRows = <R>(table: RollupTable, rows: ReadonlyArray<R>, columns: Columns<R>) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO ${sql(table)} (${sql.literal(Object.keys(columns).join(", "))})
          SELECT * FROM unnest(${sql.csv(Object.values(columns).map(([type, value]) => sql`${rows.map(value)}::${sql.literal(type)}[]`))})`)

      const writeRows = (rows: RollupRows) =>
        Effect.gen(function*() {
          yield* insertRows("analytics_conversion_days", rows.conversionDays, CONVERSION_DAY_COLUMNS)
          yield* insertRows("analytics_credit_days", rows.creditDays, CREDIT_DAY_COLUMNS)
          yield* insertRows("analytics_campaign_days", rows.campaignDays, CAMPAIGN_DAY_COLUMNS)
          yield* insertRows("analytics_touch_days", rows.touchDays, TOUCH_DAY_COLUMNS)
        })

      /** Replaces the rollup rows of the (profile, day) pairs with what the raw tables say now. */
      const recompute = (profiles: ReadonlyArray<string>, days: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          for (const table of ROLLUP_TABLES) {
            yield* sql`
              DELETE FROM ${sql(table)} r USING unnest(${profiles}::uuid[], ${days}::date[]) AS u(profile_id, day)
              WHERE r.profile_id = u.profile_id AND r.day = u.day`
          }
          for (let from = 0; from < profiles.length; from += DAYS_PER_ROUND) {
            const facts = yield* readFacts(profiles.slice(from, from + DAYS_PER_ROUND), days.slice(from, from + DAYS_PER_ROUND))
            yield* writeRows(buildRollupRows(facts))
          }
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

      /** One batch of the marks at least `settledMillis` old (and the later marks of their days). */
      const refreshBatch = (settledMillis: number) => sql.withTransaction(Effect.gen(function*() {
        // These plans are index probes; compiling them (JIT) costs more than running them.
        // The take probes by key whatever the statistics (decision 0151).
        yield* byKeySettings(sql)
        const taken = yield* dirtyRows(takeStatement(sql, settledMillis, settings.batchSize))
        if (taken.length === 0) return 0
        // Scans again for the rebuild that follows: a whole profile's history is read whole.
        yield* sql`SET LOCAL enable_seqscan TO DEFAULT`
        const whole = new Set(taken.filter((row) => row.day === null).map((row) => row.profile_id))
        const pairs = new Map<string, { readonly profileId: string; readonly day: string }>()
        for (const row of taken) {
          if (row.day === null || whole.has(row.profile_id)) continue
          pairs.set(`${row.profile_id} ${row.day}`, { profileId: row.profile_id, day: row.day })
        }
        const profiles = [...new Set([...whole, ...[...pairs.values()].map((pair) => pair.profileId)])].sort()
        for (const profileId of profiles) yield* lockProfile(profileId)
        // A whole profile becomes one mark per day, taken by the next batches; its older day marks
        // are part of that (whole marks are taken first, so no day is recomputed twice).
        for (const profileId of whole) {
          yield* sql`
            DELETE FROM analytics_dirty WHERE id IN (
              SELECT id FROM analytics_dirty WHERE profile_id = ${profileId} AND day IS NOT NULL FOR UPDATE SKIP LOCKED)`
          yield* markProfile(profileId)
        }
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

      const refreshPending = Effect.fn("AnalyticsRollups.refreshPending")(function*(settledFor: Duration.Duration = Duration.zero) {
        return yield* refreshBatch(Duration.toMillis(settledFor))
      })

      const remaining = Effect.map(countRows(sql`SELECT count(*)::int AS n FROM analytics_dirty`), (rows) => rows[0]?.n ?? 0)

      const anyDirty = Effect.map(anyRows(sql`SELECT EXISTS (SELECT 1 FROM analytics_dirty) AS any`), (rows) => rows[0]?.any === true)

      const drain = Effect.fn("AnalyticsRollups.drain")(function*() {
        let consumed = 0
        while (true) {
          const batch = yield* refreshPending()
          consumed += batch
          if (batch > 0) continue
          // Marks another runner holds: wait for its commit, so a caller reads caught-up rollups.
          if ((yield* remaining) === 0) break
          yield* Effect.sleep(Duration.millis(20))
        }
        return { days: consumed } satisfies DrainResult
      })

      const rebuild = Effect.fn("AnalyticsRollups.rebuild")(function*(profileId: string | null) {
        const profiles = profileId === null
          ? (yield* idRows(sql`SELECT id::text AS id FROM profiles ORDER BY id`)).map((row) => row.id)
          : [profileId]
        for (const id of profiles) yield* sql`INSERT INTO analytics_dirty (profile_id, day) VALUES (${id}, NULL)`
        const { days } = yield* drain()
        return { profiles: profiles.length, days }
      })

      const service = atDatabaseBoundary({ refreshPending, drain: drain(), rebuild })
      // The idle probe is this file's own: the loop reads it through the same boundary.
      const probe = atDatabaseBoundary({ anyDirty })

      if (settings.enabled) {
        const loop = Effect.gen(function*() {
          yield* Effect.sleep(settings.pollInterval)
          while (true) {
            // The idle probe runs untraced: a poll that finds nothing is not worth a span per second.
            const pending = yield* Effect.withTracerEnabled(probe.anyDirty, false).pipe(
              Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Effect.succeed(false))
            )
            const consumed = !pending ? 0 : yield* service.refreshPending(settings.settleDelay).pipe(
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

      return service
    })
  )
}
