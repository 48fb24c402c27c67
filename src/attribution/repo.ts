/**
 * What crediting reads (src/attribution/engine.ts, the worker): conversions waiting for credit or
 * to replay, with their definition's window and eligibility, the touches each may credit, and a
 * profile's `svc_model` path steps. Decisions 0030 and 0035 (replay performance: statistics
 * aggregated in SQL). The writes go to their owners: credit rows to the credits repository,
 * the credit queue (`credit_queue`, decision 0152) to the conversions repository.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import { DEFAULT_LOOKBACK_WINDOW_DAYS } from "../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { byKey, byKeySettings } from "../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeRows, orDatabaseUnavailable } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"
import { TOUCH_KINDS } from "./models/types.ts"
import { QueuedConversion } from "./queued-conversion.ts"

const creditTargetColumns = (sql: SqlClient) =>
  sql`c.id::text AS id, c.profile_id::text AS profile_id, c.customer_id::text AS customer_id,
        floor(extract(epoch FROM c.occurred_at) * 1000)::float8 AS occurred_ms,
        COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS window_days,
        COALESCE(d.attribution_eligible, c.attribution_eligible) AS eligible,
        ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at`

/**
 * The crediting claim (see `lockPending`), as a statement: test/api/queue-claim-plans.test.ts
 * checks its generic plan's cost at growing backlogs.
 */
export const lockPendingStatement = (sql: SqlClient, limit: number, only?: QueuedConversion) =>
  sql`
    SELECT ${creditTargetColumns(sql)}, true AS queued
    FROM credit_queue q
    -- By whole key: the queue names each conversion's month.
    JOIN conversions c ON c.id = q.conversion_id AND c.profile_id = q.profile_id AND c.occurred_at = q.occurred_at
    LEFT JOIN conversion_definitions d ON d.id = c.definition_id AND d.profile_id = c.profile_id
    -- One conversion by its queue row's whole key: by its id alone, no index of the queue answers it.
    ${only === undefined ? sql`` : sql`WHERE q.profile_id = ${only.profile_id} AND q.conversion_id = ${only.id} AND q.occurred_at = ${only.occurred_at}::timestamptz`}
    ORDER BY q.created_at, q.conversion_id
    -- Written into the text, not bound: a generic plan costs a bound LIMIT as a tenth of the rows
    -- it reads, so its cost would grow with the backlog (issue 34).
    LIMIT ${sql.literal(String(Math.max(0, Math.floor(limit))))}
    -- The conversion too: a replay holds the conversions it credits (and only those of their queue
    -- rows that existed when it locked them); crediting passes them by. A requeue meets the locked
    -- queue row and waits for this crediting to end (decision 0152).
    FOR UPDATE OF q, c SKIP LOCKED`

/** A conversion about to be credited, with what its definition says now. */
export const CreditTarget = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  customer_id: Schema.NullOr(Schema.String),
  /** Epoch milliseconds (floored). */
  occurred_ms: Schema.Number,
  /** The definition's window; 30 days for a conversion without a definition. */
  window_days: Schema.Int,
  /** The definition's `attribution_eligible` (the conversion's own flag without one). */
  eligible: Schema.Boolean,
  /** (occurred_at, id) key of the conversion, for a replay's batches. */
  occurred_at: Schema.String,
  /** Its row in `credit_queue` is locked by this crediting, to be taken out when it is settled. */
  queued: Schema.Boolean
})
export type CreditTarget = typeof CreditTarget.Type

/**
 * One partition of a replay: its number, its conversions and, pairwise, their `occurred_at` (ISO,
 * microseconds): with the profile, each conversion's whole key, so a lock probes its month only.
 */
export const ReplayPart = Schema.Struct({ part: Schema.Int, ids: Schema.Array(Schema.String), times: Schema.Array(Schema.String) })
export type ReplayPart = typeof ReplayPart.Type

/** One touch a conversion may credit (`candidateTouches`). */
export const CandidateTouch = Schema.Struct({
  conversion_id: Schema.String,
  id: Schema.String,
  kind: Schema.Literals(TOUCH_KINDS),
  channel: Schema.String,
  occurred_ms: Schema.Number,
  /** The exact time (ISO, microseconds): a credit row's `touch_at` (migration 0075). */
  occurred_at: Schema.String
})
export type CandidateTouch = typeof CandidateTouch.Type

/** A conversion whose candidate touches are read (`candidateTouches`): what crediting knows of it. */
export interface CandidateConversion {
  readonly id: string
  readonly profile_id: string
  /** No customer: no candidates. */
  readonly customer_id: string | null
  /** Its `occurred_at` (ISO text, exact). */
  readonly occurred_at: string
  readonly window_days: number
}

/**
 * A customer's touches from `from` to `to` (both included), as (id, kind, channel, occurred_at): its
 * own and those of the anonymous ids bound to it, `outcome` touches left out. The reads of a
 * conversion's path, crediting's and the statistics', are this one subquery (see the statement
 * below for why each part is written so).
 */
const customerTouchesWithin = (
  sql: SqlClient,
  { customer, from, profile, to }: {
    readonly customer: Statement.Fragment
    readonly profile: Statement.Fragment
    readonly from: Statement.Fragment
    readonly to: Statement.Fragment
  }
) =>
  sql`
      SELECT t.id, t.kind, t.channel, t.occurred_at FROM touches t
      WHERE t.customer_id = ${customer} AND t.profile_id IS NOT DISTINCT FROM ${profile} AND t.kind <> 'outcome'
        AND t.occurred_at >= ${from} AND t.occurred_at <= ${to}
      UNION
      SELECT a.id, a.kind, a.channel, a.occurred_at FROM customer_identifiers ci
      CROSS JOIN LATERAL (
        SELECT t.id, t.kind, t.channel, t.occurred_at FROM touches t
        WHERE t.anonymous_id = ci.value AND t.profile_id IS NOT DISTINCT FROM ci.profile_id AND t.kind <> 'outcome'
          AND t.occurred_at >= ${from} AND t.occurred_at <= ${to}
        OFFSET 0) a
      -- num_nulls: "removed_at IS NULL", in a form the planner does not match to a partial index.
      WHERE ci.customer_id = ${customer} AND ci.profile_id IS NOT DISTINCT FROM ${profile}
        AND ci.kind = 'anonymous_id' AND num_nulls(ci.removed_at) = 1`

/**
 * The touches each conversion may credit (`candidateTouches`): its customer's, and those of the
 * anonymous ids bound to the customer, in its window. Every read is a probe by construction, as a
 * plan kept from empty tables (no ANALYZE here) runs it (test/api/visitor-reads-plan.test.ts):
 * - the customer's touches through `touches_customer`: the profile is a filter (`IS NOT DISTINCT
 *   FROM`), so (profile_id, occurred_at) cannot be walked over the whole window instead;
 * - the customer's anonymous ids through `customer_identifiers_customer`: the profile is a filter
 *   and "not removed" is written so that it does not imply the predicate of
 *   `customer_identifiers_value`; a plan took that index by (profile, kind), or a bitmap of every
 *   live identifier, and read all of the profile's visitors;
 * - each anonymous id's touches through `touches_visitor`, led by the id (migration 0080), the
 *   profile again a filter: a lateral subquery per identifier (OFFSET 0 keeps it one). A join had
 *   matched the id as a filter over every anonymous touch of the profile in the window, and with
 *   the profile as an equality a plan could walk (profile_id, occurred_at) instead.
 * The conversions' profile, customer and time come with them: a join back to `conversions` by id
 * alone would probe every month's partition once per conversion.
 */
export const candidateTouchesStatement = (sql: SqlClient, conversions: ReadonlyArray<CandidateConversion>) =>
  sql`
    SELECT x.conversion_id::text AS conversion_id, t.id::text AS id, t.kind, t.channel,
           floor(extract(epoch FROM t.occurred_at) * 1000)::float8 AS occurred_ms, ${isoTimestamp(sql, "t.occurred_at")} AS occurred_at
    FROM unnest(${conversions.map((c) => c.id)}::uuid[], ${conversions.map((c) => c.profile_id)}::uuid[],
                ${conversions.map((c) => c.customer_id)}::uuid[], ${conversions.map((c) => c.occurred_at)}::timestamptz[],
                ${conversions.map((c) => c.window_days)}::int[])
           AS x(conversion_id, profile_id, customer_id, occurred_at, window_days)
    CROSS JOIN LATERAL (${
    customerTouchesWithin(sql, {
      customer: sql`x.customer_id`,
      profile: sql`x.profile_id`,
      from: sql`x.occurred_at - make_interval(days => x.window_days) - interval '1 millisecond'`,
      to: sql`x.occurred_at + interval '1 millisecond'`
    })
  }) t
    WHERE x.customer_id IS NOT NULL`

/** One group of path steps (`pathSteps`): how many touches of `channel` follow `previous` (null: first of a path). */
export const StepRow = Schema.Struct({
  converted: Schema.Boolean,
  previous: Schema.NullOr(Schema.String),
  channel: Schema.String,
  /** The step is the last of its path. */
  last: Schema.Boolean,
  n: Schema.Int
})
export type StepRow = typeof StepRow.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class AttributionRepo extends Context.Service<AttributionRepo, {
  /**
   * Locks up to `limit` conversions not yet credited (oldest first), skipping rows another runner
   * holds; with `only`, that conversion if it still waits.
   */
  readonly lockPending: (limit: number, only?: QueuedConversion) => Repo<ReadonlyArray<CreditTarget>>
  /** The keys of up to `limit` conversions waiting for credit, oldest first (no lock). */
  readonly pending: (limit: number) => Repo<ReadonlyArray<QueuedConversion>>
  /** Whether any conversion waits for credit (cheap: `credit_queue` holds only those). */
  readonly anyPending: Repo<boolean>
  /**
   * How a replay splits the profile (decision 0131): its conversions in `parts` partitions by a
   * hash of their customer (of their own id without one), so a customer's conversions share a
   * part; the same split for the same `parts` on every attempt. Ids in code-unit order.
   */
  readonly replayParts: (profileId: string, parts: number) => Repo<ReadonlyArray<ReplayPart>>
  /**
   * The profile's conversions among `ids` (at `times`, pairwise: the whole key), locked (waiting for
   * other holders), in id order.
   */
  readonly lockReplayTargets: (profileId: string, ids: ReadonlyArray<string>, times: ReadonlyArray<string>) => Repo<ReadonlyArray<CreditTarget>>
  /**
   * The crediting lock of `profileIds`, shared, until the transaction ends (migration 0066): held
   * from before crediting reads touches until its rows commit, so a delete of conversions or touches
   * (whose cascade takes it exclusively) waits for the rows it must remove.
   */
  readonly lockCrediting: (profileIds: ReadonlyArray<string>) => Repo<void>
  /**
   * Settings for a crediting transaction (`byKeySettings`), until it ends.
   */
  readonly tuneTransaction: Repo<void>
  readonly countConversions: (profileId: string) => Repo<number>
  /**
   * The touches a conversion may credit: those of its customer within its lookback window (1 ms
   * of slack each side: the models decide the exact bounds), carrying the customer or one of the
   * anonymous ids bound to it (`customer_identifiers` of kind `anonymous_id`); never `outcome`
   * touches. One statement for a batch of conversions. Used by the crediting engine and by the
   * ad-referral preview, so both see the same candidates. The caller names each conversion's
   * profile, customer and time, so the conversions themselves are not read again.
   */
  readonly candidateTouches: (conversions: ReadonlyArray<CandidateConversion>) => Repo<ReadonlyArray<CandidateTouch>>
  /**
   * The profile's `svc_model` path steps, counted in SQL (decision 0035): what `statsFromSteps`
   * (engine.ts) turns into the statistics `buildPathStats` makes from the channel paths of
   * decision 0030, without shipping the paths.
   *
   * Identities: a customer (its touches and those of the anonymous ids bound to it), or an
   * anonymous id bound to no customer. Converting paths: one per attribution-eligible
   * conversion, the channels of its customer's touches in its window. Non-converting paths: one
   * per identity with no such conversion, its touches in the 30 days before its last touch.
   * `outcome` touches are never on a path. Paths are ordered by (occurred_at, id).
   *
   * Each path touch becomes a step: its channel, the channel before it on the path (null for
   * the first), and whether it is the last. Only the steps that count are kept (a first step, a
   * change of channel, a last step) and grouped: a few hundred rows whatever the profile's size.
   */
  readonly pathSteps: (profileId: string) => Repo<ReadonlyArray<StepRow>>
  /** Runs `effect` in one transaction (the crediting statements join it); no retry: the worker decides. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/AttributionRepo") {
  static readonly layer = Layer.effect(AttributionRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const targetRows = decodeRows(CreditTarget)
      const touchRows = decodeRows(CandidateTouch)
      const stepRows = decodeRows(StepRow)
      const countRows = decodeRows(Schema.Struct({ n: Schema.Int }))
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const partRows = decodeRows(ReplayPart)

      const targetColumns = creditTargetColumns(sql)

      const lockPending = (limit: number, only?: QueuedConversion) => targetRows(lockPendingStatement(sql, limit, only))

      const pending = (limit: number) =>
        decodeRows(QueuedConversion)(sql`
          -- The time as PostgreSQL writes it: exact, and also for a time no ISO rendering has (a
          -- conversion that cannot be credited may be one).
          SELECT conversion_id::text AS id, profile_id::text AS profile_id, occurred_at::text AS occurred_at
          FROM credit_queue ORDER BY created_at, conversion_id LIMIT ${limit}`)

      const anyPending = Effect.map(
        sql`SELECT 1 AS one FROM credit_queue LIMIT 1`,
        (rows) => rows.length > 0
      )

      const replayParts = (profileId: string, parts: number) =>
        partRows(sql`
          SELECT x.part, array_agg(x.id ORDER BY x.id) AS ids, array_agg(x.at ORDER BY x.id) AS times FROM (
            SELECT (hashtext(COALESCE(c.customer_id, c.id)::text) & 2147483647) % ${Math.max(1, Math.floor(parts))}::int AS part,
                   c.id::text AS id, ${isoTimestamp(sql, "c.occurred_at")} AS at
            FROM conversions c WHERE c.profile_id = ${profileId}
          ) x
          GROUP BY x.part ORDER BY x.part`)

      // By whole key: an id alone would probe every month's partition of `conversions`.
      // The conversions first, then those of them waiting in the queue (the same order, so no deadlock
      // with another replay): the queue rows this replay settles are the ones it locked here; a
      // conversion queued after (its row inserted, not met here) stays queued.
      const lockReplayTargets = (profileId: string, ids: ReadonlyArray<string>, times: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const targets = yield* targetRows(sql`
            SELECT ${targetColumns}, false AS queued
            FROM unnest(${ids}::uuid[], ${times}::timestamptz[]) AS k(id, at)
            JOIN conversions c ON c.id = k.id AND c.profile_id = ${profileId} AND c.occurred_at = k.at
            LEFT JOIN conversion_definitions d ON d.id = c.definition_id AND d.profile_id = c.profile_id
            ORDER BY c.id
            FOR UPDATE OF c`)
          const queued = new Set((yield* idRows(sql`
            SELECT q.conversion_id::text AS id
            FROM unnest(${ids}::uuid[], ${times}::timestamptz[]) AS k(id, at)
            JOIN credit_queue q ON q.profile_id = ${profileId} AND q.conversion_id = k.id AND q.occurred_at = k.at
            ORDER BY q.conversion_id
            FOR UPDATE OF q`)).map((row) => row.id))
          return queued.size === 0 ? targets : targets.map((target) => queued.has(target.id) ? { ...target, queued: true } : target)
        })

      const lockCrediting = (profileIds: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          SELECT pg_advisory_xact_lock_shared(attribution_credit_lock_key(p))
          FROM (SELECT DISTINCT p FROM unnest(${[...new Set(profileIds)]}::uuid[]) AS u(p) ORDER BY p) x`)

      // Every statement of crediting reads by key (the claim through the queue's order, conversions and
      // credit rows by whole key, touches by customer): `byKeySettings`, decision 0151.
      const tuneTransaction = Effect.asVoid(byKeySettings(sql))
      // The statistics read the profile's touches whole: scans stay allowed; JIT costs more than it saves.
      const jitOff = Effect.asVoid(sql`SELECT set_config('jit', 'off', true)`)

      const countConversions = (profileId: string) =>
        Effect.map(countRows(sql`SELECT count(*)::int AS n FROM conversions WHERE profile_id = ${profileId}`), (rows) => rows[0]?.n ?? 0)

      // Under `byKeySettings` (in a savepoint inside crediting's transaction, which has them): the
      // ad-referral preview reads it outside any, where a scan could otherwise be planned.
      const candidateTouches = (conversions: ReadonlyArray<CandidateConversion>) =>
        byKey(sql, touchRows(candidateTouchesStatement(sql, conversions)))

      const pathSteps = (profileId: string) =>
        // JIT compilation of this large plan costs more than it saves (about 0.8 s at 1M touches).
        sql.withTransaction(Effect.andThen(jitOff, stepRows(sql`
            WITH conv AS MATERIALIZED (
              SELECT c.id, c.customer_id, c.occurred_at, COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS days
              FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id AND d.profile_id = c.profile_id
              WHERE c.profile_id = ${profileId} AND c.customer_id IS NOT NULL
                AND COALESCE(d.attribution_eligible, c.attribution_eligible)
            ),
            converted_customers AS (SELECT DISTINCT customer_id FROM conv),
            converting AS (
              SELECT conv.id AS path, t.occurred_at, t.id, t.channel
              FROM conv CROSS JOIN LATERAL (${
    // Each conversion's path read as crediting reads it, within its exact window.
    customerTouchesWithin(sql, {
      customer: sql`conv.customer_id`,
      profile: sql`${profileId}::uuid`,
      from: sql`conv.occurred_at - make_interval(days => conv.days)`,
      to: sql`conv.occurred_at`
    })
  }) t
            ),
            -- Every (touch, identity) pair once: the customers its anonymous id is bound to, and its
            -- own customer; an unbound anonymous id is its own identity (cust zero, anon 'a:' || id).
            identified AS (
              SELECT t.id, t.occurred_at, t.channel,
                     COALESCE(u.customer_id, '00000000-0000-0000-0000-000000000000'::uuid) AS cust,
                     CASE WHEN u.customer_id IS NULL THEN 'a:' || t.anonymous_id ELSE '' END AS anon
              FROM touches t
              LEFT JOIN (
                SELECT ci.value, array_agg(DISTINCT ci.customer_id) AS customers FROM customer_identifiers ci
                WHERE ci.profile_id = ${profileId} AND ci.kind = 'anonymous_id' AND ci.removed_at IS NULL
                GROUP BY ci.value
              ) b ON b.value = t.anonymous_id
              CROSS JOIN LATERAL unnest(CASE
                WHEN b.customers IS NULL THEN ARRAY[t.customer_id]
                WHEN t.customer_id IS NULL OR t.customer_id = ANY (b.customers) THEN b.customers
                ELSE b.customers || t.customer_id END) AS u(customer_id)
              WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome' AND (t.customer_id IS NOT NULL OR t.anonymous_id IS NOT NULL)
            ),
            -- Each identity's touches newest first, in one sort: the newest touch's time, and for each
            -- touch the one before it in path order (the next one here) and whether it is the newest.
            marked AS (
              SELECT i.cust, i.anon, i.channel, i.occurred_at,
                     first_value(i.occurred_at) OVER w AS last_at,
                     lead(i.channel) OVER w AS previous, lead(i.occurred_at) OVER w AS previous_at,
                     lag(i.id) OVER w IS NULL AS last
              FROM identified i
              WINDOW w AS (PARTITION BY i.cust, i.anon ORDER BY i.occurred_at DESC, i.id DESC)
            ),
            steps AS (
              SELECT true AS converted, channel, lag(channel) OVER w AS previous, lead(channel) OVER w IS NULL AS last
              FROM converting WINDOW w AS (PARTITION BY path ORDER BY occurred_at, id)
              UNION ALL
              -- Non-converting paths: the touches of the newest 30 days of an identity without an
              -- eligible conversion; a touch whose predecessor is older starts the path.
              SELECT false, m.channel,
                     CASE WHEN m.previous_at >= m.last_at - make_interval(days => ${DEFAULT_LOOKBACK_WINDOW_DAYS}) THEN m.previous END,
                     m.last
              FROM marked m
              -- A hash anti-join: an EXISTS under NOT (... AND ...) stays a subplan per row, which
              -- scans every conversion for every step (quadratic on a profile with many conversions).
              LEFT JOIN converted_customers cc ON m.anon = '' AND cc.customer_id = m.cust
              WHERE m.occurred_at >= m.last_at - make_interval(days => ${DEFAULT_LOOKBACK_WINDOW_DAYS})
                AND cc.customer_id IS NULL
            )
            SELECT converted, previous, channel, last, count(*)::int AS n FROM steps
            WHERE previous IS NULL OR previous <> channel OR last
            GROUP BY converted, previous, channel, last`)))

      return {
        ...atDatabaseBoundary({
          lockPending,
          pending,
          anyPending,
          replayParts,
          lockReplayTargets,
          lockCrediting,
          tuneTransaction,
          countConversions,
          candidateTouches,
          pathSteps
        }),
        // Generic, so outside `atDatabaseBoundary`'s mapped type; the same mapping for BEGIN and COMMIT.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
