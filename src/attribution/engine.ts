/**
 * The crediting engine: the SQL around the pure credit models (src/attribution/models). It
 * loads conversions with their definition's window and eligibility, the touches of the
 * converting customer, writes one credit row per model and path touch, and builds a profile's
 * `svc_model` path statistics. Every statement here runs inside the worker's transactions and
 * fails with `SqlError`; the worker decides what a failure means. Decisions 0030 and 0035
 * (replay performance: rows written as a difference, statistics aggregated in SQL).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CandidateTouch, candidateTouches } from "./candidate-touches.ts"
import type { SqlError } from "effect/sql/SqlError"
import { creditAll, type PathStats, type TouchInput } from "./models/index.ts"
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
  /** (occurred_at, id) key of the conversion, for a replay's batches. */
  occurred_at: Schema.String
})
export type CreditTarget = typeof CreditTarget.Type

/** One group of path steps (`pathStats`): how many touches of `channel` follow `previous` (null: first of a path). */
const StepRow = Schema.Struct({
  converted: Schema.Boolean,
  previous: Schema.NullOr(Schema.String),
  channel: Schema.String,
  /** The step is the last of its path. */
  last: Schema.Boolean,
  n: Schema.Int
})
type StepRow = typeof StepRow.Type
const CountRow = Schema.Struct({ n: Schema.Int })

export interface ReplayKeyset {
  readonly occurredAt: string
  readonly id: string
}

/** Rows of each kind (deleted, updated, inserted) per write statement (array parameters whatever the count). */
const WRITE_CHUNK = 20_000

type Sql<A> = Effect.Effect<A, SqlError | Schema.SchemaError>

/** Credit rows column by column, as the write statement takes them. */
interface Columns {
  readonly conversion: Array<string>
  readonly model: Array<string>
  readonly touch: Array<string>
  readonly position: Array<number>
  readonly share: Array<string>
  readonly credited: Array<boolean>
  readonly inWindow: Array<boolean>
}

const emptyColumns = (): Columns => ({ conversion: [], model: [], touch: [], position: [], share: [], credited: [], inWindow: [] })

const sliceColumns = (columns: Columns, start: number, end: number): Columns => ({
  conversion: columns.conversion.slice(start, end),
  model: columns.model.slice(start, end),
  touch: columns.touch.slice(start, end),
  position: columns.position.slice(start, end),
  share: columns.share.slice(start, end),
  credited: columns.credited.slice(start, end),
  inWindow: columns.inWindow.slice(start, end)
})

/** Stored rows to update in place: their `ctid` and new values. */
interface Changed {
  readonly ctid: Array<string>
  readonly position: Array<number>
  readonly share: Array<string>
  readonly credited: Array<boolean>
  readonly inWindow: Array<boolean>
}

const sliceChanged = (changed: Changed, start: number, end: number): Changed => ({
  ctid: changed.ctid.slice(start, end),
  position: changed.position.slice(start, end),
  share: changed.share.slice(start, end),
  credited: changed.credited.slice(start, end),
  inWindow: changed.inWindow.slice(start, end)
})

/** The stored credit rows of some conversions, one array per column (`credit_share` as its 10-decimal text, `ctid` as text). */
const StoredRows = Schema.Struct({
  ctid: Schema.Array(Schema.String),
  conversion: Schema.Array(Schema.String),
  model: Schema.Array(Schema.String),
  touch: Schema.Array(Schema.String),
  position: Schema.Array(Schema.Int),
  share: Schema.Array(Schema.String),
  credited: Schema.Array(Schema.Boolean),
  in_window: Schema.Array(Schema.Boolean)
})

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * `PathStats` from grouped path steps: exactly what `buildPathStats` counts over the paths
 * themselves (a path per first step; start, transitions between different channels, and the
 * last channel of converting and non-converting paths; channels sorted by code units).
 */
export const statsFromSteps = (steps: ReadonlyArray<StepRow>): PathStats => {
  const names = new Set<string>()
  for (const step of steps) {
    names.add(step.channel)
    if (step.previous !== null) names.add(step.previous)
  }
  const channels = [...names].sort(byCodeUnits)
  const index = new Map(channels.map((channel, i) => [channel, i] as const))
  const k = channels.length
  const start = new Array<number>(k).fill(0)
  const conversions = new Array<number>(k).fill(0)
  const nulls = new Array<number>(k).fill(0)
  const transitions = Array.from({ length: k }, () => new Array<number>(k).fill(0))
  let convertingPaths = 0
  let totalPaths = 0
  for (const step of steps) {
    const to = index.get(step.channel) ?? 0
    if (step.previous === null) {
      start[to] = (start[to] ?? 0) + step.n
      totalPaths += step.n
      if (step.converted) convertingPaths += step.n
    } else if (step.previous !== step.channel) {
      const row = transitions[index.get(step.previous) ?? 0]
      if (row !== undefined) row[to] = (row[to] ?? 0) + step.n
    }
    if (step.last) {
      const counts = step.converted ? conversions : nulls
      counts[to] = (counts[to] ?? 0) + step.n
    }
  }
  return { converting_paths: convertingPaths, total_paths: totalPaths, channels, start, transitions, conversions, nulls }
}

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
  /**
   * How a replay splits the profile: the (occurred_at, id) key of every `size`-th conversion, in
   * that order. Batch i holds the conversions after key i-1 up to key i (included); the last, those
   * after the last key (so conversions added meanwhile are not missed).
   */
  readonly replayBounds: (profileId: string, size: number) => Sql<ReadonlyArray<ReplayKeyset>>
  /**
   * The first `limit` conversions of the profile after `after` up to `upTo` (included),
   * (occurred_at, id) order, locked (waiting for other holders).
   */
  readonly lockReplayRange: (
    profileId: string,
    after: Option.Option<ReplayKeyset>,
    upTo: Option.Option<ReplayKeyset>,
    limit: number
  ) => Sql<ReadonlyArray<CreditTarget>>
  /**
   * Session settings for the worker's transactions (`SET LOCAL`, so until the transaction ends):
   * no JIT compilation, whose cost (tens of ms per statement, 0.8 s for the statistics) exceeds
   * the statements' own on these short, index-driven queries.
   */
  readonly tuneTransaction: Sql<void>
  readonly countConversions: (profileId: string) => Sql<number>
  /**
   * Replaces the credit rows of `targets` (every model), refreshes their cash and eligibility
   * flags from their definitions and sets `credited_at`. Answers how many credit rows they have now.
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
      const stepRows = decodeRows(StepRow)
      const decodeStored = Schema.decodeUnknownEffect(StoredRows)
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

      const keysetRows = decodeRows(Schema.Struct({ occurred_at: Schema.String, id: Schema.String }))
      const replayBounds = (profileId: string, size: number) =>
        Effect.map(
          keysetRows(sql`
            SELECT x.occurred_at, x.id FROM (
              SELECT ${isoTimestamp(sql, "c.occurred_at")} AS occurred_at, c.id::text AS id,
                     row_number() OVER (ORDER BY c.occurred_at, c.id) AS n
              FROM conversions c WHERE c.profile_id = ${profileId}
            ) x
            WHERE x.n % ${Math.max(1, Math.floor(size))} = 0
            ORDER BY x.n`),
          (rows) => rows.map((row): ReplayKeyset => ({ occurredAt: row.occurred_at, id: row.id }))
        )

      const lockReplayRange = (
        profileId: string,
        after: Option.Option<ReplayKeyset>,
        upTo: Option.Option<ReplayKeyset>,
        limit: number
      ) =>
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
            ${
          Option.match(upTo, {
            onNone: () => sql``,
            onSome: (keyset) => sql`AND (c.occurred_at, c.id) <= (${keyset.occurredAt}::timestamptz, ${keyset.id}::uuid)`
          })
        }
          ORDER BY c.occurred_at, c.id
          LIMIT ${limit}
          FOR UPDATE OF c`)

      const tuneTransaction = Effect.asVoid(sql`SELECT set_config('jit', 'off', true)`)

      const countConversions = (profileId: string) =>
        Effect.map(countRows(sql`SELECT count(*)::int AS n FROM conversions WHERE profile_id = ${profileId}`), (rows) => rows[0]?.n ?? 0)

      const touchesOf = (targets: ReadonlyArray<CreditTarget>) => touchRows(candidateTouches(sql, targets))

      /**
       * The stored credit rows of `ids`, each with its `ctid` so that the write can address it
       * without a join. One index scan per conversion (the `OFFSET 0` keeps the planner from
       * turning it into a join whose plan would follow the table's statistics). The rows are
       * turned into columns and decoded column-wise (decision 0035).
       */
      const storedOf = (ids: ReadonlyArray<string>) =>
        Effect.flatMap(
          sql<Record<string, unknown>>`
            SELECT a.ctid::text AS ctid, a.conversion_id::text AS conversion, a.model, a.touch_id::text AS touch, a.position,
                   a.credit_share::text AS share, a.is_credited AS credited, a.in_window
            FROM unnest(${ids}::uuid[]) AS x(id)
            CROSS JOIN LATERAL (
              SELECT a.ctid, a.conversion_id, a.model, a.touch_id, a.position, a.credit_share, a.is_credited, a.in_window
              FROM attribution_credits a WHERE a.conversion_id = x.id OFFSET 0
            ) a`,
          (rows) => {
            const columns: Record<keyof typeof StoredRows.fields, Array<unknown>> = {
              ctid: [],
              conversion: [],
              model: [],
              touch: [],
              position: [],
              share: [],
              credited: [],
              in_window: []
            }
            for (const row of rows) {
              columns.ctid.push(row["ctid"])
              columns.conversion.push(row["conversion"])
              columns.model.push(row["model"])
              columns.touch.push(row["touch"])
              columns.position.push(row["position"])
              columns.share.push(row["share"])
              columns.credited.push(row["credited"])
              columns.in_window.push(row["in_window"])
            }
            return decodeStored(columns)
          }
        )

      /**
       * One write statement: deletes and updates by `ctid` (rows read in this transaction, whose
       * conversions it holds locked), inserts the new rows. An update keeps the row's key, so it
       * does not re-check the foreign keys; an insert does.
       */
      const writeChanges = (gone: ReadonlyArray<string>, changed: Changed, added: Columns) =>
        sql`
          WITH gone AS (
            DELETE FROM attribution_credits WHERE ctid = ANY(${gone}::tid[])
          ),
          changed AS (
            UPDATE attribution_credits a
            SET position = u.position, credit_share = u.credit_share, is_credited = u.is_credited, in_window = u.in_window
            FROM unnest(${changed.ctid}::tid[], ${changed.position}::int[], ${changed.share}::numeric[],
                        ${changed.credited}::boolean[], ${changed.inWindow}::boolean[])
              AS u(ctid, position, credit_share, is_credited, in_window)
            WHERE a.ctid = u.ctid
          )
          INSERT INTO attribution_credits (conversion_id, model, touch_id, position, credit_share, is_credited, in_window)
          SELECT * FROM unnest(
            ${added.conversion}::uuid[], ${added.model}::text[], ${added.touch}::uuid[], ${added.position}::int[],
            ${added.share}::numeric[], ${added.credited}::boolean[], ${added.inWindow}::boolean[])`

      /**
       * Credits `targets` and writes the result as a difference against the stored rows (decision
       * 0035): rows no longer produced are deleted, changed rows updated in place, new rows
       * inserted, unchanged rows left alone. The stored rows end up exactly `creditAll`'s rows.
       * Answers how many rows the conversions have now.
       */
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
          const stored = yield* storedOf(ids)
          const storedAt = new Map<string, number>()
          for (let i = 0; i < stored.ctid.length; i++) storedAt.set(`${stored.conversion[i]}|${stored.model[i]}|${stored.touch[i]}`, i)
          const kept = new Uint8Array(stored.ctid.length)
          const added = emptyColumns()
          const changed: Changed = { ctid: [], position: [], share: [], credited: [], inWindow: [] }
          let rows = 0
          for (const target of creditable) {
            const results = creditAll(
              { occurred_at: target.occurred_ms, lookback_window_days: target.window_days },
              byConversion.get(target.id) ?? [],
              statsOf(target.profile_id)
            )
            for (const result of results) {
              for (const row of result.rows) {
                rows++
                const at = storedAt.get(`${target.id}|${result.model}|${row.touch_id}`)
                if (at === undefined) {
                  added.conversion.push(target.id)
                  added.model.push(result.model)
                  added.touch.push(row.touch_id)
                  added.position.push(row.position)
                  added.share.push(row.credit_share)
                  added.credited.push(row.is_credited)
                  added.inWindow.push(row.in_window)
                  continue
                }
                kept[at] = 1
                if (
                  stored.position[at] !== row.position || stored.share[at] !== row.credit_share ||
                  stored.credited[at] !== row.is_credited || stored.in_window[at] !== row.in_window
                ) {
                  changed.ctid.push(stored.ctid[at] ?? "")
                  changed.position.push(row.position)
                  changed.share.push(row.credit_share)
                  changed.credited.push(row.is_credited)
                  changed.inWindow.push(row.in_window)
                }
              }
            }
          }
          const gone = stored.ctid.filter((_, i) => kept[i] === 0)
          // Bounded statements: at most WRITE_CHUNK rows of each kind per statement.
          for (let start = 0; start < Math.max(gone.length, changed.ctid.length, added.conversion.length); start += WRITE_CHUNK) {
            const end = start + WRITE_CHUNK
            yield* writeChanges(gone.slice(start, end), sliceChanged(changed, start, end), sliceColumns(added, start, end))
          }
          // `credited_at` keeps its first value (only whether it is set has a meaning); rows whose
          // flags and mark are already right are not rewritten.
          yield* sql`
            UPDATE conversions c SET
              credited_at = COALESCE(c.credited_at, now()),
              counts_as_cash = x.counts_as_cash,
              attribution_eligible = x.attribution_eligible
            FROM (
              SELECT c2.id, COALESCE(d.counts_as_cash, c2.counts_as_cash) AS counts_as_cash,
                     COALESCE(d.attribution_eligible, c2.attribution_eligible) AS attribution_eligible
              FROM conversions c2 LEFT JOIN conversion_definitions d ON d.id = c2.definition_id
              WHERE c2.id = ANY(${ids}::uuid[])
            ) x
            WHERE c.id = x.id
              AND (c.credited_at IS NULL OR c.counts_as_cash <> x.counts_as_cash OR c.attribution_eligible <> x.attribution_eligible)`
          return rows
        })

      /**
       * The profile's `svc_model` statistics, counted in SQL (decision 0035): the same counts
       * `buildPathStats` makes from the channel paths of decision 0030, without shipping the paths.
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
      const pathStats = (profileId: string) =>
        Effect.map(
          // JIT compilation of this large plan costs more than it saves (about 0.8 s at 1M touches).
          sql.withTransaction(Effect.andThen(tuneTransaction, stepRows(sql`
            WITH conv AS MATERIALIZED (
              SELECT c.id, c.customer_id, c.occurred_at, COALESCE(d.lookback_window_days, ${DEFAULT_LOOKBACK_WINDOW_DAYS}) AS days
              FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
              WHERE c.profile_id = ${profileId} AND c.customer_id IS NOT NULL
                AND COALESCE(d.attribution_eligible, c.attribution_eligible)
            ),
            converted_customers AS (SELECT DISTINCT customer_id FROM conv),
            converting AS (
              SELECT conv.id AS path, t.occurred_at, t.id, t.channel
              FROM conv CROSS JOIN LATERAL (
                SELECT t.id, t.occurred_at, t.channel FROM touches t
                WHERE t.customer_id = conv.customer_id AND t.profile_id = ${profileId} AND t.kind <> 'outcome'
                  AND t.occurred_at >= conv.occurred_at - make_interval(days => conv.days) AND t.occurred_at <= conv.occurred_at
                UNION
                SELECT t.id, t.occurred_at, t.channel FROM customer_identifiers ci
                JOIN touches t ON t.profile_id = ci.profile_id AND t.anonymous_id = ci.value
                WHERE ci.customer_id = conv.customer_id AND ci.profile_id = ${profileId} AND ci.kind = 'anonymous_id'
                  AND ci.removed_at IS NULL AND t.kind <> 'outcome'
                  AND t.occurred_at >= conv.occurred_at - make_interval(days => conv.days) AND t.occurred_at <= conv.occurred_at
              ) t
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
            GROUP BY converted, previous, channel, last`))),
          statsFromSteps
        )

      return {
        lockPending,
        pendingIds,
        markWithoutCredit,
        anyPending,
        replayBounds,
        lockReplayRange,
        tuneTransaction,
        countConversions,
        credit,
        pathStats
      }
    })
  )
}
