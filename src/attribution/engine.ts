/**
 * The crediting engine: the SQL around the pure credit models (src/attribution/models). It
 * loads conversions with their definition's window and eligibility, the touches of the
 * converting customer, writes one credit row per model and path touch, and builds a profile's
 * `svc_model` path statistics. Every statement here runs inside the worker's transactions and
 * fails with `SqlError`; the worker decides what a failure means. Decision 0030.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CandidateTouch, candidateTouches } from "./candidate-touches.ts"
import type { SqlError } from "effect/sql/SqlError"
import { buildPathStats, creditAll, type PathStats, type TouchInput } from "./models/index.ts"
import { DEFAULT_LOOKBACK_WINDOW_DAYS } from "../../schema/attribution.ts"
import { decodeRows } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"

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
  /** (occurred_at, id) keyset of a replay batch. */
  occurred_at: Schema.String
})
export type CreditTarget = typeof CreditTarget.Type

const PathRow = Schema.Struct({ converted: Schema.Boolean, channels: Schema.Array(Schema.String) })
const CountRow = Schema.Struct({ n: Schema.Int })

export interface ReplayKeyset {
  readonly occurredAt: string
  readonly id: string
}

/** Credit rows written per INSERT (7 array parameters whatever the count). */
const INSERT_CHUNK = 5000

type Sql<A> = Effect.Effect<A, SqlError | Schema.SchemaError>

export class CreditEngine extends Context.Service<CreditEngine, {
  /**
   * Locks up to `limit` conversions not yet credited (oldest first), skipping rows another runner
   * holds; with `onlyId`, that conversion if it still waits.
   */
  readonly lockPending: (limit: number, onlyId?: string) => Sql<ReadonlyArray<CreditTarget>>
  /** The ids of up to `limit` conversions waiting for credit, oldest first (no lock). */
  readonly pendingIds: (limit: number) => Sql<ReadonlyArray<string>>
  /** Marks a conversion credited with no rows (one whose crediting fails; a replay tries it again). */
  readonly markWithoutCredit: (conversionId: string) => Sql<void>
  /** Whether any conversion waits for credit (cheap: the partial index on `credited_at IS NULL`). */
  readonly anyPending: Sql<boolean>
  /** The next `limit` conversions of the profile after `after`, (occurred_at, id) order, locked (waiting for other holders). */
  readonly lockReplayBatch: (
    profileId: string,
    after: Option.Option<ReplayKeyset>,
    limit: number
  ) => Sql<ReadonlyArray<CreditTarget>>
  readonly countConversions: (profileId: string) => Sql<number>
  /**
   * Replaces the credit rows of `targets` (every model), refreshes their cash and eligibility
   * flags from their definitions and sets `credited_at`. Answers how many rows were written.
   */
  readonly credit: (
    targets: ReadonlyArray<CreditTarget>,
    statsOf: (profileId: string) => PathStats | undefined
  ) => Sql<number>
  /** The profile's `svc_model` statistics from its converting and non-converting channel paths. */
  readonly pathStats: (profileId: string) => Sql<PathStats>
}>()("svc/CreditEngine") {
  static readonly layer = Layer.effect(CreditEngine)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const targetRows = decodeRows(CreditTarget)
      const touchRows = decodeRows(CandidateTouch)
      const pathRows = decodeRows(PathRow)
      const countRows = decodeRows(CountRow)

      const targetColumns = sql`c.id::text AS id, c.profile_id::text AS profile_id, c.customer_id::text AS customer_id,
        floor(extract(epoch FROM c.occurred_at) * 1000)::float8 AS occurred_ms,
        COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS window_days,
        COALESCE(d.attribution_eligible, c.attribution_eligible) AS eligible,
        ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at`

      const lockPending = (limit: number, onlyId?: string) =>
        targetRows(sql`
          SELECT ${targetColumns}
          FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
          WHERE c.credited_at IS NULL ${onlyId === undefined ? sql`` : sql`AND c.id = ${onlyId}`}
          ORDER BY c.created_at, c.id
          LIMIT ${limit}
          FOR UPDATE OF c SKIP LOCKED`)

      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const pendingIds = (limit: number) =>
        Effect.map(
          idRows(sql`SELECT id::text AS id FROM conversions WHERE credited_at IS NULL ORDER BY created_at, id LIMIT ${limit}`),
          (rows) => rows.map((row) => row.id)
        )

      const markWithoutCredit = (conversionId: string) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM attribution_credits WHERE conversion_id = ${conversionId}`
          yield* sql`UPDATE conversions SET credited_at = now() WHERE id = ${conversionId} AND credited_at IS NULL`
        })

      const anyPending = Effect.map(
        sql`SELECT 1 AS one FROM conversions WHERE credited_at IS NULL LIMIT 1`,
        (rows) => rows.length > 0
      )

      const lockReplayBatch = (profileId: string, after: Option.Option<ReplayKeyset>, limit: number) =>
        targetRows(sql`
          SELECT ${targetColumns}
          FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
          WHERE c.profile_id = ${profileId}
            ${
          Option.match(after, {
            onNone: () => sql``,
            onSome: (keyset) => sql`AND (c.occurred_at, c.id) > (${keyset.occurredAt}::timestamptz, ${keyset.id}::uuid)`
          })
        }
          ORDER BY c.occurred_at, c.id
          LIMIT ${limit}
          FOR UPDATE OF c`)

      const countConversions = (profileId: string) =>
        Effect.map(countRows(sql`SELECT count(*)::int AS n FROM conversions WHERE profile_id = ${profileId}`), (rows) => rows[0]?.n ?? 0)

      const touchesOf = (targets: ReadonlyArray<CreditTarget>) => touchRows(candidateTouches(sql, targets))

      const credit = (targets: ReadonlyArray<CreditTarget>, statsOf: (profileId: string) => PathStats | undefined) =>
        Effect.gen(function*() {
          if (targets.length === 0) return 0
          const ids = targets.map((target) => target.id)
          const creditable = targets.filter((target) => target.eligible && target.customer_id !== null)
          const touches = creditable.length === 0 ? [] : yield* touchesOf(creditable)
          const byConversion = new Map<string, Array<TouchInput>>()
          for (const touch of touches) {
            let list = byConversion.get(touch.conversion_id)
            if (list === undefined) byConversion.set(touch.conversion_id, list = [])
            list.push({ id: touch.id, occurred_at: touch.occurred_ms, kind: touch.kind, channel: touch.channel })
          }
          const columns = {
            conversion: [] as Array<string>,
            model: [] as Array<string>,
            touch: [] as Array<string>,
            position: [] as Array<number>,
            share: [] as Array<string>,
            credited: [] as Array<boolean>,
            inWindow: [] as Array<boolean>
          }
          for (const target of creditable) {
            const results = creditAll(
              { occurred_at: target.occurred_ms, lookback_window_days: target.window_days },
              byConversion.get(target.id) ?? [],
              statsOf(target.profile_id)
            )
            for (const result of results) {
              for (const row of result.rows) {
                columns.conversion.push(target.id)
                columns.model.push(result.model)
                columns.touch.push(row.touch_id)
                columns.position.push(row.position)
                columns.share.push(row.credit_share)
                columns.credited.push(row.is_credited)
                columns.inWindow.push(row.in_window)
              }
            }
          }
          yield* sql`DELETE FROM attribution_credits WHERE conversion_id = ANY(${ids}::uuid[])`
          for (let start = 0; start < columns.conversion.length; start += INSERT_CHUNK) {
            const end = start + INSERT_CHUNK
            yield* sql`
              INSERT INTO attribution_credits (conversion_id, model, touch_id, position, credit_share, is_credited, in_window)
              SELECT * FROM unnest(
                ${columns.conversion.slice(start, end)}::uuid[], ${columns.model.slice(start, end)}::text[],
                ${columns.touch.slice(start, end)}::uuid[], ${columns.position.slice(start, end)}::int[],
                ${columns.share.slice(start, end)}::numeric[], ${columns.credited.slice(start, end)}::boolean[],
                ${columns.inWindow.slice(start, end)}::boolean[])`
          }
          yield* sql`
            UPDATE conversions c SET
              credited_at = now(),
              counts_as_cash = COALESCE((SELECT d.counts_as_cash FROM conversion_definitions d WHERE d.id = c.definition_id), c.counts_as_cash),
              attribution_eligible = COALESCE(
                (SELECT d.attribution_eligible FROM conversion_definitions d WHERE d.id = c.definition_id), c.attribution_eligible)
            WHERE c.id = ANY(${ids}::uuid[])`
          return columns.conversion.length
        })

      /**
       * Channel paths of the profile (decision 0030). Identities: a customer (its touches and those
       * of the anonymous ids bound to it), or an anonymous id bound to no customer. Converting
       * paths: one per attribution-eligible conversion, the channels of its customer's touches in
       * its window. Non-converting paths: one per identity with no such conversion, its touches in
       * the 30 days before its last touch. `outcome` touches are never on a path.
       */
      const pathStats = (profileId: string) =>
        Effect.map(
          pathRows(sql`
            WITH bound AS (
              SELECT DISTINCT ci.value AS anonymous_id, ci.customer_id
              FROM customer_identifiers ci
              WHERE ci.profile_id = ${profileId} AND ci.kind = 'anonymous_id' AND ci.removed_at IS NULL
            ),
            ct AS (
              SELECT t.id, t.occurred_at, t.channel, t.customer_id::text AS identity FROM touches t
              WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome' AND t.customer_id IS NOT NULL
              UNION
              SELECT t.id, t.occurred_at, t.channel, b.customer_id::text FROM touches t
              JOIN bound b ON b.anonymous_id = t.anonymous_id
              WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome'
              UNION
              SELECT t.id, t.occurred_at, t.channel, 'anonymous:' || t.anonymous_id FROM touches t
              WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome' AND t.customer_id IS NULL AND t.anonymous_id IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM bound b WHERE b.anonymous_id = t.anonymous_id)
            ),
            conv AS (
              SELECT c.id, c.customer_id::text AS identity, c.occurred_at,
                     COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS days
              FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
              WHERE c.profile_id = ${profileId} AND c.customer_id IS NOT NULL
                AND COALESCE(d.attribution_eligible, c.attribution_eligible)
            ),
            last_touch AS (SELECT identity, max(occurred_at) AS last_at FROM ct GROUP BY identity)
            SELECT true AS converted, array_agg(ct.channel ORDER BY ct.occurred_at, ct.id) AS channels
            FROM conv JOIN ct ON ct.identity = conv.identity
              AND ct.occurred_at <= conv.occurred_at AND ct.occurred_at >= conv.occurred_at - make_interval(days => conv.days)
            GROUP BY conv.id
            UNION ALL
            SELECT false AS converted, array_agg(ct.channel ORDER BY ct.occurred_at, ct.id) AS channels
            FROM ct JOIN last_touch l ON l.identity = ct.identity
            WHERE ct.occurred_at >= l.last_at - make_interval(days => ${DEFAULT_LOOKBACK_WINDOW_DAYS})
              AND NOT EXISTS (SELECT 1 FROM conv WHERE conv.identity = ct.identity)
            GROUP BY ct.identity`),
          (paths) => buildPathStats(paths)
        )

      return { lockPending, pendingIds, markWithoutCredit, anyPending, lockReplayBatch, countConversions, credit, pathStats }
    })
  )
}
